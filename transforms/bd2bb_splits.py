"""BD2BB splits (§4.1) and the hard test subset (§7).

  splits     20% train, 40% val, 40% test: each sample's split is read off a uniform
             hash of (seed, sample id) against the cumulative shares, so it never
             depends on arrival order or worker count.
  hard test  test samples whose image and intention never occur in train and whose
             target action is never a target in train (it may be a decoy there).
             Train's images, intentions and target actions are gathered once (bounded
             by the train split, 20% of the samples) and given to the test samples as a
             side input.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Iterable, List, Tuple

import apache_beam as beam

from schemas.bd2bb import Sample, normalise_text
from transforms.sampling import priority
from transforms.stage import StageCounts

_SCALE = float(2 ** 64)


def assign_split(seed: int, sample_id: str, ratios: Dict[str, float]) -> str:
    """The split whose cumulative share first exceeds hash(seed, id) / 2^64."""
    u = priority(seed, "split/" + sample_id) / _SCALE
    total = sum(ratios.values())
    cumulative = 0.0
    for name, share in ratios.items():
        cumulative += share / total
        if u < cumulative:
            return name
    return list(ratios)[-1]


def seen_in_train(sample: Sample) -> List[Tuple[str, str]]:
    t = sample.datapoint.tuple
    return [("image", t.image), ("intention", normalise_text(t.intention)),
            ("target", t.action_key)]


def is_hard(sample: Sample, train: frozenset, test_split: str = "test") -> bool:
    """§7: a test sample none of whose image, intention or target action train has seen."""
    return sample.split == test_split and not any(item in train for item in seen_in_train(sample))


class _Assign(beam.DoFn):
    def __init__(self, seed: int, ratios: Dict[str, float]):
        self.seed, self.ratios = seed, dict(ratios)
        self.counts = StageCounts("splits")

    def process(self, sample: Sample):
        self.counts.seen(level="sample")
        split = assign_split(self.seed, sample.sample_id, self.ratios)
        self.counts.note(f"sample.{split}")
        yield self.counts.passed(dataclasses.replace(sample, split=split), level="sample")


class _FlagHard(beam.DoFn):
    def __init__(self, test_split: str):
        self.test_split = test_split
        self.counts = StageCounts("splits")
        self._train = None

    def process(self, sample: Sample, train: Iterable):
        if self._train is None:
            self._train = frozenset(tuple(x) for x in train)
        hard = is_hard(sample, self._train, self.test_split)
        if hard:
            self.counts.note("sample.hard_test")
        yield dataclasses.replace(sample, hard_test=hard)

    def finish_bundle(self):
        self._train = None


class AssignSplits(beam.PTransform):
    """Sample -> Sample with `split` and `hard_test` set."""

    def __init__(self, seed: int, ratios: Dict[str, float], train_split: str = "train",
                 test_split: str = "test"):
        super().__init__()
        self.seed, self.ratios = seed, dict(ratios)
        self.train_split, self.test_split = train_split, test_split

    def expand(self, samples):
        split = samples | "Assign" >> beam.ParDo(_Assign(self.seed, self.ratios))
        train_split = self.train_split
        train = (split | "Train samples" >> beam.Filter(lambda s: s.split == train_split)
                 | "Seen in train" >> beam.FlatMap(seen_in_train)
                 | "Unique seen" >> beam.Distinct())
        return split | "Hard test" >> beam.ParDo(_FlagHard(self.test_split), beam.pvalue.AsList(train))
