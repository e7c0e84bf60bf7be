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

import dataclasses
from typing import Dict, Iterable, List

import apache_beam as beam

from pipelines.bd2bb.decoys import position_uniformity
from pipelines.bd2bb.schema import CANDIDATES, SPLITS, TARGET, Sample
from transforms.core.sampling import priority

KEY_PREFIX = "position/"


def move_target(sample: Sample, position: int) -> Sample:
    """The sample with its target shown at `position`, the decoys in their shuffled order."""
    shown = list(zip(sample.endings, sample.ending_types))
    target = shown.pop(sample.label)
    assert target[1] == TARGET, f"{sample.sample_id}: label {sample.label} is not the target"
    shown.insert(position, target)
    return dataclasses.replace(sample, endings=tuple(a for a, _ in shown),
                               ending_types=tuple(k for _, k in shown), label=position)


def balanced_positions(seed: int, samples: Iterable[Sample]) -> Dict[str, int]:
    """sample id -> target position, balanced per split, per hard subset and overall."""
    by_split: Dict[str, List[Sample]] = {}
    for s in samples:
        by_split.setdefault(s.split, []).append(s)
    order = list(SPLITS) + sorted(set(by_split) - set(SPLITS))
    positions, offset = {}, 0
    for split in order:
        ranked = sorted(by_split.get(split, []),
                        key=lambda s: (not s.hard_test, priority(seed, KEY_PREFIX + s.sample_id), s.sample_id))
        for rank, s in enumerate(ranked):
            positions[s.sample_id] = (offset + rank) % CANDIDATES
        offset += len(ranked)
    return positions


def balance(seed: int, samples: List[Sample]) -> List[Sample]:
    positions = balanced_positions(seed, samples)
    return [move_target(s, positions[s.sample_id]) for s in samples]


class BalancePositions(beam.PTransform):
    """Samples with split and hard_test set -> the same samples, targets at balanced
    positions. The ranks are global, so the samples are gathered (~10k small rows for
    BD2BB, as the public-layout writer does)."""

    def __init__(self, seed: int):
        super().__init__()
        self.seed = seed

    def expand(self, samples):
        seed = self.seed
        return (samples | "Gather" >> beam.combiners.ToList()
                | "Balance" >> beam.FlatMap(lambda xs: balance(seed, xs))
                | "Spread" >> beam.Reshuffle())


def position_report(placed: Iterable[tuple]) -> dict:
    """(split, hard_test, label) per sample -> stats/target_positions.json: the overall
    counts and chi-square p (decoys.position_uniformity) and the counts per split and
    for the hard test subset."""
    placed = sorted(placed)
    report = position_uniformity([label for _, _, label in placed])
    groups: Dict[str, List[int]] = {}
    for split, hard, label in placed:
        groups.setdefault(split, []).append(label)
        if hard:
            groups.setdefault("hard_test", []).append(label)
    report["per_split"] = {name: [labels.count(k) for k in range(CANDIDATES)]
                           for name, labels in sorted(groups.items())}
    return report
