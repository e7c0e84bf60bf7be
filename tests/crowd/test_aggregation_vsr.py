"""VSR's keep rule under crowd.aggregation (pipelines/vsr/validation.py Verdicts, KeepRule):
majority is the paper's count; dawid_skene keeps exactly what crowd-kit's DawidSkene over
the validators' votes labels with the writer's label, and so keeps examples a careless
pair of validators outvoted."""
import random

import apache_beam as beam
import pandas as pd
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

crowdkit = pytest.importorskip("crowdkit.aggregation")

from pipelines.vsr.records import Example, VotedExample  # noqa: E402
from pipelines.vsr.validation import AgreementRule, KeepRule, Verdicts  # noqa: E402
from transforms.core.stage import MAIN  # noqa: E402


def _voted_examples(n=60, seed=3):
    """Writers right every time; three careful validators (one skips every other example)
    and two careless ones (right half the time)."""
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        label = int(rng.random() < 0.5)
        votes = {1: [], 0: []}
        for worker, right in (("careful1", 0.9), ("careful2", 0.9), ("careful3", 0.9),
                              ("careless1", 0.5), ("careless2", 0.5)):
            if worker == "careful3" and i % 2:
                continue
            votes[label if rng.random() < right else 1 - label].append(worker)
        e = Example(f"e{i:03d}", "img.jpg", "", f"caption {i}", label, "left of", "cat", "dog", "writer")
        examples.append(VotedExample(e, tuple(votes[1]), tuple(votes[0])))
    return examples


def _kept(examples, aggregation):
    with BeamTestPipeline() as p:
        verdicts = p | beam.Create(examples) | Verdicts(AgreementRule(aggregation=aggregation))
        kept = verdicts | KeepRule(AgreementRule(aggregation=aggregation))
        ids = kept[MAIN] | beam.Map(lambda v: v.example.example_id)
        expected = _expected(examples, aggregation)
        assert_that(ids, equal_to(expected))
    return expected


def _expected(examples, aggregation):
    if aggregation == "majority":
        rule = AgreementRule()
        return [v.example.example_id for v in examples if rule.keeps(v.agreeing, v.validators)]
    frame = pd.DataFrame([(v.example.example_id, w, label) for v in examples
                          for label, side in ((1, v.vote_true), (0, v.vote_false)) for w in side],
                         columns=["task", "worker", "label"])
    theirs = crowdkit.DawidSkene(n_iter=100, tol=1e-5).fit_predict(frame)
    return [v.example.example_id for v in examples if theirs.get(v.example.example_id) == v.example.label]


def test_dawid_skene_keeps_what_crowdkit_labels_and_more_than_the_count():
    examples = _voted_examples()
    by_count = set(_kept(examples, "majority"))
    by_ds = set(_kept(examples, "dawid_skene"))
    assert by_ds - by_count, "Dawid-Skene must keep an example careless validators outvoted"
    assert len(by_ds) > len(by_count)


def test_the_config_names_the_method_and_refuses_others():
    from pipelines.config import load_config
    from pipelines.vsr.config import VsrConfig
    from transforms.core.errors import ConfigError
    paper, given = "pipelines/vsr/configs/paper.yaml", ["inputs.annotations=[x.jsonl]"]
    assert load_config(paper, given, VsrConfig).crowd.aggregation == "majority"
    chosen = load_config(paper, given + ["crowd.aggregation=dawid_skene"], VsrConfig)
    assert chosen.crowd.aggregation == "dawid_skene"
    with pytest.raises(ConfigError, match="crowd.aggregation"):
        load_config(paper, given + ["crowd.aggregation=median"], VsrConfig)
