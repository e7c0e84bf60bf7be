"""Krippendorff's alpha against the reference package, accuracy and pool overlap."""
import math

import krippendorff
import numpy as np
import pytest

from pipelines.imagecode.crowd.agreement import AgreementFn, pools_report
from pipelines.imagecode.crowd.records import JudgedDescription
from transforms.crowd.agreement import human_accuracy, krippendorff_alpha, pool_overlap

NAN = float("nan")

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders, 12 units.
TEXTBOOK = [[1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
            [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]]


def retrieval_like(seed, coders=4, units=60, missing=0.35, agree=0.7):
    """Guessed indices 0..9: mostly the unit's target, some misses, many missing."""
    rng = np.random.default_rng(seed)
    target = rng.integers(0, 10, units)
    data = np.where(rng.random((coders, units)) < agree, target, rng.integers(0, 10, (coders, units)))
    data = data.astype(float)
    data[rng.random(data.shape) < missing] = np.nan
    return data


def test_textbook_values():
    assert round(krippendorff_alpha(TEXTBOOK, "nominal"), 3) == 0.743
    assert round(krippendorff_alpha(TEXTBOOK, "interval"), 3) == 0.849


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", range(6))
def test_alpha_matches_the_krippendorff_package(level, seed):
    data = retrieval_like(seed)
    data[:, 0] = np.nan          # a unit nobody coded
    data[1:, 1] = np.nan         # a unit with one value: not pairable
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-12)


def test_alpha_with_a_fixed_value_domain_and_undefined_cases():
    data = retrieval_like(1)
    assert krippendorff_alpha(data, "interval", values=np.arange(10)) == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval"), abs=1e-12)
    assert math.isnan(krippendorff_alpha([[3, 3], [3, 3]]))       # one value only: no expected disagreement
    assert math.isnan(krippendorff_alpha([[1, NAN], [NAN, 2]]))   # nothing pairable
    with pytest.raises(ValueError):
        krippendorff_alpha(data, "ratio")


def test_agreement_combiner_equals_alpha_over_the_same_retrievals():
    data = retrieval_like(3, coders=3, units=40, missing=0.2)
    judged = []
    for u in range(data.shape[1]):
        guesses = tuple((f"c{c}", int(data[c, u])) for c in range(data.shape[0]) if not np.isnan(data[c, u]))
        if guesses:
            judged.append(JudgedDescription(f"d{u}", "valid", True, target_index=u % 10, guesses=guesses, kept=True))
    fn = AgreementFn()
    halves = [fn.create_accumulator(), fn.create_accumulator()]
    for i, j in enumerate(judged):   # split and merge, as a runner would
        fn.add_input(halves[i % 2], j)
    out = fn.extract_output(fn.merge_accumulators(halves))
    for level in ("nominal", "interval"):
        assert out[f"alpha_{level}"] == pytest.approx(
            krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs=1e-12)
    guesses = [g for j in judged for _, g in j.guesses]
    targets = [j.target_index for j in judged for _ in j.guesses]
    assert out["retrievals"] == len(guesses) and out["descriptions"] == len(judged)
    assert out["accuracy"] == pytest.approx(human_accuracy(guesses, targets))


def test_human_accuracy():
    assert human_accuracy([1, 2, 3, 4], [1, 2, 0, 4]) == 0.75
    assert math.isnan(human_accuracy([], []))


def test_pool_overlap_by_hand():
    report = pool_overlap({"test": ["d", "e"], "train": ["a", "b", "c"], "valid": ["c", "d", "d"]})
    assert report["sizes"] == {"train": 3, "valid": 2, "test": 2}
    assert report["jaccard"] == {"train|valid": 0.25, "train|test": 0.0, "valid|test": pytest.approx(1 / 3)}
    assert report["seen_elsewhere"] == {"train": pytest.approx(1 / 3), "valid": 1.0, "test": 0.5}
    disjoint = pool_overlap({"train": ["a"], "valid": ["b"], "test": []})
    assert disjoint["jaccard"]["train|valid"] == 0.0 and math.isnan(disjoint["seen_elsewhere"]["test"])


def test_pools_report_pools_roles_together():
    report = pools_report({"describer": {"train": {"a"}, "valid": {"b"}},
                           "retriever": {"train": {"b"}, "valid": {"c"}}})
    assert report["workers"]["any"] == {"train": ["a", "b"], "valid": ["b", "c"]}
    assert report["overlap"]["describer"]["jaccard"] == {"train|valid": 0.0}
    assert report["overlap"]["any"]["jaccard"] == {"train|valid": pytest.approx(1 / 3)}


def test_fleiss_kappa_matches_the_textbook_example():
    from transforms.crowd.agreement import fleiss_kappa
    # Fleiss (1971) / Wikipedia: 10 subjects, 14 raters, 5 categories -> kappa 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.2099, abs=1e-4)
    assert math.isnan(fleiss_kappa([[1, 0], [0, 1]]))      # one rating each: nothing to agree on
    assert math.isnan(fleiss_kappa([[3, 0], [2, 0]]))      # one category only: chance agreement is 1
