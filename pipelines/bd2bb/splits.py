"""BD2BB splits (§4.1) and the hard test subset (§7).

  splits     exactly 20% train, 40% val, 40% test (floor of n x cumulative share): samples
             are ranked by hash(seed, sample id) and cut at those counts
             (transforms.core.splits.ExactRatioSplit, a bucketed global rank), so the shares
             are exact and never depend on arrival order or worker count.
  hard test  test samples whose image (COCO image id) and intention never occur in train and whose
             target action is never a target in train (it may be a decoy there).
             Train's images, intentions and target actions are gathered once (bounded
             by the train split, 20% of the samples) and given to the test samples as a
             side input.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Iterable, List, Tuple

import apache_beam as beam

from pipelines.bd2bb.records import Sample, coco_image_id
from transforms.core.splits import ExactRatioSplit, split_ranked
from transforms.core.stage import MAIN, StageFn, stage_pardo
from transforms.text.tokens import normalise_text

KEY_PREFIX = "split/"


def split_of(seed: int, sample_ids: Iterable[str], ratios: Dict[str, float]) -> Dict[str, str]:
    """The split of each sample id, in memory (tests, small sets): the same ranks and
    cuts as AssignSplits."""
    keyed = split_ranked([KEY_PREFIX + i for i in sample_ids], seed, list(ratios), list(ratios.values()))
    return {key[len(KEY_PREFIX):]: split for key, split in keyed.items()}


def seen_in_train(sample: Sample) -> List[Tuple[str, str]]:
    t = sample.datapoint.tuple
    return [("image", coco_image_id(t.image)), ("intention", normalise_text(t.intention)),
            ("target", t.action_key)]


def is_hard(sample: Sample, train: frozenset, test_split: str = "test") -> bool:
    """§7: a test sample none of whose image, intention or target action train has seen."""
    return sample.split == test_split and not any(item in train for item in seen_in_train(sample))


class _Assign(StageFn):
    stage, level = "splits", "sample"

    def judge(self, named):
        split, sample = named
        self.counts.note(f"sample.{split}")
        yield dataclasses.replace(sample, split=split)


class _FlagHard(StageFn):
    """Only notes `sample.hard_test`: the samples were counted by _Assign."""
    stage, level = "splits", "sample"
    counts_in = counts_out = False

    def __init__(self, test_split: str):
        self.test_split = test_split
        self._train = None

    def judge(self, sample: Sample, train: Iterable):
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
        split = (samples | "Split key" >> beam.Map(lambda s: (KEY_PREFIX + s.sample_id, s))
                 | "Exact ratios" >> ExactRatioSplit(self.seed, list(self.ratios), list(self.ratios.values()))
                 | "Assign" >> stage_pardo(_Assign()))[MAIN]
        train_split = self.train_split
        train = (split | "Train samples" >> beam.Filter(lambda s: s.split == train_split)
                 | "Seen in train" >> beam.FlatMap(seen_in_train)
                 | "Unique seen" >> beam.Distinct())
        flagged = split | "Hard test" >> stage_pardo(_FlagHard(self.test_split), beam.pvalue.AsList(train))
        return flagged[MAIN]
