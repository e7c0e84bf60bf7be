"""What must hold across examples, checked on Examples whichever way they were made.

    identifiers   one example per identifier: of lines with the same one, the first (by
                  file and line) is kept, the others are `duplicate_identifier`
    pairs         a (split, set, pair) shows the same two URLs, left and right, in both of
                  its sentences (§3.2: the same pairs and order for both writing tasks);
                  when they differ no line can be trusted more than another, so every
                  example of that pair is `pair_urls_differ`
    paper_rules   §3.4: a dev/test example has `rules.extra_judgements` (4) extra
                  judgements (at least `rules.min_extra_judgements`: the public files
                  hold 3 on 237 examples, a judgement lost, and public.yaml accepts
                  that), and fewer than `rules.remove_disagreeing` (2) of them
                  disagree with its label; §3.2: a (set, sentence) group has at most
                  `rules.true_pairs` (2) True and at most pairs_per_set - true_pairs (2)
                  False examples (the writer's sentence is true for the 2 selected pairs).
                  With `rules.enforce` a breach is a reject (the first breach names the
                  reason, the detail lists all); without it the example stays and the
                  breach goes to stats/anomalies.json and the data card. The public files
                  break two of these (dev-88-1-0, dev-458-2-1), so public.yaml reports.

Aggregation of the extra judgements (config `crowd.aggregation`, transforms/crowd/
aggregation.py): `majority` is §3.4's count above (>= 2 of 4 disagreeing removes: a kept
label has a super-majority of the extra judgements, so their majority vote gives it too).
`dawid_skene` removes a dev/test example when the Dawid-Skene label of its extra
judgements (each judge weighed by their confusion matrix over all their extra judgements
of the build) is not its label; the count's threshold then does not apply.
"""
from __future__ import annotations

from typing import Optional

import apache_beam as beam

from pipelines.nlvr2 import reasons
from pipelines.nlvr2.config import RulesConfig
from pipelines.nlvr2.records import Example
from transforms.core.stage import KeepFirst, StageFn, stage_pardo
from transforms.crowd.aggregation import MAJORITY, AggregateLabels

ANOMALIES = "anomalies"


def source_order(example: Example):
    """A stable order of examples: by the file and line they were read from, then by
    identifier (collected examples have no origin)."""
    path, line = example.origin or ("", 0)
    return (path, line, example.split, example.set_id, example.pair, example.sentence_id)


def _where(example: Example) -> dict:
    path, line = example.origin or ("", 0)
    return {"file": path, "line": line, "split": example.split}


class OneExamplePerIdentifier(beam.PTransform):
    def expand(self, examples):
        return examples | "Keep first" >> KeepFirst(
            "identifiers", "example", key=lambda x: x.identifier, order=source_order,
            why=lambda later, first: {
                "reason": reasons.DUPLICATE_IDENTIFIER, "item_id": later.identifier,
                "detail": "identifier of " + (":".join(map(str, first.origin))
                                              if first.origin else "an earlier example"),
                **_where(later)},
            counted_in=False)


class _SamePairUrls(StageFn):
    stage, level = "pairs", "example"
    counts_in = False

    def judge(self, keyed):
        _, examples = keyed
        examples = sorted(examples, key=source_order)
        self.counts.seen(len(examples), level=self.level)
        urls = sorted({(x.left_url, x.right_url) for x in examples})
        for x in examples:
            if len(urls) == 1:
                yield x
            else:
                yield self.reject(reasons.PAIR_URLS_DIFFER, x.identifier, detail=(
                    f"pair {x.split}-{x.set_id}-{x.pair} shows {len(urls)} different "
                    f"(left_url, right_url) in its sentences"), **_where(x))


class SamePairUrls(beam.PTransform):
    def expand(self, examples):
        return (examples
                | "By pair" >> beam.Map(lambda x: ((x.split, x.set_id, x.pair), x))
                | "Group pairs" >> beam.GroupByKey()
                | "Same URLs" >> stage_pardo(_SamePairUrls()))


def breaches(group: list, rules: RulesConfig, consensus: Optional[dict] = None) -> dict:
    """{identifier: [(reason, detail), ...]} of the examples of one (set, sentence) group
    that break the paper's rules. `consensus` ({identifier: label of the extra judgements},
    crowd.aggregation dawid_skene) replaces the count of disagreeing judgements."""
    found = {}
    n_true = sum(x.label for x in group)
    n_false = len(group) - n_true
    max_false = rules.pairs_per_set - rules.true_pairs
    for x in group:
        found[x.identifier] = problems = []
        if x.split != "train":   # extra judgements are for dev and test only (§3.4)
            n_extra = len(x.extra_validations)
            if not rules.min_extra_judgements <= n_extra <= rules.extra_judgements:
                wanted = (f"{rules.min_extra_judgements} to {rules.extra_judgements}"
                          if rules.min_extra_judgements < rules.extra_judgements
                          else str(rules.extra_judgements))
                problems.append((reasons.EXTRA_JUDGEMENTS_COUNT,
                                 f"{n_extra} extra judgements, not {wanted} (§3.4)"))
            label = "True" if x.label else "False"
            disagree = sum(j != label for _, j in x.extra_validations)
            if consensus is None and disagree >= rules.remove_disagreeing:
                problems.append((reasons.EXTRA_VALIDATION_DISAGREES,
                                 f"{disagree} of {n_extra} extra judgements disagree with "
                                 f"the label (removed from {rules.remove_disagreeing}, §3.4)"))
            elif consensus is not None and n_extra and consensus.get(x.identifier) != label:
                problems.append((reasons.EXTRA_VALIDATION_DISAGREES,
                                 f"{disagree} of {n_extra} extra judgements disagree with the "
                                 f"label and their Dawid-Skene label is "
                                 f"{consensus.get(x.identifier)} (crowd.aggregation)"))
        if n_true > rules.true_pairs or n_false > max_false:
            problems.append((reasons.GROUP_LABELS,
                             f"its (set, sentence) group has {n_true} True and {n_false} False "
                             f"(at most {rules.true_pairs} and {max_false}, §3.2)"))
    return {k: v for k, v in found.items() if v}


class _PaperRules(StageFn):
    stage, level = "paper_rules", "example"
    counts_in = False

    def __init__(self, rules: RulesConfig):
        self.rules = rules

    def judge(self, keyed, consensus=None):
        _, group = keyed
        group = sorted(group, key=source_order)
        self.counts.seen(len(group), level=self.level)
        found = breaches(group, self.rules, consensus)
        for x in group:
            problems = found.get(x.identifier)
            if not problems:
                yield x
                continue
            detail = "; ".join(d for _, d in problems)
            if self.rules.enforce:
                yield self.reject(problems[0][0], x.identifier, detail=detail, **_where(x))
                continue
            for reason, text in problems:
                yield beam.pvalue.TaggedOutput(ANOMALIES, {
                    "identifier": x.identifier, "reason": reason, "detail": text,
                    **_where(x)})
            yield x


class PaperRules(beam.PTransform):
    """Examples -> {MAIN: kept, REJECTS: breaches (rules.enforce), ANOMALIES: breaches kept}.
    With an aggregation other than majority, the extra judgements of every dev/test
    example are aggregated first (AggregateLabels) and the checks read the labels."""

    def __init__(self, rules: RulesConfig, aggregation: str = MAJORITY):
        super().__init__()
        self._rules, self._aggregation = rules, aggregation

    def expand(self, examples):
        side = {}
        if self._aggregation != MAJORITY:
            side["consensus"] = beam.pvalue.AsSingleton(
                examples
                | "Extra judgements" >> beam.FlatMap(_extra_judgements)
                | "Aggregate judgements" >> AggregateLabels(self._aggregation))
        return (examples
                | "By group" >> beam.Map(lambda x: (x.group, x))
                | "Group sentences" >> beam.GroupByKey()
                | "Check" >> stage_pardo(_PaperRules(self._rules), outputs=(ANOMALIES,), **side))


def _extra_judgements(example: Example):
    """A dev/test example's extra judgements as answers (identifier, worker, judgement)."""
    if example.split == "train":
        return []
    return [(example.identifier, worker, judgement) for worker, judgement in example.extra_validations]
