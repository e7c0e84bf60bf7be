"""Within-set distance statistics (ImageCoDe §4.3): direction of the 1.13 ratio, Beam."""
import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.imagecode.set_stats import (SetDistanceStatsFn, WithinSetDistanceStats, kind_of,
                                           mean_pairwise_distance, set_distance_stats)
from tests.beam_testing import local_test_pipeline


def test_mean_pairwise_distance_of_a_set():
    # Corners of a 3-4-5 right triangle: distances 3, 4 and 5.
    points = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    assert mean_pairwise_distance(points) == pytest.approx(4.0)


def test_sources_split_into_static_and_video():
    assert kind_of("open-images") == "static"
    assert kind_of("msr-vtt") == "video"
    assert kind_of("my-photos", static_sources=["my-photos"]) == "static"


def test_ratio_is_static_over_video_so_tighter_video_sets_give_more_than_one():
    pairs = [("open-images", 1.13), ("open-images", 1.13),
             ("msr-vtt", 0.9), ("say-cant", 1.1)]
    stats = set_distance_stats(pairs)
    assert stats["by_kind"]["video"] == {"sets": 2, "mean_distance": pytest.approx(1.0)}
    assert stats["by_kind"]["static"]["mean_distance"] == pytest.approx(1.13)
    assert stats["static_over_video"] == pytest.approx(1.13)
    assert stats["by_source"]["msr-vtt"] == {"sets": 1, "mean_distance": pytest.approx(0.9)}


def test_ratio_needs_both_kinds():
    assert set_distance_stats([("msr-vtt", 1.0)])["static_over_video"] is None
    assert set_distance_stats([])["static_over_video"] is None


def test_merging_partial_accumulators_equals_one_pass():
    pairs = [("open-images", 1.2), ("msr-vtt", 0.8), ("open-images", 1.0), ("msr-vtt", 1.0)]
    fn = SetDistanceStatsFn()
    parts = [fn.create_accumulator(), fn.create_accumulator()]
    for i, pair in enumerate(pairs):
        parts[i % 2] = fn.add_input(parts[i % 2], pair)
    assert fn.extract_output(fn.merge_accumulators(parts)) == set_distance_stats(pairs)


def test_beam_transform_matches_the_pure_function():
    pairs = [("open-images", 1.2), ("msr-vtt", 0.8), ("open-images", 1.0), ("yt", 1.0)]
    with local_test_pipeline() as p:
        out = p | beam.Create(pairs) | WithinSetDistanceStats()
        assert_that(out, equal_to([set_distance_stats(pairs)]))
