"""S9 (§3.4): splits, the extra judgements of dev and test, and the released records.

Sets, not examples, are split: every example of a set goes where its set goes (the
paper's "grouped by set"), by exact ratios over the seeded set ranking
(transforms.core.splits.split_ranked): train 1 - held_out, then dev / test1 (Test-P) /
test2 (Test-U) a third of held_out each. The set keys are held in memory for this (17,685
sets in the paper). Held-out examples get their extra judgements as one more round; the removal of an
example with 2 or more of them against its label is the paper's rules' stage
(pipelines/nlvr2/rules.py, `rules.remove_disagreeing`), after the agreement "before
removal" has been measured, for collected and released examples alike. Set ids
are numbered 0..n-1 within each split, in seeded order, over the sets that still have an
example.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Tuple

import apache_beam as beam

from pipelines.nlvr2.collection import reasons as why
from pipelines.nlvr2.collection.config import SplitsConfig
from pipelines.nlvr2.collection.rounds import VALIDATION_COLUMNS, VALIDATOR, Validated, judgement_check, validation_view
from pipelines.nlvr2.records import Example
from transforms.core.sampling import priority
from transforms.core.splits import split_ranked
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo
from transforms.crowd.answer_rows import ReadAnswerRows, Shown

HELD_OUT = ("dev", "test1", "test2")
HELD_OUT_ITEMS = "held_out"   # output: (split, Validated) of dev and test, for the extra round's tasks


def assign_splits(set_keys: Iterable[str], seed: int, held_out: float) -> Dict[str, str]:
    share = held_out / len(HELD_OUT)
    return split_ranked(set_keys, seed, ("train",) + HELD_OUT, (1.0 - held_out,) + (share,) * len(HELD_OUT))


def number_sets(keys_by_split: Iterable[Tuple[str, str]], seed: int) -> Dict[Tuple[str, str], int]:
    """{(split, set key): set id}, ids 0..n-1 per split in seeded order."""
    by_split: Dict[str, List[str]] = {}
    for split, key in keys_by_split:
        by_split.setdefault(split, []).append(key)
    ids = {}
    for split, keys in by_split.items():
        for n, key in enumerate(sorted(set(keys), key=lambda k: (priority(seed, "set-id/" + k), k))):
            ids[(split, key)] = n
    return ids


class _Split(StageFn):
    stage, level = "splits", "example"

    def judge(self, item: Validated, splits):
        yield splits[item.candidate.sentence.paired.key], item


class _ExtraValidation(StageFn):
    """Levels example (kept or removed) and judgement (an extra judgement used, or surplus:
    the first `judgements` by worker id are used, so `extra_validations` is in worker-id
    order; the answer rows' order is not kept)."""
    stage, level = "extra_validation", "example"

    def __init__(self, judgements: int):
        self._judgements = judgements

    def judge(self, joined):
        example, groups = joined
        for split, item in groups["example"]:
            if split == "train":   # answers name held-out examples only (unknown_item otherwise)
                yield split, item, ()
                continue
            answers = sorted(groups["answers"], key=lambda a: a[1])
            self.counts.seen(len(answers), level="judgement")
            used = answers[:self._judgements]
            self.counts.count_out(len(used), level="judgement")
            for _, worker, _ in answers[self._judgements:]:
                yield self.reject(why.SURPLUS_JUDGEMENT, f"{example}/{worker}", level="judgement",
                                  split=split, detail=f"more than {self._judgements} extra judgements")
            extra = tuple((worker, judgement) for _, worker, judgement in used)
            if not extra:
                yield self.reject(why.UNANSWERED, example, split=split)
                continue
            yield split, item, extra


def to_example(split: str, item: Validated, extra, set_ids, seed: int, directories: int) -> Example:
    sentence = item.candidate.sentence
    image_set = sentence.paired.image_set
    left, right = sentence.paired.pairs[item.candidate.pair]
    label = item.candidate.selected
    return Example(
        split=split, set_id=set_ids[(split, image_set.key)], pair=item.candidate.pair,
        sentence_id=sentence.sentence_id, sentence=sentence.text, left_url=left.url, right_url=right.url,
        writer=sentence.writer, validation=((item.validator, str(label)),), label=label,
        synset=image_set.synset, query=image_set.query_field, extra_validations=extra,
        directory=(priority(seed, "directory/" + image_set.key) % directories) if split == "train" else None,
        left_image=left.path, right_image=right.path)


class SplitAndValidate(beam.PTransform):
    """Validated -> {MAIN: Example, REJECTS}. Stages "splits", "extra_validation_answers"
    (level line) and "extra_validation" (level example)."""

    def __init__(self, answers: str, cfg: SplitsConfig, seed: int, then=None, route: str = ""):
        super().__init__()
        self._answers, self._cfg, self._seed = answers, cfg, seed
        self._then, self._route = then, route

    def expand(self, validated):
        seed, cfg = self._seed, self._cfg
        keys = validated | "Set keys" >> beam.Map(lambda v: v.candidate.sentence.paired.key)
        splits = (keys | "Distinct sets" >> beam.Distinct()
                  | "All sets" >> beam.combiners.ToList()
                  | "Assign" >> beam.Map(lambda ks: assign_splits(ks, seed, cfg.held_out)))
        split = validated | "Split" >> stage_pardo(_Split(), beam.pvalue.AsSingleton(splits))
        held = split[MAIN] | "Held out" >> beam.Filter(lambda s: s[0] != "train")
        if not self._answers:   # the extra round is still to run: its tasks only
            return {MAIN: None, HELD_OUT_ITEMS: held, REJECTS: split[REJECTS]}
        known = beam.pvalue.AsDict(held | "Held-out ids" >> beam.Map(lambda s: (s[1].candidate.example_id, True)))
        shown = Shown(now=held | "What each task shows" >> beam.Map(
                          lambda s: (s[1].candidate.example_id, validation_view(s[1].candidate))),
                      task_of=lambda answer: answer[0], then=self._then,
                      missing_reason=why.UNKNOWN_ITEM, route=self._route)
        rows = validated.pipeline | "Read extra validations" >> ReadAnswerRows(
            self._answers, "extra_validation_answers", VALIDATION_COLUMNS,
            judgement_check(("True", "False"), per_worker=True), why.DUPLICATE_ANSWER, context=known,
            shown=shown, worker=VALIDATOR)
        checked = ({"example": split[MAIN] | "By example" >> beam.Map(lambda s: (s[1].candidate.example_id, s)),
                    "answers": rows[MAIN] | "Answer by example" >> beam.Map(lambda a: (a[0], a))}
                   | "Join" >> beam.CoGroupByKey()
                   | "Extra validation" >> stage_pardo(_ExtraValidation(cfg.extra_judgements)))
        kept = checked[MAIN]
        set_ids = (kept | "Kept sets" >> beam.Map(lambda k: (k[0], k[1].candidate.sentence.paired.key))
                   | "Distinct kept" >> beam.Distinct() | "Kept list" >> beam.combiners.ToList()
                   | "Number" >> beam.Map(lambda pairs: number_sets(pairs, seed)))
        examples = kept | "Examples" >> beam.Map(
            lambda k, ids: to_example(k[0], k[1], k[2], ids, seed, cfg.directories),
            ids=beam.pvalue.AsSingleton(set_ids))
        rejects = (split[REJECTS], rows[REJECTS], checked[REJECTS]) | "S9 rejects" >> beam.Flatten()
        return {MAIN: examples, HELD_OUT_ITEMS: held, REJECTS: rejects}
