"""VSR second-round validation (§3.2, §4.1): vote rules, the keep rule, agreement figures.

Keep rule: an example stays when at least `min_agreeing` validators (§3.2: 2) agree with
the writer's label and they are at least `min_agreement` of its validators (§4.1: 2/3),
compared as exact fractions. On the public raw file this keeps exactly the 10,972 examples
of the public validated file (tests/vsr/test_vsr_realdata.py).

Vote rules, each `count` or `drop` (config `validation.*_votes`), applied in this order:
  * duplicate_votes: a validator listed twice in the same list of one example. `drop`
    keeps one of the two.
  * conflicting_votes: a validator in both lists of one example. `count` counts one True
    and one False vote (the public lists are counted as they stand); `drop` drops every
    vote of that validator on that example, since nothing says which one is meant.
  * writer_votes: the caption's writer among its validators. `drop` drops the vote.
A dropped vote is a reject (stage vote_rules, level vote) with its reason. The public
release counted all three kinds (in the raw file: 1,700 writer votes on 1,656 examples,
354 duplicate votes on 345 examples, 25 validators in both lists), so the paper config
says `count`: with any `drop` the kept set differs from the published one (pipelines/vsr/README.md
gives the figures). Counted or not, every such vote is reported in stats/agreement.json
(a departure from "every dropped record is a reject": a counted vote is not dropped).

Aggregation (config `crowd.aggregation`, transforms/crowd/aggregation.py): `majority` is
the keep rule above, the paper's count (a 2/3 super-majority: what it keeps, crowd-kit's
MajorityVote over the validators also labels with the writer's label; tests/crowd/
test_aggregation.py). `dawid_skene` keeps an example when the Dawid-Skene label of its
validators' votes, each validator weighed by their confusion matrix over all their votes,
is the writer's label (min_agreeing and min_agreement, the count's thresholds, do not
apply); an example without votes stays a no_votes reject.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np

from pipelines.vsr import reasons
from pipelines.vsr.records import VotedExample
from transforms.core.stage import StageFn, stage_pardo
from transforms.crowd.agreement import fleiss_kappa
from transforms.crowd.aggregation import MAJORITY, AggregateLabels

COUNT, DROP = "count", "drop"


@dataclass(frozen=True)
class AgreementRule:
    """The keep rule and the vote rules, built once from the config (`from_config`) and
    handed whole to the stages that apply them. `min_agreement` is an exact fraction:
    the threshold stays exact (0.6667 would drop 2 of 3)."""
    min_agreeing: int = 2                      # §3.2
    min_agreement: Fraction = Fraction(2, 3)   # §4.1
    writer_votes: str = COUNT
    duplicate_votes: str = COUNT
    conflicting_votes: str = COUNT
    aggregation: str = MAJORITY                # crowd.aggregation

    @classmethod
    def from_config(cls, validation, aggregation: str = MAJORITY) -> "AgreementRule":
        """From the config's `validation` section and `crowd.aggregation`; a bad share is a
        ConfigError naming validation.min_agreement (pipelines/vsr/config.py
        ValidationConfig.share)."""
        return cls(validation.min_agreeing, validation.share(), validation.writer_votes,
                   validation.duplicate_votes, validation.conflicting_votes, aggregation)

    @property
    def vote_rules(self) -> Dict[str, str]:
        """What each kind of odd vote is: counted or dropped (stats/agreement.json)."""
        return {"writer_votes": self.writer_votes, "duplicate_votes": self.duplicate_votes,
                "conflicting_votes": self.conflicting_votes}

    def keeps(self, agreeing: int, validators: int) -> bool:
        return keeps(agreeing, validators, self.min_agreeing, self.min_agreement)

    def keeps_voted(self, voted: VotedExample, consensus: Optional[dict] = None) -> bool:
        """The keep rule of `aggregation`: the count (majority), or the writer's label is
        the validators' Dawid-Skene label (`consensus`: {example id: label})."""
        if self.aggregation == MAJORITY:
            return self.keeps(voted.agreeing, voted.validators)
        return voted.validators > 0 and consensus.get(voted.example.example_id) == voted.example.label

    def apply_vote_rules(self, writer: str, vote_true: Sequence[str], vote_false: Sequence[str]):
        return apply_vote_rules(writer, vote_true, vote_false, **self.vote_rules)


def apply_vote_rules(writer: str, vote_true: Sequence[str], vote_false: Sequence[str],
                     writer_votes: str = COUNT, duplicate_votes: str = COUNT,
                     conflicting_votes: str = COUNT):
    """-> (counted true, counted false, [(validator, listed as, reason)] dropped,
    Counter of anomalies seen whether counted or dropped)."""
    anomalies: Counter = Counter()
    dropped: List[Tuple[str, str, str]] = []
    lists = {"true": [str(v) for v in vote_true], "false": [str(v) for v in vote_false]}
    for side, votes in lists.items():
        seen, kept = set(), []
        for v in votes:
            if v in seen:
                anomalies[reasons.DUPLICATE_VOTE] += 1
                if duplicate_votes == DROP:
                    dropped.append((v, side, reasons.DUPLICATE_VOTE))
                    continue
            seen.add(v)
            kept.append(v)
        lists[side] = kept
    both = set(lists["true"]) & set(lists["false"])
    anomalies[reasons.CONFLICTING_VOTES] += len(both)   # validators, not their two votes
    if conflicting_votes == DROP and both:
        for side in lists:
            dropped += [(v, side, reasons.CONFLICTING_VOTES) for v in lists[side] if v in both]
            lists[side] = [v for v in lists[side] if v not in both]
    writer = str(writer)
    anomalies[reasons.WRITER_VOTE] += sum(v == writer for side in lists for v in lists[side])
    if writer_votes == DROP:
        for side in lists:
            dropped += [(v, side, reasons.WRITER_VOTE) for v in lists[side] if v == writer]
            lists[side] = [v for v in lists[side] if v != writer]
    return tuple(lists["true"]), tuple(lists["false"]), dropped, anomalies


def keeps(agreeing: int, validators: int, min_agreeing: int, min_agreement: Fraction) -> bool:
    return (validators > 0 and agreeing >= min_agreeing
            and Fraction(agreeing, validators) >= min_agreement)


def disagreement_probability(label: int, vote_true: Sequence, vote_false: Sequence) -> float:
    """Probability that two distinct annotators drawn at random (the writer's label and the
    validators' votes) disagree: 1 - sum_c n_c (n_c - 1) / (n (n - 1)). Figure 7."""
    n_true = len(vote_true) + (label == 1)
    n_false = len(vote_false) + (label == 0)
    n = n_true + n_false
    if n < 2:
        return float("nan")
    return 1.0 - (n_true * (n_true - 1) + n_false * (n_false - 1)) / (n * (n - 1))


# --- Beam ----------------------------------------------------------------------------------

class ApplyVoteRules(beam.PTransform):
    """(Example, listed true votes, listed false votes) -> VotedExample, plus vote-level
    rejects for dropped votes and (tag "anomalies") one Counter per example."""

    def __init__(self, rule: AgreementRule):
        super().__init__()
        self._rule = rule

    def expand(self, listed):
        return listed | stage_pardo(_VoteRules(self._rule), outputs=("anomalies",))


class _VoteRules(StageFn):
    """One example's vote lists; counts its votes (level vote), not the example."""
    stage, level = "vote_rules", "vote"
    counts_in = counts_out = False

    def __init__(self, rule: AgreementRule):
        self._rule = rule

    def judge(self, listed):
        example, vote_true, vote_false = listed
        self.counts.seen(len(vote_true) + len(vote_false), level="vote")
        true, false, dropped, anomalies = self._rule.apply_vote_rules(
            example.annotator_id, vote_true, vote_false)
        self.counts.count_out(len(true) + len(false), level="vote")
        for validator, side, reason in dropped:
            yield self.reject(reason, f"{example.example_id}/{side}/{validator}",
                              source=example.source,
                              detail=f"validator {validator} voted {side} on {example.caption!r} "
                                     f"({example.image}); writer {example.annotator_id}")
        yield beam.pvalue.TaggedOutput("anomalies", anomalies)
        yield VotedExample(example, true, false)


def _votes(voted: VotedExample):
    """An example's counted votes as answers (task, worker, label) for aggregation."""
    e = voted.example
    return ([(e.example_id, v, 1) for v in voted.vote_true]
            + [(e.example_id, v, 0) for v in voted.vote_false])


class Verdicts(beam.PTransform):
    """VotedExample -> (VotedExample, kept?) by the rule's aggregation; Dawid-Skene first
    aggregates every counted vote of the build (AggregateLabels)."""

    def __init__(self, rule: AgreementRule):
        super().__init__()
        self._rule = rule

    def expand(self, voted):
        rule = self._rule
        if rule.aggregation == MAJORITY:
            return voted | "Count" >> beam.Map(lambda v: (v, rule.keeps_voted(v)))
        consensus = (voted | "Votes" >> beam.FlatMap(_votes)
                     | "Aggregate votes" >> AggregateLabels(rule.aggregation))
        return voted | "Against consensus" >> beam.Map(
            lambda v, labels: (v, rule.keeps_voted(v, labels)),
            labels=beam.pvalue.AsSingleton(consensus))


class KeepRule(beam.PTransform):
    """(VotedExample, kept?) -> the kept ones (main) and example-level rejects
    (low_agreement, no_votes)."""

    def __init__(self, rule: AgreementRule):
        super().__init__()
        self._rule = rule

    def expand(self, verdicts):
        return verdicts | stage_pardo(_Keep(self._rule))


class _Keep(StageFn):
    stage, level = "validation", "example"

    def __init__(self, rule: AgreementRule):
        self._rule = rule

    def judge(self, verdict):
        voted, kept = verdict
        if kept:
            yield voted
            return
        e = voted.example
        reason = reasons.NO_VOTES if voted.validators == 0 else reasons.LOW_AGREEMENT
        how = "" if self._rule.aggregation == MAJORITY else f" (their {self._rule.aggregation} label differs)"
        yield self.reject(reason, e.example_id, source=e.source,
                          detail=f"{voted.agreeing} of {voted.validators} validators agree "
                                 f"with label {e.label}{how}: {e.caption!r} on {e.image}")


class AgreementFn(beam.CombineFn):
    """(VotedExample, kept?) (all, before the keep rule) -> the figures of §4.1 and Figure 7.

    Accumulator: examples, all agree, kept, validation labels, and per relation
    [examples, sum of disagreement probabilities]: bounded by the relation list."""

    def __init__(self, rule: AgreementRule):
        self._rule = rule

    def create_accumulator(self):
        return {"examples": 0, "all_agree": 0, "kept": 0, "labels": 0, "relations": {}}

    def add_input(self, acc, verdict):
        voted, kept = verdict
        e = voted.example
        acc["examples"] += 1
        acc["labels"] += voted.validators
        acc["all_agree"] += int(voted.validators > 0 and voted.agreeing == voted.validators)
        acc["kept"] += int(kept)
        p = disagreement_probability(e.label, voted.vote_true, voted.vote_false)
        if not np.isnan(p):
            rel = acc["relations"].setdefault(e.relation, [0, 0.0])
            rel[0] += 1
            rel[1] += p
        return acc

    def merge_accumulators(self, accs):
        merged = self.create_accumulator()
        for acc in accs:
            for k in ("examples", "all_agree", "kept", "labels"):
                merged[k] += acc[k]
            for rel, (n, s) in acc["relations"].items():
                m = merged["relations"].setdefault(rel, [0, 0.0])
                m[0] += n
                m[1] += s
        return merged

    def extract_output(self, acc):
        n = acc["examples"]
        return {
            "examples": n, "validation_labels": acc["labels"],
            "all_agree_share": acc["all_agree"] / n if n else None,
            "kept": acc["kept"], "kept_share": acc["kept"] / n if n else None,
            "disagreement_by_relation": {
                rel: {"examples": c, "probability": s / c}
                for rel, (c, s) in sorted(acc["relations"].items())},
        }


def sum_counters(counters: Iterable[Counter]) -> Dict[str, int]:
    total: Counter = Counter()
    for c in counters:
        total.update(c)
    return dict(sorted(total.items()))


class ExtraLabelAgreementFn(beam.CombineFn):
    """(gold label, extra labels) per example -> extra_label_agreement's figures, with a
    fixed-size accumulator (sums per category), never the list of examples.

    Fleiss' kappa needs only sums: over items with n_i >= 2 ratings, the sum of
    P_i = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)), the item count, and per category the
    ratings n_j (p_j = n_j / sum n_j)."""

    def create_accumulator(self):
        # examples, extra labels, correct, items rated >= 2 times, sum P_i, ratings per label
        return [0, 0, 0, 0, 0.0, [0, 0]]

    def add_input(self, acc, row):
        gold, extra = row
        labels = [int(gold)] + [int(x) for x in extra]
        acc[0] += 1
        acc[1] += len(extra)
        acc[2] += sum(int(x) == int(gold) for x in extra)
        n = len(labels)
        if n >= 2:
            per = [labels.count(0), labels.count(1)]
            acc[3] += 1
            acc[4] += sum(c * (c - 1) for c in per) / (n * (n - 1))
            acc[5] = [acc[5][0] + per[0], acc[5][1] + per[1]]
        return acc

    def merge_accumulators(self, accs):
        merged = self.create_accumulator()
        for a in accs:
            merged = [merged[0] + a[0], merged[1] + a[1], merged[2] + a[2], merged[3] + a[3],
                      merged[4] + a[4], [merged[5][0] + a[5][0], merged[5][1] + a[5][1]]]
        return merged

    def extract_output(self, acc):
        examples, total, correct, items, sum_p, per_label = acc
        if not examples:
            return None
        kappa = float("nan")
        ratings = sum(per_label)
        if items:
            p_e = sum((c / ratings) ** 2 for c in per_label)
            if p_e != 1.0:
                kappa = float((sum_p / items - p_e) / (1.0 - p_e))
        return {"examples": examples, "extra_labels": total, "fleiss_kappa": kappa,
                "human_accuracy": correct / total if total else None}


def extra_label_agreement(rows: Iterable[Tuple[int, Sequence[int]]]) -> Optional[dict]:
    """(gold label, extra labels) per example -> Fleiss' kappa over gold + extra labels and
    the extra annotators' accuracy against gold (§3.5: 0.895 and 95.4%)."""
    matrix, correct, total = [], 0, 0
    for gold, extra in rows:
        labels = [int(gold)] + [int(x) for x in extra]
        matrix.append([labels.count(0), labels.count(1)])
        correct += sum(int(x) == int(gold) for x in extra)
        total += len(extra)
    if not matrix:
        return None
    return {"examples": len(matrix), "extra_labels": total,
            "fleiss_kappa": fleiss_kappa(matrix),
            "human_accuracy": correct / total if total else None}
