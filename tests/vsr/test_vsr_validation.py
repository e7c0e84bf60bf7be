"""VSR vote rules, keep rule and agreement figures (§3.2, §3.5, §4.1, Figure 7)."""
from fractions import Fraction

import pytest

from pipelines.vsr.config import ValidationConfig
from pipelines.vsr.validation import (AgreementRule, ExtraLabelAgreementFn, apply_vote_rules,
                                      disagreement_probability, extra_label_agreement, fleiss_kappa,
                                      keeps)
from transforms.core.errors import ConfigError, UserError


def test_keep_rule_is_at_least_two_and_two_thirds():
    two_thirds = AgreementRule.from_config(ValidationConfig()).min_agreement
    assert keeps(2, 3, 2, two_thirds) and keeps(3, 3, 2, two_thirds)
    assert not keeps(1, 3, 2, two_thirds)
    assert not keeps(2, 4, 2, two_thirds)          # 2 agree but only half
    assert keeps(4, 6, 2, two_thirds)              # exactly 2/3, compared exactly
    assert not keeps(1, 1, 2, two_thirds)          # 100% but a single validator
    assert not keeps(0, 0, 2, two_thirds)
    assert two_thirds == Fraction(2, 3)


def test_agreement_rule_is_built_once_from_the_config():
    rule = AgreementRule.from_config(ValidationConfig(min_agreeing=3, min_agreement="3/4",
                                                      writer_votes="drop"))
    assert (rule.min_agreeing, rule.min_agreement) == (3, Fraction(3, 4))
    assert rule.vote_rules == {"writer_votes": "drop", "duplicate_votes": "count",
                               "conflicting_votes": "count"}
    assert rule.keeps(3, 4) and not rule.keeps(2, 2) and not rule.keeps(3, 5)
    assert rule.apply_vote_rules("w", ["w", "a"], ["b"])[0] == ("a",)   # the writer's vote dropped


@pytest.mark.parametrize("share, problem", [("3/2", "(0, 1]"), ("0", "(0, 1]"), ("2/x", "not a fraction"),
                                            ("1/0", "not a fraction"), (None, "not a fraction")])
def test_a_bad_agreement_share_is_a_config_error_naming_the_key(share, problem):
    with pytest.raises(ConfigError) as raised:
        AgreementRule.from_config(ValidationConfig(min_agreement=share))
    assert isinstance(raised.value, UserError)
    assert str(raised.value).startswith("validation.min_agreement: ") and problem in str(raised.value)


def test_votes_are_counted_as_listed_by_default():
    true, false, dropped, anomalies = apply_vote_rules("7", [7, 1, 1], [1, 2])
    assert true == ("7", "1", "1") and false == ("1", "2") and dropped == []
    assert anomalies == {"duplicate_vote": 1, "conflicting_votes": 1, "writer_vote": 1}


def test_validator_in_both_lists_drop_removes_all_their_votes():
    true, false, dropped, _ = apply_vote_rules("w", ["a", "b"], ["a", "c"],
                                               conflicting_votes="drop")
    assert true == ("b",) and false == ("c",)
    assert sorted(dropped) == [("a", "false", "conflicting_votes"), ("a", "true", "conflicting_votes")]


def test_validator_in_both_lists_count_gives_one_vote_each_way():
    true, false, dropped, _ = apply_vote_rules("w", ["a", "b"], ["a", "c"])
    assert true == ("a", "b") and false == ("a", "c") and dropped == []


def test_duplicate_and_writer_votes_drop():
    true, false, dropped, _ = apply_vote_rules("w", ["a", "a", "w"], ["b"], writer_votes="drop",
                                               duplicate_votes="drop")
    assert true == ("a",) and false == ("b",)
    assert sorted(r for _, _, r in dropped) == ["duplicate_vote", "writer_vote"]


def test_duplicates_are_removed_before_conflicts_are_judged():
    # a listed twice as True and once as False: dedupe keeps one True, the conflict drops both
    true, false, dropped, _ = apply_vote_rules("w", ["a", "a", "b"], ["a", "c"],
                                               duplicate_votes="drop", conflicting_votes="drop")
    assert true == ("b",) and false == ("c",)
    assert [r for _, _, r in dropped].count("conflicting_votes") == 2


def test_disagreement_probability_of_two_random_annotators():
    # label True + votes T, T, F: ratings T T T F -> pairs disagreeing 3 of 6
    assert disagreement_probability(1, ["a", "b"], ["c"]) == pytest.approx(0.5)
    assert disagreement_probability(0, [], ["a", "b", "c"]) == 0.0


def test_fleiss_kappa_matches_the_textbook_example():
    # Fleiss (1971) / Wikipedia: 10 subjects, 14 raters, 5 categories -> kappa 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.2099, abs=1e-4)


def test_extra_label_agreement():
    figures = extra_label_agreement([(1, [1, 1]), (0, [0, 0]), (1, [1, 0]), (0, [0, 0])])
    assert figures["examples"] == 4 and figures["extra_labels"] == 8
    assert figures["human_accuracy"] == pytest.approx(7 / 8)
    # matrix [[0, 3], [3, 0], [1, 2], [3, 0]]: P-bar = 10/12, P_e = (7/12)^2 + (5/12)^2 = 74/144,
    # kappa = (10/12 - 74/144) / (1 - 74/144) = 46/70 = 0.6571
    assert figures["fleiss_kappa"] == pytest.approx(23 / 35, abs=1e-12)
    assert round(figures["fleiss_kappa"], 4) == 0.6571
    assert extra_label_agreement([]) is None


def test_extra_label_combiner_equals_the_list_version_in_any_merge_order():
    rows = [(1, [1, 1]), (0, [0, 0]), (1, [1, 0]), (0, [0, 0]), (1, []), (0, [1, 1, 0])]
    fn = ExtraLabelAgreementFn()

    def combine(parts):
        accs = []
        for part in parts:
            acc = fn.create_accumulator()
            for row in part:
                acc = fn.add_input(acc, row)
            accs.append(acc)
        return fn.extract_output(fn.merge_accumulators(accs))
    expected = extra_label_agreement(rows)
    for parts in ([rows], [rows[:2], rows[2:]], [rows[5:], rows[:1], rows[1:5]]):
        got = combine(parts)
        assert got["fleiss_kappa"] == pytest.approx(expected["fleiss_kappa"], abs=1e-12)
        assert {k: v for k, v in got.items() if k != "fleiss_kappa"} == \
            {k: v for k, v in expected.items() if k != "fleiss_kappa"}
    assert combine([rows[:4]])["fleiss_kappa"] == pytest.approx(23 / 35, abs=1e-12)
    assert fn.extract_output(fn.create_accumulator()) is None
