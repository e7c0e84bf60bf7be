"""transforms/crowd/aggregation.py against crowd-kit (a test dependency only).

The project's majority gives None on a tie; crowd-kit's MajorityVote picks the first label
in sorted order. They must agree on every task without a tie, and every tie must be one
(crowd-kit's counts say so). Dawid-Skene must give crowd-kit's DawidSkene labels, and
differ from the majority where a careless worker outvotes careful ones.
"""
import json
import random

import pandas as pd
import pytest

crowdkit = pytest.importorskip("crowdkit.aggregation")

from transforms.crowd.aggregation import (DAWID_SKENE, MAJORITY, aggregate, answers_table,  # noqa: E402
                                          dawid_skene_labels, majority_labels)


def _frame(answers):
    return pd.DataFrame(list(answers), columns=["task", "worker", "label"])


def _crowdkit_majority(answers):
    return crowdkit.MajorityVote().fit_predict(_frame(answers)).to_dict()


def _ties(answers):
    """Tasks whose two most given labels have the same count."""
    counts = _frame(answers).groupby(["task", "label"]).size().unstack(fill_value=0)
    top = pd.DataFrame({"max": counts.max(axis=1),
                        "n_max": counts.eq(counts.max(axis=1), axis=0).sum(axis=1)})
    return set(top.index[top.n_max > 1])


def _check_majority(answers):
    ours, theirs, ties = majority_labels(answers), _crowdkit_majority(answers), _ties(answers)
    assert set(ours) == set(theirs)
    for task, label in ours.items():
        if task in ties:
            assert label is None, task
        else:
            assert label == theirs[task], task
    return ours, ties


# --- the samples' validation answers ------------------------------------------------------

@pytest.fixture(scope="module")
def vsr_votes(tmp_path_factory):
    from pipelines.vsr.sample import make_vsr_sample
    folder = make_vsr_sample(str(tmp_path_factory.mktemp("vsr")))
    rows = []
    for line in (folder / "votes.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "example_id" in row:
            rows.append((row["example_id"], row["validator_id"], row["label"]))
    return rows


@pytest.fixture(scope="module")
def nlvr2_judgements(tmp_path_factory):
    from pipelines.nlvr2.sample import make_nlvr2_sample
    folder = tmp_path_factory.mktemp("nlvr2")
    make_nlvr2_sample(str(folder))
    found = {}
    for name in ("validations", "extra_validations"):
        rows = []
        for line in (folder / f"{name}.jsonl").read_text().splitlines():
            try:
                row = json.loads(line)
                rows.append((row["example"], row["worker"], row["judgement"]))
            except (ValueError, KeyError, TypeError):
                continue   # the sample's deliberately bad lines
        found[name] = rows
    return found


def test_vsr_sample_votes_majority_is_crowdkits(vsr_votes):
    ours, ties = _check_majority(vsr_votes)
    assert len(ours) > 10 and len(ties) < len(ours)


@pytest.mark.parametrize("name", ["validations", "extra_validations"])
def test_nlvr2_sample_judgements_majority_is_crowdkits(nlvr2_judgements, name):
    ours, _ = _check_majority(nlvr2_judgements[name])
    assert len(ours) > 3


def test_vsr_keep_rule_keeps_only_the_validators_majority(vsr_votes):
    """VSR's keep rule (>= 2 agreeing, >= 2/3 of validators) is a super-majority: what it
    keeps, crowd-kit's MajorityVote over the validators labels with the writer's label."""
    from fractions import Fraction
    from pipelines.vsr.validation import keeps
    theirs = _crowdkit_majority(vsr_votes)
    by_task = {}
    for task, _, label in vsr_votes:
        by_task.setdefault(task, []).append(label)
    checked = 0
    for task, labels in by_task.items():
        for writer_label in (0, 1):
            if keeps(labels.count(writer_label), len(labels), 2, Fraction(2, 3)):
                assert theirs[task] == writer_label, task
                checked += 1
    assert checked > 10


# --- random answer tables, ties included ----------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_random_tables_majority_is_crowdkits(seed):
    rng = random.Random(seed)
    labels = ["a", "b", "c"][: 2 + seed % 2]
    answers = [(f"t{t}", f"w{w}", rng.choice(labels))
               for t in range(40) for w in rng.sample(range(9), rng.randint(1, 6))]
    _, ties = _check_majority(answers)
    assert ties, "the table must hold ties for the tie rule to be checked"


def test_tie_has_no_majority():
    answers = [("t", "w1", True), ("t", "w2", False), ("u", "w1", True)]
    assert majority_labels(answers) == {"t": None, "u": True}


# --- Dawid-Skene --------------------------------------------------------------------------

def _careless_worker_table(seed=0, tasks=60):
    """Three careful workers (right 9 times in 10) answer every task but one of them skips
    some; a careless worker (right half the time) and a copy of them answer every task.
    Where the skipping careful worker is absent, two careless answers can outvote."""
    rng = random.Random(seed)
    answers, truth = [], {}
    for t in range(tasks):
        task = f"t{t:03d}"
        truth[task] = rng.random() < 0.5
        for worker, right in (("careful1", 0.9), ("careful2", 0.9), ("careful3", 0.9),
                              ("careless1", 0.5), ("careless2", 0.5)):
            if worker == "careful3" and t % 2:
                continue
            answers.append((task, worker, truth[task] if rng.random() < right else not truth[task]))
    return answers, truth


@pytest.mark.parametrize("seed", range(4))
def test_dawid_skene_is_crowdkits(seed):
    answers, _ = _careless_worker_table(seed)
    theirs = crowdkit.DawidSkene(n_iter=100, tol=1e-5).fit_predict(_frame(answers)).to_dict()
    assert dawid_skene_labels(answers) == theirs


def test_dawid_skene_outweighs_careless_workers():
    answers, truth = _careless_worker_table(seed=1, tasks=200)
    majority, ds = aggregate(answers, MAJORITY), aggregate(answers, DAWID_SKENE)
    differs = [t for t in truth if majority[t] != ds[t]]
    assert differs, "some careless majority must be overturned"
    right = lambda labels: sum(labels[t] == truth[t] for t in truth)  # noqa: E731
    assert right(ds) > right(majority)
    # where they differ and majority had a label, Dawid-Skene took the careful side
    assert sum(ds[t] == truth[t] for t in differs) > len(differs) / 2


def test_dawid_skene_ignores_answer_order():
    answers, _ = _careless_worker_table(seed=2)
    shuffled = list(answers)
    random.Random(5).shuffle(shuffled)
    assert dawid_skene_labels(shuffled) == dawid_skene_labels(answers)
    assert answers_table(shuffled) == answers_table(answers)


def test_unknown_method_is_an_error():
    with pytest.raises(ValueError, match="crowd.aggregation"):
        aggregate([("t", "w", 1)], "median")
