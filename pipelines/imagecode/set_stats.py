"""Within-set distance statistics (ImageCoDe §4.3, "Vision Statistics").

The paper averages the pairwise Euclidean distance between the CLIP encodings of the
images of each set and finds "video frames are more similar than static pictures – as
expected – by a factor of 1.13". More similar = closer, so the factor is

    static_over_video = mean distance of static sets / mean distance of video sets  (~1.13)

which is > 1 when video sets are tighter. A set's distance is the mean over its image
pairs; a kind's (or source's) distance is the mean over its sets. ImageCoDe sets all have
10 images, so this equals the mean over all pairs.

Sources: every source named in `static_sources` (default: "open-images", the static
pictures of §3.1) is static; every other source is a video source.
"""
from __future__ import annotations

from typing import Dict, Iterable, Sequence, Tuple

import apache_beam as beam
import numpy as np

from transforms.core.precision import mean_of_units, rounded, rounded_mean, units
from transforms.vectors.distances import pairwise_distances

STATIC_SOURCES = ("open-images",)
STATIC, VIDEO = "static", "video"


def mean_pairwise_distance(embeddings: np.ndarray) -> float:
    """Mean Euclidean distance over the distinct pairs of one set's encodings (rounded,
    as the release publishes it: transforms/core/precision.py)."""
    return rounded_mean(pairwise_distances(embeddings))


def kind_of(source: str, static_sources: Sequence[str] = STATIC_SOURCES) -> str:
    return STATIC if source in static_sources else VIDEO


class SetDistanceStatsFn(beam.CombineFn):
    """(source, per-set mean distance) -> per-source and per-kind means and the ratio.

    One global combine rather than CombinePerKey: the ratio needs both kinds, and the
    accumulator ({source: [sum, sets]}) is bounded by the number of sources.
    """

    def __init__(self, static_sources: Sequence[str] = STATIC_SOURCES):
        self.static_sources = tuple(static_sources)

    def create_accumulator(self) -> Dict[str, list]:
        return {}

    def add_input(self, sums, element: Tuple[str, float]):
        source, distance = element
        entry = sums.setdefault(source, [0, 0])
        entry[0] += units(distance)      # exact: the same total in any order of bundles
        entry[1] += 1
        return sums

    def merge_accumulators(self, accumulators):
        merged: Dict[str, list] = {}
        for sums in accumulators:
            for source, (total, sets) in sums.items():
                entry = merged.setdefault(source, [0, 0])
                entry[0] += total
                entry[1] += sets
        return merged

    def extract_output(self, sums) -> dict:
        by_kind: Dict[str, list] = {}
        for source, (total, sets) in sums.items():
            entry = by_kind.setdefault(kind_of(source, self.static_sources), [0, 0])
            entry[0] += total
            entry[1] += sets
        means = {kind: mean_of_units(total, sets) for kind, (total, sets) in by_kind.items()}
        ratio = (rounded(means[STATIC] / means[VIDEO])
                 if STATIC in means and VIDEO in means and means[VIDEO] > 0 else None)
        return {
            "by_source": {source: {"sets": sets, "mean_distance": mean_of_units(total, sets)}
                          for source, (total, sets) in sorted(sums.items())},
            "by_kind": {kind: {"sets": by_kind[kind][1], "mean_distance": means[kind]}
                        for kind in sorted(by_kind)},
            # None when either kind is missing: a ratio of one kind alone means nothing.
            "static_over_video": ratio,
        }


def set_distance_stats(pairs: Iterable[Tuple[str, float]],
                       static_sources: Sequence[str] = STATIC_SOURCES) -> dict:
    """Pure-Python twin of WithinSetDistanceStats (same CombineFn, one process)."""
    fn = SetDistanceStatsFn(static_sources)
    sums = fn.create_accumulator()
    for pair in pairs:
        sums = fn.add_input(sums, pair)
    return fn.extract_output(sums)


class WithinSetDistanceStats(beam.PTransform):
    """(source, per-set mean distance) pairs -> one summary dict (see SetDistanceStatsFn).

    FrameSet records carry `distance_mean`; map them with ``lambda s: (s.source,
    s.distance_mean)``. Static sets built elsewhere can use mean_pairwise_distance.
    """

    def __init__(self, static_sources: Sequence[str] = STATIC_SOURCES):
        super().__init__()
        self.static_sources = tuple(static_sources)

    def expand(self, pairs):
        return pairs | "SetDistanceStats" >> beam.CombineGlobally(
            SetDistanceStatsFn(self.static_sources))
