"""Seeded splits with exact ratios, and group zero-shot splits (any benchmark).

Exact ratios: items are ranked by priority(seed, key) (transforms.core.sampling); with n items,
part j takes the ranks from floor(n * c_{j-1}) to floor(n * c_j), c_j the cumulative
ratio (10,972 items at 70/10/20 give 7,680 / 1,097 / 2,195). The ranking needs no global sort: priorities are counted in 2^16 buckets (a
fixed-size combiner); a bucket that lies inside one part sends its items straight there,
and only the few buckets that straddle a cut are grouped and ranked exactly. The result
depends only on the seed and the keys, never on arrival order or the runner.

Group zero-shot: the groups (e.g. concepts) are split with exact ratios; an item goes to
a part only when all its groups are in that part, otherwise it is dropped (the caller
counts it).
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Dict, Iterable, List, Sequence, Tuple

import apache_beam as beam
import numpy as np

from transforms.core.sampling import priority

BUCKET_BITS = 16
N_BUCKETS = 1 << BUCKET_BITS


def cut_points(n: int, ratios: Sequence[float]) -> List[int]:
    """Rank boundaries: part j holds ranks [cuts[j], cuts[j+1]); cuts[-1] == n."""
    total = Fraction(0)
    whole = sum(Fraction(r).limit_denominator(10 ** 6) for r in ratios)
    cuts = [0]
    for r in ratios[:-1]:
        total += Fraction(r).limit_denominator(10 ** 6)
        cuts.append(math.floor(n * total / whole))
    cuts.append(n)
    return cuts


def split_ranked(keys: Iterable[str], seed: int, names: Sequence[str],
                 ratios: Sequence[float]) -> Dict[str, str]:
    """The same assignment computed in memory (for small sets such as concepts, and tests)."""
    ranked = sorted(set(keys), key=lambda k: (priority(seed, k), k))
    cuts = cut_points(len(ranked), ratios)
    return {key: names[_part(rank, cuts)] for rank, key in enumerate(ranked)}


def _part(rank: int, cuts: Sequence[int]) -> int:
    for j in range(len(cuts) - 1):
        if cuts[j] <= rank < cuts[j + 1]:
            return j
    raise ValueError(f"rank {rank} outside 0..{cuts[-1] - 1}")


def _bucket(p: int) -> int:
    return p >> (64 - BUCKET_BITS)


class _BucketCounts(beam.CombineFn):
    def create_accumulator(self):
        return np.zeros(N_BUCKETS, dtype=np.int64)

    def add_input(self, acc, p):
        acc[_bucket(p)] += 1
        return acc

    def merge_accumulators(self, accs):
        return sum(accs, self.create_accumulator())

    def extract_output(self, acc):
        return acc


class _Route(beam.DoFn):
    """(priority, key, item) -> "direct" (part, item) when its bucket lies inside one part,
    else "straddling" (bucket, (priority, key, item, first rank of the bucket)). The bucket
    starts and the cut points are computed once per side-input value (so once per bundle
    at most), not once per element."""

    def __init__(self, names: Sequence[str], ratios: Sequence[float]):
        self._names, self._ratios = tuple(names), tuple(ratios)
        self._for = None

    def process(self, t, counts):
        if self._for is not counts:     # a new side-input value: recompute, keep a reference
            self._for = counts
            self._starts = np.concatenate([[0], np.cumsum(counts)])
            self._cuts = cut_points(int(self._starts[-1]), self._ratios)
        p, key, item = t
        b = _bucket(p)
        lo, hi = int(self._starts[b]), int(self._starts[b + 1])     # ranks this bucket covers
        first, last = _part(lo, self._cuts), _part(hi - 1, self._cuts)
        if first == last:
            yield beam.pvalue.TaggedOutput("direct", (self._names[first], item))
        else:
            yield beam.pvalue.TaggedOutput("straddling", (b, (p, key, item, lo)))


class ExactRatioSplit(beam.PTransform):
    """(key, item) pairs -> (part name, item), parts in `names` with `ratios` of the items.

    Keys must be unique (the item's identity); the caller dedupes first."""

    def __init__(self, seed: int, names: Sequence[str], ratios: Sequence[float]):
        super().__init__()
        if len(names) != len(ratios) or not names:
            raise ValueError("one ratio per part name")
        self._seed, self._names, self._ratios = seed, tuple(names), tuple(ratios)

    def expand(self, keyed):
        seed, names, ratios = self._seed, self._names, self._ratios
        prioritised = keyed | "Priority" >> beam.Map(
            lambda kv: (priority(seed, kv[0]), kv[0], kv[1]))
        counts = (prioritised | "Priorities" >> beam.Map(lambda t: t[0])
                  | "Bucket counts" >> beam.CombineGlobally(_BucketCounts()))

        routed = prioritised | "Route by bucket" >> beam.ParDo(
            _Route(names, ratios), counts=beam.pvalue.AsSingleton(counts)).with_outputs(
                "direct", "straddling")

        def rank_bucket(kv, counts):
            _, members = kv
            members = sorted(members, key=lambda m: (m[0], m[1]))
            cuts = cut_points(int(np.sum(counts)), ratios)
            for offset, (_, _, item, lo) in enumerate(members):
                yield names[_part(lo + offset, cuts)], item

        ranked = (routed.straddling | "Group straddling buckets" >> beam.GroupByKey()
                  | "Rank inside bucket" >> beam.FlatMap(
                      rank_bucket, counts=beam.pvalue.AsSingleton(counts)))
        return (routed.direct, ranked) | "Parts" >> beam.Flatten()


class GroupZeroShotSplit(beam.PTransform):
    """items -> (part name or "", item): the groups of the items (`groups_of(item)`) are
    split with exact ratios; an item whose groups all share a part gets that part, any
    other gets "" (dropped from the zero-shot split; the caller counts and rejects it).

    Also returns the group -> part assignment (tag "groups") for the leakage check."""

    def __init__(self, seed: int, names: Sequence[str], ratios: Sequence[float],
                 groups_of: Callable[[object], Tuple[str, ...]]):
        super().__init__()
        self._seed, self._names, self._ratios = seed, tuple(names), tuple(ratios)
        self._groups_of = groups_of

    def expand(self, items):
        groups_of = self._groups_of
        assignment = (
            items
            | "Groups" >> beam.FlatMap(groups_of)
            | "Distinct groups" >> beam.Distinct()
            | "Key groups" >> beam.Map(lambda g: (g, g))
            | "Split groups" >> ExactRatioSplit(self._seed, self._names, self._ratios)
            | "Group to part" >> beam.Map(lambda kv: (kv[1], kv[0])))

        def assign(item, parts):
            found = {parts[g] for g in groups_of(item)}
            return (found.pop() if len(found) == 1 else ""), item

        assigned = items | "Assign" >> beam.Map(assign, parts=beam.pvalue.AsDict(assignment))
        return {"items": assigned, "groups": assignment}
