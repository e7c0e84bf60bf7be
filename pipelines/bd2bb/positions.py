"""BD2BB target positions, balanced by construction per split (§4; the public release).

The public BD2BB.csv has exactly 2,053 targets at each of the 5 positions. Here every
split is balanced: within a split the samples are ranked - hard (unseen) test samples
first, then by hash(seed, sample id) - and the sample of rank r gets position
(offset + r) mod 5, where `offset` is the number of samples in the splits before it
(train, val, test). A run of consecutive ranks covers the positions round-robin, so the
counts of every split, of the hard test subset (the first ranks of test) and of the
whole release differ by at most 1 when a size is not a multiple of 5. The rank uses only
the seed and the ids, so the positions are the same on any runner and worker count.

The decoys keep the seeded shuffle's relative order (decoys.shuffle); only the target
moves to its balanced position.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Dict, Iterable, Iterator, List

import apache_beam as beam

from pipelines.bd2bb.decoys import uniformity_of_counts
from pipelines.bd2bb.records import CANDIDATES, SPLITS, TARGET, Sample
from transforms.core.sampling import priority
from transforms.io.sorted_runs import WriteSortedRuns, merge_runs
from transforms.vectors.vector_files import RemoveFolderWhenDone

KEY_PREFIX = "position/"


def move_target(sample: Sample, position: int) -> Sample:
    """The sample with its target shown at `position`, the decoys in their shuffled order."""
    shown = list(zip(sample.endings, sample.ending_types))
    target = shown.pop(sample.label)
    assert target[1] == TARGET, f"{sample.sample_id}: label {sample.label} is not the target"
    shown.insert(position, target)
    return dataclasses.replace(sample, endings=tuple(a for a, _ in shown),
                               ending_types=tuple(k for _, k in shown), label=position)


def position_key(seed: int, sample: Sample) -> tuple:
    """A sample's place in the one order the positions are dealt over: its split (train,
    val, test, then any other by name), hard test samples first, then hash(seed, id).
    A sample's global rank in this order is the `offset + r` above."""
    split = (SPLITS.index(sample.split), "") if sample.split in SPLITS else (len(SPLITS), sample.split)
    return split, not sample.hard_test, priority(seed, KEY_PREFIX + sample.sample_id), sample.sample_id


def place_in_order(ordered: Iterable[Sample]) -> Iterator[Sample]:
    """Samples in position_key order -> each with its target at (global rank) mod 5."""
    for rank, sample in enumerate(ordered):
        yield move_target(sample, rank % CANDIDATES)


def balanced_positions(seed: int, samples: Iterable[Sample]) -> Dict[str, int]:
    """sample id -> target position, balanced per split, per hard subset and overall
    (in memory: the same order and positions as BalancePositions)."""
    return {s.sample_id: s.label for s in balance(seed, samples)}


def balance(seed: int, samples: List[Sample]) -> List[Sample]:
    return list(place_in_order(sorted(samples, key=lambda s: position_key(seed, s))))


class BalancePositions(beam.PTransform):
    """Samples with split and hard_test set -> the same samples, targets at balanced
    positions. The ranks are global, but the samples are never gathered: they are written
    to sorted run files under `scratch_dir` (transforms/io/sorted_runs.py), merged in one
    step that deals the positions as it reads, and spread again."""

    def __init__(self, seed: int, scratch_dir: str):
        super().__init__()
        self.seed, self.scratch_dir = seed, scratch_dir

    def expand(self, samples):
        seed = self.seed
        runs = samples | "Sorted runs" >> WriteSortedRuns(self.scratch_dir, lambda s: position_key(seed, s))
        placed = (runs | "Run list" >> beam.combiners.ToList()
                  | "Deal positions" >> beam.FlatMap(lambda files: place_in_order(merge_runs(files)))
                  | "Spread" >> beam.Reshuffle())
        _ = placed | "Remove runs" >> RemoveFolderWhenDone(self.scratch_dir)
        return placed


class PositionCounts(beam.CombineFn):
    """(split, hard_test, label) per sample -> stats/target_positions.json (position_report),
    from counts: bounded by splits x positions, not by the samples."""

    def create_accumulator(self):
        return collections.Counter()

    def add_input(self, acc, placed):
        acc[tuple(placed)] += 1
        return acc

    def merge_accumulators(self, accs):
        total = collections.Counter()
        for acc in accs:
            total.update(acc)
        return total

    def extract_output(self, acc):
        return report_from_counts(acc)


def position_report(placed: Iterable[tuple]) -> dict:
    """(split, hard_test, label) per sample -> stats/target_positions.json: the overall
    counts and chi-square p (decoys.uniformity_of_counts) and the counts per split and
    for the hard test subset."""
    return report_from_counts(collections.Counter(tuple(p) for p in placed))


def report_from_counts(counts: Dict[tuple, int]) -> dict:
    """position_report from the number of samples per (split, hard_test, label)."""
    overall = [0] * CANDIDATES
    groups: Dict[str, List[int]] = {}
    for (split, hard, label), n in sorted(counts.items()):
        overall[label] += n
        for name in (split, "hard_test") if hard else (split,):
            groups.setdefault(name, [0] * CANDIDATES)[label] += n
    report = uniformity_of_counts(overall)
    report["per_split"] = dict(sorted(groups.items()))
    return report
