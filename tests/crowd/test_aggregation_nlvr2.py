"""NLVR2's §3.4 removal under crowd.aggregation (pipelines/nlvr2/rules.py PaperRules):
majority is the count (>= 2 of 4 extra judgements disagree); dawid_skene removes exactly
the dev/test examples whose crowd-kit DawidSkene label of the extra judgements is not
their label, and so keeps examples careless judges outvoted."""
import dataclasses
import random

import apache_beam as beam
import pandas as pd
import pytest
from apache_beam.testing.util import assert_that, equal_to

crowdkit = pytest.importorskip("crowdkit.aggregation")

from pipelines.nlvr2.config import RulesConfig  # noqa: E402
from pipelines.nlvr2.records import Example  # noqa: E402
from pipelines.nlvr2.rules import PaperRules  # noqa: E402
from tests.beam_testing import local_test_pipeline  # noqa: E402
from transforms.core.stage import MAIN  # noqa: E402

JUDGES = (("careful1", 0.95), ("careful2", 0.95), ("careless1", 0.5), ("careless2", 0.5))


def _examples(n=80, seed=7):
    """Dev examples, one per (set, sentence) group, each judged by two careful and two
    careless judges; plus a train example, which has no extra judgements to aggregate."""
    rng = random.Random(seed)
    made = []
    for i in range(n):
        label = rng.random() < 0.5
        text, other = ("True", "False") if label else ("False", "True")
        extra = tuple((w, text if rng.random() < right else other) for w, right in JUDGES)
        made.append(Example(split="dev", set_id=i, pair=0, sentence_id=0, sentence="A dog.",
                            left_url=f"http://l{i}", right_url=f"http://r{i}", writer="w",
                            validation=(("v", text),), label=label, synset="dog", query="dog0",
                            extra_validations=extra))
    made.append(dataclasses.replace(made[0], split="train", extra_validations=()))
    return made


def _kept(examples, aggregation):
    with local_test_pipeline() as p:
        checked = p | beam.Create(examples) | PaperRules(RulesConfig(), aggregation)
        expected = _expected(examples, aggregation)
        assert_that(checked[MAIN] | beam.Map(lambda x: x.identifier), equal_to(expected))
    return expected


def _expected(examples, aggregation):
    def text(x):
        return "True" if x.label else "False"
    dev = [x for x in examples if x.split != "train"]
    if aggregation == "majority":
        kept = [x for x in dev if sum(j != text(x) for _, j in x.extra_validations) < 2]
    else:
        frame = pd.DataFrame([(x.identifier, w, j) for x in dev for w, j in x.extra_validations],
                             columns=["task", "worker", "label"])
        theirs = crowdkit.DawidSkene(n_iter=100, tol=1e-5).fit_predict(frame)
        kept = [x for x in dev if theirs[x.identifier] == text(x)]
    return [x.identifier for x in kept] + [x.identifier for x in examples if x.split == "train"]


def test_dawid_skene_removes_what_crowdkit_labels_otherwise_and_less_than_the_count():
    examples = _examples()
    by_count, by_ds = set(_kept(examples, "majority")), set(_kept(examples, "dawid_skene"))
    assert by_ds - by_count, "Dawid-Skene must keep an example careless judges outvoted"
    assert len(by_ds) > len(by_count)
