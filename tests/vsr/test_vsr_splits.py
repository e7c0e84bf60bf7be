"""Seeded exact-ratio splits and group zero-shot splits (transforms/core/splits.py)."""
import collections

import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that, equal_to

from tests.beam_testing import local_test_pipeline
from transforms.core import splits
from transforms.core.splits import ExactRatioSplit, GroupZeroShotSplit, cut_points, split_ranked


def test_cut_points_floor_the_cumulative_shares():
    # the paper's Table 2: 10,972 examples at 70/10/20 -> 7,680 / 1,097 / 2,195
    cuts = cut_points(10972, [0.7, 0.1, 0.2])
    assert [b - a for a, b in zip(cuts, cuts[1:])] == [7680, 1097, 2195]
    assert cut_points(0, [0.5, 0.5]) == [0, 0, 0]


def _run_split(keys, seed, ratios, monkeypatch=None, bits=None):
    if bits is not None:     # few buckets: most of them straddle a cut, so the exact path runs
        monkeypatch.setattr(splits, "BUCKET_BITS", bits)
        monkeypatch.setattr(splits, "N_BUCKETS", 1 << bits)
    expected = split_ranked(keys, seed, list(ratios), list(ratios.values()))
    with local_test_pipeline() as p:
        out = (p | beam.Create([(k, k) for k in keys])
               | ExactRatioSplit(seed, list(ratios), list(ratios.values()))
               | beam.MapTuple(lambda part, k: (k, part)))
        assert_that(out, equal_to(sorted(expected.items())))
    return expected


def test_exact_ratio_split_equals_ranking_everything(monkeypatch):
    keys = [f"item{i}" for i in range(1003)]
    ratios = {"train": 0.7, "dev": 0.1, "test": 0.2}
    expected = _run_split(keys, 3, ratios)
    assert collections.Counter(expected.values()) == {"train": 702, "dev": 100, "test": 201}
    _run_split(keys, 3, ratios, monkeypatch, bits=2)


def test_split_is_seeded_and_order_independent():
    keys = [f"k{i}" for i in range(200)]
    ratios = ([0.5, 0.2, 0.3])
    a = split_ranked(keys, 0, ["a", "b", "c"], ratios)
    assert a == split_ranked(list(reversed(keys)), 0, ["a", "b", "c"], ratios)
    assert a != split_ranked(keys, 1, ["a", "b", "c"], ratios)


def test_group_zero_shot_split_keeps_groups_apart():
    items = [(a, b) for a in "abcdefghij" for b in "abcdefghij" if a < b]
    with local_test_pipeline() as p:
        out = (p | beam.Create(items)
               | GroupZeroShotSplit(0, ["train", "dev", "test"], [0.5, 0.2, 0.3],
                                    groups_of=lambda item: item))
        groups = out["groups"] | "Groups" >> beam.combiners.ToDict()
        assigned = out["items"] | "Items" >> beam.combiners.ToList()

        def check(assigned, groups):
            assert collections.Counter(groups.values()) == {"train": 5, "dev": 2, "test": 3}
            for part, (a, b) in assigned:
                same = groups[a] == groups[b]
                assert part == (groups[a] if same else "")
            assert len(assigned) == len(items)
            return True
        assert_that(assigned | beam.Map(check, groups=beam.pvalue.AsSingleton(groups)),
                    equal_to([True]))


def test_route_computes_cut_points_once_per_side_input(monkeypatch):
    calls = []
    real = splits.cut_points
    monkeypatch.setattr(splits, "cut_points", lambda n, r: calls.append(n) or real(n, r))
    counts = np.zeros(splits.N_BUCKETS, dtype=np.int64)
    counts[0], counts[-1] = 3, 1
    route = splits._Route(["a", "b"], [0.5, 0.5])
    out = [list(route.process((p, f"k{p}", p), counts)) for p in (1, 2, 3, (1 << 64) - 1)]
    assert calls == [4] and all(len(o) == 1 for o in out)
    list(route.process((5, "k", 5), counts.copy()))       # a new side-input value: recomputed
    assert calls == [4, 4]
