"""NLVR2's collection stages S1-S9 on the embedded sample (one build for the module)."""
import json
import os
import pickle

import apache_beam as beam
import pytest
import yaml
from apache_beam.runners.runner import PipelineState

from pipelines.config import from_dict
from pipelines.nlvr2.collection import reasons as collection_reasons
from pipelines.nlvr2.collection.collect import CollectExamples, collection_tables, preflight, stage_links
from pipelines.nlvr2.collection.config import CollectionConfig
from pipelines.nlvr2.collection.rounds import PRUNING_COLUMNS, pruning_check
from pipelines.nlvr2.records import IDENTIFIER
from pipelines.nlvr2.sample import (CONFIG, answer_interest, answer_pruning, answer_writing,
                                    make_nlvr2_sample)
from pipelines.nlvr2.tables import IMAGE_SETS, QUERIES
from schemas import reasons as library_reasons
from tests.beam_testing import local_test_pipeline
from transforms.core.errors import ConfigError, InputError
from transforms.core.stage import MAIN, REJECTS, check_links, read_stage_counts, reconcile
from transforms.crowd.answer_files import parse_file


def _config(folder, **inputs):
    with open(CONFIG, encoding="utf-8") as f:
        raw = yaml.safe_load(f)
    for key, value in raw["collection"]["inputs"].items():
        raw["collection"]["inputs"][key] = os.path.join(folder, os.path.basename(value))
    raw["collection"]["inputs"].update(inputs)
    return raw["seed"], from_dict(CollectionConfig, raw["collection"], "collection.")


def _build(folder, staging, **inputs):
    seed, cfg = _config(folder, **inputs)
    p = local_test_pipeline()
    out = p | CollectExamples(cfg, seed, staging)
    names = (MAIN, REJECTS, *collection_tables(cfg))
    for name in names:
        _ = out[name] | f"Collect {name}" >> beam.combiners.ToList() | f"Keep {name}" >> beam.Map(
            _dump, os.path.join(staging, f"{name}.pickle"))
    result = p.run()
    result.wait_until_finish()
    assert result.state == PipelineState.DONE
    found = {}
    for name in names:
        with open(os.path.join(staging, f"{name}.pickle"), "rb") as f:
            found[name] = pickle.load(f)
    return cfg, found, read_stage_counts(result)


def _dump(items, path):
    with open(path, "wb") as f:
        pickle.dump(items, f)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("nlvr2-sample"))
    make_nlvr2_sample(folder)
    staging = str(tmp_path_factory.mktemp("staging"))
    cfg, found, counts = _build(folder, staging)
    return folder, staging, cfg, found, counts


def test_every_collection_reason_occurs(sample):
    _, _, _, found, _ = sample
    seen = {r.reason for r in found[REJECTS]}
    expected = set(collection_reasons.COLLECTION_REASONS) | {
        library_reasons.BAD_JSON, library_reasons.MISSING_FIELD, library_reasons.BAD_FIELD,
        library_reasons.UNREADABLE_IMAGE}
    assert expected - seen == set()


def test_examples_reach_the_removal_with_their_extra_judgements(sample):
    """The §3.4 removal is the paper's rules' stage, after the agreement before removal
    is measured: the collection hands over examples that break it (the sample has some)."""
    _, _, _, found, _ = sample
    assert any(sum((j == "True") != e.label for _, j in e.extra_validations) >= 2 for e in found[MAIN])


def test_counters_reconcile_and_links_hold(sample):
    _, _, cfg, found, counts = sample
    assert reconcile(counts) == []
    assert check_links(counts, stage_links(cfg)) == []
    for table, spec in collection_tables(cfg).items():
        assert len(found[table]) == counts[spec.stage][spec.counter], table
    assert len(found[MAIN]) == counts["extra_validation"]["example.out"]


def test_examples_are_well_formed(sample):
    _, _, _, found, _ = sample
    examples = found[MAIN]
    assert examples
    assert {e.split for e in examples} == {"train", "dev", "test1", "test2"}
    for e in examples:
        assert IDENTIFIER.match(e.identifier)
        assert e.validation[0][1] == str(e.label)
        assert os.path.isfile(e.left_image) and os.path.isfile(e.right_image)
        assert (e.directory is not None) == (e.split == "train")
        assert bool(e.extra_validations) == (e.split != "train")
        assert len(e.extra_validations) <= 4
    # set ids run 0..n-1 within each split; both sentences of a (set, pair) share the URLs
    for split in {e.split for e in examples}:
        ids = {e.set_id for e in examples if e.split == split}
        assert ids == set(range(len(ids)))
    urls = {}
    for e in examples:
        assert urls.setdefault((e.split, e.set_id, e.pair), (e.left_url, e.right_url)) == (e.left_url, e.right_url)
    # a group (set x sentence) never has more than 2 True or 2 False
    groups = {}
    for e in examples:
        groups.setdefault(e.group, []).append(e.label)
    assert all(labels.count(True) <= 2 and labels.count(False) <= 2 for labels in groups.values())
    ids = [e.identifier for e in examples]
    assert len(ids) == len(set(ids))


def test_same_seed_same_examples(sample, tmp_path):
    folder, _, _, found, _ = sample
    _, again, _ = _build(folder, str(tmp_path))
    assert sorted(map(repr, again[MAIN])) == sorted(map(repr, found[MAIN]))


def test_tables(sample):
    _, _, _, found, _ = sample
    assert {q["kind"] for q in found[QUERIES]} == {"quantity", "collective_noun", "hypernym", "activity"}
    assert all(len(json.loads(row["pairs"])) == 4 for row in found[IMAGE_SETS])


def test_task_files_round_trip(sample, tmp_path):
    """The pruning tasks the build exports, answered, are rows the round's check accepts."""
    _, staging, _, _, _ = sample
    with open(os.path.join(staging, "tasks", "pruning.jsonl"), encoding="utf-8") as f:
        tasks = [json.loads(line) for line in f]
    assert tasks
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in answer_pruning(tasks, 0)), encoding="utf-8")
    positions = {t["set"]: tuple(i["image"] for i in t["images"]) for t in tasks}
    with open(answers, "rb") as f:
        rows = list(parse_file(str(answers), f, "jsonl", PRUNING_COLUMNS))
    assert rows and all(r.error is None for r in rows)
    assert all(not hasattr(pruning_check(r.fields, positions), "reason") for r in rows)
    for name in ("search_queries", "interest", "writing", "validation", "extra_validation"):
        assert os.path.getsize(os.path.join(staging, "tasks", f"{name}.jsonl")) > 0, name


def test_a_round_left_empty_ends_the_collection_after_its_tasks(sample, tmp_path):
    folder = sample[0]
    cfg, found, counts = _build(folder, str(tmp_path), sentences="", validations="", extra_validations="")
    assert found[MAIN] == [] and found[IMAGE_SETS]
    assert reconcile(counts) == [] and check_links(counts, stage_links(cfg)) == []
    with open(tmp_path / "tasks" / "writing.jsonl", encoding="utf-8") as f:
        writing = [json.loads(line) for line in f]
    assert len(writing) == 2 * len(found[IMAGE_SETS])
    assert all(len(t["pairs"]) == 4 for t in writing)
    assert os.path.getsize(tmp_path / "tasks" / "validation.jsonl") == 0
    # the same seed gives the same tasks as the full build exported
    with open(os.path.join(sample[1], "tasks", "writing.jsonl"), encoding="utf-8") as f:
        assert [json.loads(line) for line in f] == writing


def test_preflight(sample, tmp_path):
    folder = sample[0]
    _, cfg = _config(folder)
    preflight(cfg)   # the sample's files are usable
    _, cfg = _config(folder, sentences=str(tmp_path / "none.jsonl"))
    with pytest.raises(InputError, match="none.jsonl"):
        preflight(cfg)
    _, cfg = _config(folder, search_results="")
    with pytest.raises(ConfigError, match="collection.inputs.search_results"):
        preflight(cfg)
    bad = tmp_path / "answers.csv"
    bad.write_text("set,image\nq#0,1\n", encoding="utf-8")
    _, cfg = _config(folder, pruning_answers=str(bad))
    with pytest.raises(InputError, match="verdict"):
        preflight(cfg)


def _rows(path):
    if path.endswith(".csv"):
        import csv
        with open(path, encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip().endswith("}")]


@pytest.mark.parametrize("task_file, answer_file, answer", [
    ("pruning.jsonl", "pruning_answers.csv", answer_pruning),
    ("interest.jsonl", "interest_answers.jsonl", answer_interest),
    ("writing.jsonl", "sentences.jsonl", answer_writing)])
def test_the_sample_answers_the_tasks_the_build_exports(sample, task_file, answer_file, answer):
    """Each round's answers are the build's own task file answered (then bad rows added)."""
    folder, staging, _, _, _ = sample
    with open(os.path.join(staging, "tasks", task_file), encoding="utf-8") as f:
        tasks = [json.loads(line) for line in f]
    expected = [{k: (str(v) if answer_file.endswith(".csv") else v) for k, v in row.items()}
                for row in answer(tasks, 0)]
    assert _rows(os.path.join(folder, answer_file))[:len(expected)] == expected
