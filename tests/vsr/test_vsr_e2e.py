"""The whole VSR build on the embedded sample (COCO pairs, caption and validation rounds,
public-layout lines, extra labels) on the multi-process runner, then reloading the
release the ways its users do."""
import collections
import glob
import json
import os

import pyarrow.parquet as pq
import pytest

from pipelines import build as build_command
from pipelines.release.write.manifest import verify_manifest
from pipelines.vsr import reasons
from pipelines.vsr.annotations import parse_public_line
from pipelines.vsr.captions import CaptionParser
from pipelines.vsr.records import example_id
from pipelines.vsr.relations import RELATIONS
from pipelines.vsr.sample import make_vsr_sample
from pipelines.vsr.tables import EXAMPLE_SCHEMA, PAIR_SCHEMA
from schemas.tfexample import tf_feature_spec

SAMPLE_CONFIG = "pipelines/vsr/configs/sample.yaml"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_vsr_sample(str(tmp_path_factory.mktemp("sample")))


def build(sample, out, *extra):
    files = {"coco": [f"{sample}/instances_train2017.json", f"{sample}/instances_val2017.json",
                      f"{sample}/instances_broken.json"],
             "annotations": [f"{sample}/public_layout.jsonl"], "captions": [f"{sample}/captions.jsonl"],
             "votes": [f"{sample}/votes.jsonl"], "extra_labels": [f"{sample}/extra_labels.jsonl"]}
    sets = [a for key, paths in files.items() for a in ("--set", f"inputs.{key}=[{','.join(paths)}]")]
    return build_command.build("vsr", ["--config", SAMPLE_CONFIG, "--output", str(out), "--version", "1.0.0", *sets,
                           *extra])


@pytest.fixture(scope="module")
def release(sample, tmp_path_factory):
    return build(sample, tmp_path_factory.mktemp("out"), "--direct_running_mode=multi_processing",
                 "--direct_num_workers=2")


def test_layout_counts_and_manifest(release):
    assert sorted(os.listdir(release)) == ["BUILD.json", "DATACARD.md", "MANIFEST.json", "README.md", "RELEASE_NOTES.md", "compat",
                                           "croissant.json", "crowd", "explorer", "parquet", "plots", "rejects", "stats",
                                           "tasks", "tfrecord"]
    # the rounds' worker pages and Label Studio projects (docs/crowd.md)
    assert {"pages", "labelstudio"} <= set(os.listdir(os.path.join(release, "crowd")))
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert manifest["reconciled"] is True and verify_manifest(release) == []
    assert manifest["config"]["sampling"]["min_area"] == 30000
    tables = manifest["counts"]["tables"]
    assert tables["image_pairs"]["total"] == 12
    # 12 pairs x 2 examples + 4 good public lines, minus 5 below 2/3 agreement
    assert tables["examples"]["total"] == 24
    assert manifest["leakage_check"]["passed"] is True
    extra = manifest["figures"]["agreement"]["extra_labels"]
    assert extra["examples"] == 5 and extra["extra_labels"] == 10
    sampling = manifest["figures"]["sampling"]
    assert (sampling["pairs_requested"], sampling["pairs_sampled"], sampling["shortfall"]) == (12, 12, 0)
    assert sampling["stopped"] == "pairs reached"
    stages = manifest["stages"]
    # every image read is in a pool or rejected (too_few_concepts); every pair is captioned or not
    assert stages["pair_sampling"]["image.in"] == stages["coco"]["image.out"]
    assert stages["pair_sampling"]["image.in"] == (stages["pair_sampling"]["image.out"]
                                                   + stages["pair_sampling"]["image.rejected.too_few_concepts"])
    assert stages["captions"]["pair.in"] == 12 == stages["captions"]["pair.out"]
    # validation takes in exactly what the two sources gave, less duplicates
    merged = stages["examples"]
    assert merged["example.in_from_captions"] == stages["captions"]["example.out"] == 24
    assert merged["example.in_from_annotations"] == stages["annotations"]["line.out"]
    assert stages["validation"]["example.in"] == merged["example.out"] == (
        merged["example.in_from_captions"] + merged["example.in_from_annotations"])
    assert "Image-pair sampling" in open(os.path.join(release, "DATACARD.md")).read()


def test_every_kind_of_bad_input_has_its_reason(release):
    by_stage = json.load(open(os.path.join(release, "rejects", "_counts.json")))["by_stage"]
    assert by_stage["coco"] == {"file": {reasons.MALFORMED_COCO: 1},
                                "annotation": {reasons.BAD_COCO_RECORD: 1},
                                "image": {reasons.DUPLICATE_COCO_IMAGE: 1}}
    sampling = by_stage["pair_sampling"]
    assert sampling["annotation"] == {reasons.UNKNOWN_CATEGORY: 1, reasons.UNKNOWN_IMAGE: 1}
    assert set(sampling["image_concept"]) == {reasons.MULTIPLE_INSTANCES, reasons.SMALL_INSTANCE,
                                              reasons.BAD_COCO_RECORD}
    # the annotation without area names image 1's cat: cat is not eligible there
    assert sampling["image_concept"][reasons.BAD_COCO_RECORD] == 1
    assert set(sampling["image"]) == {reasons.FEW_CONCEPTS}
    # the sample's answers name exactly the pairs this (multi-process) build sampled
    assert by_stage["captions"]["line"] == {reasons.BAD_JSON: 1, reasons.UNKNOWN_PAIR: 1,
                                            reasons.RELATION_NOT_IN_LIST: 1,
                                            reasons.DUPLICATE_CAPTION: 1, reasons.BAD_FIELD: 1}
    assert by_stage["annotations"]["line"] == {
        reasons.BAD_JSON: 1, reasons.MISSING_FIELD: 1, reasons.BAD_FIELD: 1,
        reasons.DUPLICATE_EXAMPLE: 1, reasons.RELATION_NOT_IN_LIST: 1, reasons.CAPTION_UNPARSED: 1,
        reasons.RELATION_MISMATCH: 1, reasons.UNKNOWN_IMAGE: 1}
    assert by_stage["votes"]["line"] == {reasons.MISSING_FIELD: 1, reasons.UNKNOWN_EXAMPLE: 1}
    assert by_stage["vote_rules"]["vote"] == {reasons.WRITER_VOTE: 1, reasons.DUPLICATE_VOTE: 1,
                                              reasons.CONFLICTING_VOTES: 2}
    assert by_stage["validation"]["example"] == {reasons.LOW_AGREEMENT: 5}
    rejects = pq.read_table(os.path.join(release, "rejects")).to_pylist()
    conflict = [r for r in rejects if r["reason"] == reasons.CONFLICTING_VOTES]
    assert {r["item_id"].split("/")[1] for r in conflict} == {"true", "false"}   # both votes go


def test_pairs_tasks_and_examples(release, sample):
    pairs = pq.read_table(os.path.join(release, "parquet", "image_pairs")).to_pylist()
    assert pq.read_schema(glob.glob(os.path.join(release, "parquet", "image_pairs", "*"))[0]).names == PAIR_SCHEMA.names
    tasks = [json.loads(x) for x in open(os.path.join(release, "tasks", "caption_tasks.jsonl"))]
    assert {t["pair_id"] for t in tasks} == {p["pair_id"] for p in pairs}
    assert all(t["relations"] == "caption_relations.jsonl" and t["template"] == "The ENT1 (is) ___ the ENT2."
               for t in tasks)
    offered = [json.loads(x) for x in open(os.path.join(release, "tasks", "caption_relations.jsonl"))]
    assert len(offered) == 71 and offered[0] == {"relation": "adjacent to", "category": "Adjacency"}
    assert {o["relation"] for o in offered} == set(RELATIONS)
    rows = pq.read_table(os.path.join(release, "parquet", "examples")).to_pylist()
    by_pair = collections.defaultdict(list)
    for r in rows:
        assert r["example_id"] == example_id(r["image"], r["caption"])
        if r["pair_id"]:
            by_pair[r["pair_id"]].append(r)
    pair_of = {p["pair_id"]: p for p in pairs}
    for pid, examples in by_pair.items():
        assert {e["image"] for e in examples} <= set(pair_of[pid]["images"])
        if len(examples) == 2:     # both kept: one True and one False, the same caption
            assert sorted(e["label"] for e in examples) == [0, 1]
            assert examples[0]["caption"] == examples[1]["caption"]
    validation_tasks = [json.loads(x) for x in open(os.path.join(release, "tasks", "validation_tasks.jsonl"))]
    assert len(validation_tasks) == 24 and "label" not in validation_tasks[0]


def test_tfrecords_hold_the_parquet_rows(release):
    import tensorflow as tf
    rows = {r["example_id"]: r for r in pq.read_table(os.path.join(release, "parquet", "examples")).to_pylist()}
    files = tf.io.gfile.glob(os.path.join(release, "tfrecord", "examples", "*.tfrecord"))
    spec = tf_feature_spec(tf, EXAMPLE_SCHEMA)
    seen = 0
    for record in tf.data.TFRecordDataset(files):
        ex = tf.io.parse_single_example(record, spec)
        row = rows[ex["example_id"].numpy().decode()]
        assert ex["caption"].numpy().decode() == row["caption"]
        assert int(ex["label"].numpy()) == row["label"]
        assert [v.decode() for v in tf.sparse.to_dense(ex["vote_true_validator_id"]).numpy()] == \
            row["vote_true_validator_id"]
        seen += 1
    assert seen == len(rows)


def test_compat_files_round_trip_to_the_rows(release):
    rows = {r["example_id"]: r for r in pq.read_table(os.path.join(release, "parquet", "examples")).to_pylist()}
    relations = frozenset(RELATIONS) | {"congruent"}
    parser = CaptionParser(relations)
    for scheme, column in (("random", "split"), ("zeroshot", "zeroshot_split")):
        seen = set()
        for split in ("train", "dev", "test"):
            for line in open(os.path.join(release, "compat", "splits", scheme, f"{split}.jsonl")):
                example, vote_true, vote_false = parse_public_line(line, parser, relations)
                row = rows[example.example_id]
                assert row[column] == split and example.example_id not in seen
                seen.add(example.example_id)
                assert (example.subj, example.obj, example.label) == (row["subj"], row["obj"], row["label"])
                assert list(vote_true) == row["vote_true_validator_id"]
                public = json.loads(line)
                assert public["subj"] == row["subj"]
                # ids have one type in the whole release: the compat line's are the row's
                assert [public["annotator_id"], public["vote_true_validator_id"],
                        public["vote_false_validator_id"]] == [
                    row["annotator_id"], row["vote_true_validator_id"], row["vote_false_validator_id"]]
        assert seen == {k for k, r in rows.items() if r[column]}
