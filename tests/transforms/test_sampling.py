import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.imagecode.records import FrameSet
from pipelines.imagecode.video.sampling import SampleSetsPerSource
from schemas import reasons
from tests.beam_testing import local_test_pipeline
from transforms.core.sampling import priority
from transforms.core.stage import MAIN, REJECTS


def frame_set(source, i):
    return FrameSet(set_name=f"{source}-videov{i}-shot0_0", source=source, video_id=f"v{i}",
                    split="train", shot_index=0, set_index=0, frame_indices=[0, 5],
                    image_paths=["a", "b"], brisque_scores=[1.0, 1.0], text_chars=[0, 0],
                    distance_min=0.5, distance_mean=0.5, distance_max=0.5)


SETS = [frame_set("youcook", i) for i in range(7)] + [frame_set("msr-vtt", i) for i in range(20)]


def expected_sample(seed, source, k):
    names = [s.set_name for s in SETS if s.source == source]
    return sorted(names, key=lambda n: priority(seed, n))[:k]


def run_sampling(seed, quotas, default, **options):
    with local_test_pipeline(**options) as p:
        result = p | beam.Create(SETS) | SampleSetsPerSource(seed, quotas, default)
        kept = result[MAIN] | beam.Map(lambda s: s.set_name)
        rejected = result[REJECTS] | beam.Filter(lambda r: r.level == "set") | beam.Map(lambda r: r.item_id)
        frames = (result[REJECTS] | beam.Filter(lambda r: r.level == "frame")
                  | beam.Map(lambda r: r.reason))
        yield_ = expected_sample(seed, "msr-vtt", 5) + [s.set_name for s in SETS if s.source == "youcook"]
        assert_that(kept, equal_to(yield_), label="kept")
        dropped = sorted(set(s.set_name for s in SETS) - set(yield_))
        assert_that(rejected, equal_to(dropped), label="dropped")
        assert_that(frames, equal_to([reasons.NOT_SAMPLED] * 2 * len(dropped)), label="frames")


def test_quota_per_source_and_all_for_unlisted_sources():
    run_sampling(seed=3, quotas={"msr-vtt": 5}, default=None)


@pytest.mark.slow
def test_same_sample_on_the_multi_process_runner():
    run_sampling(seed=3, quotas={"msr-vtt": 5}, default=None,
                 direct_running_mode="multi_processing", direct_num_workers=2)


def test_priority_is_seeded_and_stable():
    assert priority(1, "a") == priority(1, "a")
    assert priority(1, "a") != priority(2, "a")
    assert expected_sample(1, "msr-vtt", 5) != expected_sample(2, "msr-vtt", 5)


def test_zero_quota_keeps_nothing_of_that_source():
    with local_test_pipeline() as p:
        result = p | beam.Create(SETS) | SampleSetsPerSource(0, {"msr-vtt": 0}, None)
        assert_that(result[MAIN] | beam.Map(lambda s: s.source), equal_to(["youcook"] * 7))
