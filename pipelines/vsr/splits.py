"""VSR's two splits (§3.4) on top of transforms.core.splits.

Random: the kept examples, exact 70/10/20 by priority(seed, "random/" + example id).
Concept zero-shot: the concepts (COCO names of subject and object), exact 50/20/30 by
priority(seed, "zeroshot/" + concept); an example whose two concepts are in different
parts leaves the zero-shot split (stage zeroshot_split, reason concepts_across_splits)
but keeps its random split and its row.
"""
from __future__ import annotations

from typing import Dict

import apache_beam as beam

from pipelines.vsr import reasons
from pipelines.vsr.records import SplitExample, VotedExample
from transforms.core.splits import ExactRatioSplit, GroupZeroShotSplit
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo


def _concepts(voted: VotedExample):
    return ("zeroshot/" + voted.example.subj, "zeroshot/" + voted.example.obj)


class SplitVsr(beam.PTransform):
    """VotedExample -> SplitExample (main), rejects (zero-shot drops), and "concepts":
    (concept, zero-shot part) for the data card."""

    def __init__(self, seed: int, random: Dict[str, float], zeroshot: Dict[str, float]):
        super().__init__()
        self._seed, self._random, self._zeroshot = seed, dict(random), dict(zeroshot)

    def expand(self, kept):
        randomly = (kept | "Key by example" >> beam.Map(lambda v: ("random/" + v.example.example_id, v))
                    | "Random split" >> ExactRatioSplit(self._seed, list(self._random),
                                                        list(self._random.values())))
        zeroshot = (randomly | "Random part" >> beam.MapTuple(lambda part, v: (v, part))
                    | "Zero-shot split" >> GroupZeroShotSplit(
                        self._seed, list(self._zeroshot), list(self._zeroshot.values()),
                        groups_of=lambda vp: _concepts(vp[0])))
        split = zeroshot["items"] | "Count zero-shot" >> stage_pardo(_ZeroShot())
        concepts = zeroshot["groups"] | "Concept names" >> beam.MapTuple(
            lambda group, part: (group[len("zeroshot/"):], part))
        return {MAIN: split[MAIN], REJECTS: split[REJECTS], "concepts": concepts}


class _ZeroShot(StageFn):
    stage, level = "zeroshot_split", "example"
    counts_out = False   # every example goes on (its random split stays); out: in zero-shot

    def judge(self, assigned):
        zs_part, (voted, random_part) = assigned
        if zs_part:
            self.counts.count_out(level="example")
        else:
            e = voted.example
            yield self.reject(reasons.CONCEPTS_ACROSS_SPLITS, e.example_id, source=e.source,
                              split=random_part,
                              detail=f"{e.subj} and {e.obj} are in different zero-shot parts; "
                                     "the example stays in the random split")
        yield SplitExample(voted, random_part, zs_part)
