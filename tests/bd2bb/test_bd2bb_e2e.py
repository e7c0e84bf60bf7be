"""The whole BD2BB build on the embedded sample: on the multi-process runner (pickling),
again in-process (same release, embeddings from the cache), and with review decisions;
then the release read back the ways its users read it."""
import collections
import csv
import json
import os

import pyarrow.parquet as pq
import pytest

from pipelines import build as build_command
from pipelines.bd2bb import compat, reasons
from pipelines.bd2bb.argument_codes import nouns_of, verbs_of
from pipelines.bd2bb.records import Codes, coco_image_id
from pipelines.bd2bb.sample import TOPICS, make_bd2bb_sample
from pipelines.bd2bb.tables import SAMPLE_SCHEMA
from pipelines.release.write.manifest import run_counters, verify_manifest
from schemas.tfexample import iter_tfrecord_file, parse_example_bytes, tf_feature_spec
from transforms.core.errors import ConfigError
from transforms.text.tokens import normalise_text

CONFIG = "pipelines/bd2bb/configs/sample.yaml"
EXPECTED_REJECTS = {reasons.BAD_JSON: 1, reasons.BAD_ENCODING: 1, reasons.MISSING_FIELD: 1,
                    reasons.DUPLICATE_TUPLE: 2, reasons.TOO_LONG: 1,
                    reasons.NONSENSE: 2, reasons.NOT_ENGLISH: 4, reasons.SHORT_INTENTION: 3,
                    reasons.NO_PARSE: 2, reasons.NO_MAIN_VERB: 1, reasons.NO_NOUN_OR_PRONOUN: 2,
                    reasons.BAD_PARSE: 2,   # the malformed CoNLL-U sentence and its action's tuple
                    reasons.NO_CAPTIONS: 1,
                    reasons.MENTIONS_IMAGE_ENTITY: 3}


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return os.path.dirname(str(make_bd2bb_sample(str(tmp_path_factory.mktemp("bd2bb_sample")))))


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return str(tmp_path_factory.mktemp("releases"))


def build(sample, out, version, *extra):
    return build_command.build("bd2bb", ["--config", CONFIG, "--output", out, "--version", version,
                             "--set", f"inputs.tuples={sample}/tuples.jsonl",
                             "--set", f"inputs.captions={sample}/captions.json",
                             "--set", f"inputs.parses={sample}/actions.conllu", *extra])


@pytest.fixture(scope="module")
def release(sample, out):
    return build(sample, out, "1.0.0", "--direct_running_mode=multi_processing", "--direct_num_workers=2")


def rows_of(release_dir):
    return sorted(pq.read_table(os.path.join(release_dir, "parquet", "samples")).to_pylist(),
                  key=lambda r: r["sample_id"])


def manifest_of(release_dir):
    with open(os.path.join(release_dir, "MANIFEST.json")) as f:
        return json.load(f)


def test_layout_manifest_and_counts(release):
    assert sorted(os.listdir(release)) == ["BUILD.json", "DATACARD.md", "MANIFEST.json", "README.md", "RELEASE_NOTES.md", "compat",
                                           "croissant.json", "explorer", "parquet", "plots", "rejects", "review", "stats",
                                           "tfrecord"]
    manifest = manifest_of(release)
    assert manifest["benchmark"] == "bd2bb" and manifest["reconciled"] is True
    assert verify_manifest(release) == []
    assert manifest["models"]["sentence_encoder"]["weights_sha256"]
    assert manifest["counts"]["rejects"]["by_reason"] == EXPECTED_REJECTS
    assert manifest["counts"]["tables"]["samples"]["total"] == 200
    assert set(manifest["counts"]["tables"]["samples"]["by_split"]) == {"train", "val", "test"}
    card = open(os.path.join(release, "DATACARD.md")).read()
    for needle in ("Statistics per split (Table 1)", "hard test (§7)", "![elbow](plots/elbow.png)",
                   "Topic clusters", "Target positions", "All stage counters reconcile"):
        assert needle in card
    assert os.path.getsize(os.path.join(release, "plots", "elbow.png")) > 1000


def test_clusters_recover_the_generated_topics(release):
    clusters = manifest_of(release)["figures"]["clusters"]
    assert clusters["k"] == 8 and clusters["method"] == "elbow"   # the sample has 8 topics
    # every generated action's first code2 noun is one of its topic's nouns (no noun is in
    # two topics), so a row's generated topic is known: each cluster must hold one topic
    topic_of_noun = {noun: topic for topic, (nouns, _, _) in TOPICS.items() for noun in nouns}
    topics_in = {}
    for r in rows_of(release):
        topics_in.setdefault(r["cluster"], set()).add(topic_of_noun[r["code2"][0]])
    assert len(topics_in) == 8
    assert all(len(topics) == 1 for topics in topics_in.values()), topics_in
    assert sorted(t for topics in topics_in.values() for t in topics) == sorted(TOPICS)


def test_rows_carry_codes_and_decoys_follow_the_rules(release):
    rows = rows_of(release)
    by_action = {normalise_text(r["action"]): r for r in rows}
    for r in rows:
        # one canonical spelling for all five endings: the target is not told by its casing
        assert r["endings"][r["label"]] == normalise_text(r["action"]) and r["ending_types"][r["label"]] == "targ"
        assert all(e == normalise_text(e) for e in r["endings"])
        assert sorted(r["ending_types"]) == ["lan", "lan", "targ", "vis", "vis"]
        target = Codes(r["code1"], tuple(r["code2"]), r["code3"], tuple(r["code4"]))
        assert target.code1, r["action"]
        for text, kind in zip(r["endings"], r["ending_types"]):
            if kind == "targ":
                continue
            other = by_action[normalise_text(text)]
            codes = Codes(other["code1"], tuple(other["code2"]), other["code3"], tuple(other["code4"]))
            if kind == "lan":
                assert other["cluster"] != r["cluster"] and not nouns_of(codes) & nouns_of(target)
            else:
                assert other["cluster"] == r["cluster"] and not verbs_of(codes) & verbs_of(target)
    one = next(r for r in rows if r["action"] == "try to drive the ticket")
    assert (one["code1"], one["code2"], one["code3"], one["code4"]) == ("drive", ["ticket"], "", [])
    typed = [r for r in rows if r["annotator"] == "worker99"]     # the sample's capitalised duplicate
    assert len(typed) == 1 and typed[0]["action"] != normalise_text(typed[0]["action"])


def test_tfrecords_hold_the_same_rows(release):
    folder = os.path.join(release, "tfrecord", "samples")
    files = sorted(n for n in os.listdir(folder) if n.endswith(".tfrecord"))
    examples = [parse_example_bytes(b, SAMPLE_SCHEMA) for f in files
                for b in iter_tfrecord_file(os.path.join(folder, f))]
    by_id = {e["sample_id"]: e for e in examples}
    for r in rows_of(release):
        e = by_id[r["sample_id"]]
        assert e["endings"] == r["endings"] and e["label"] == r["label"] and e["code2"] == r["code2"]
        assert e["hard_test"] == int(r["hard_test"])


def test_tensorflow_reads_the_tfrecords(release):
    import tensorflow as tf  # a test dependency (requirements-dev.txt); see tests/conftest.py
    spec = tf_feature_spec(tf, SAMPLE_SCHEMA)
    files = sorted(tf.io.gfile.glob(os.path.join(release, "tfrecord", "samples", "*.tfrecord")))
    parsed = {}
    for record in tf.data.TFRecordDataset(files):
        e = tf.io.parse_single_example(record, spec)
        parsed[e["sample_id"].numpy().decode()] = {
            "endings": [x.decode() for x in tf.sparse.to_dense(e["endings"]).numpy()],
            "label": int(e["label"]), "code1": e["code1"].numpy().decode()}
    rows = rows_of(release)
    assert len(parsed) == len(rows) == 200
    for r in rows:
        assert parsed[r["sample_id"]] == {"endings": r["endings"], "label": r["label"], "code1": r["code1"]}


def test_compat_files_read_like_the_public_release(release):
    folder = os.path.join(release, "compat")
    files = {name: compat.read_file(os.path.join(folder, f)) for name, f in compat.FILES.items()}
    assert [p for rows in files.values() for row in rows for p in compat.problems(row)] == []
    ids = {name: [r["id"] for r in rows] for name, rows in files.items()}
    assert sorted(ids["train"] + ids["val"] + ids["test"], key=int) == ids["all"]
    assert set(ids["hard"]) <= set(ids["test"])
    rows = rows_of(release)
    assert len(ids["all"]) == len(rows) and len(ids["hard"]) == sum(r["hard_test"] for r in rows)
    by_id = {str(i): r for i, r in enumerate(sorted(rows, key=lambda r: r["sample_id"]), 1)}
    for csv_row in files["all"]:
        r = by_id[csv_row["id"]]
        assert csv_row["sent1"] == r["intention"] and csv_row[f"ending{csv_row['label']}"] == normalise_text(r["action"])
    train = [r for r in rows if r["split"] == "train"]
    seen = {coco_image_id(r["image"]) for r in train} | {normalise_text(r["intention"]) for r in train}
    train_targets = {normalise_text(r["action"]) for r in train}
    for r in rows:
        if r["hard_test"]:
            assert r["split"] == "test" and coco_image_id(r["image"]) not in seen
            assert normalise_text(r["intention"]) not in seen and normalise_text(r["action"]) not in train_targets


def test_bd2bb_json_reads_the_way_the_original_loader_reads_it(release):
    # The original loader's access pattern (re-written here): the JSON keyed by the CSV
    # row's id as a string, a one-element list, five named items.
    folder = os.path.join(release, "compat")
    whole_dataset = json.load(open(os.path.join(folder, "BD2BB.json"), encoding="utf-8"))
    rows = {r["sample_id"]: r for r in rows_of(release)}
    images = {str(i): rows[sid]["image"] for i, sid in enumerate(sorted(rows), 1)}
    names = {"targ": ["target_item"], "lan": ["lang_decoy1", "lang_decoy2"], "vis": ["vis_decoy1", "vis_decoy2"]}
    for name, f in compat.FILES.items():
        for row in compat.read_file(os.path.join(folder, f)):
            entry = whole_dataset[str(row["id"])][0]
            target = entry["target_item"]
            assert target["intention"] == row["sent1"]
            assert target["action"] == row["ending" + row["label"]]
            assert target["image_url"] == ("http://images.cocodataset.org/train2014/"
                                           f"COCO_train2014_{coco_image_id(images[row['id']]):012d}.jpg")
            # Each decoy in the CSV's shown order, named by its type and rank within it.
            seen = collections.Counter()
            for k in range(5):
                kind = row[f"end{k}type"]
                item = entry[names[kind][seen[kind]]]
                seen[kind] += 1
                assert item["action"] == row[f"ending{k}"]
                assert item["intention"] == row["sent1"] and item["image_url"] == target["image_url"]
    assert len(whole_dataset) == len(rows)


def test_target_positions_are_balanced_per_split(release):
    folder = os.path.join(release, "compat")
    for name, f in compat.FILES.items():
        counts = collections.Counter(int(r["label"]) for r in compat.read_file(os.path.join(folder, f)))
        per_position = [counts[k] for k in range(5)]
        assert max(per_position) - min(per_position) <= 1, (name, per_position)
    rows = rows_of(release)
    by_split = collections.defaultdict(list)
    for r in rows:
        by_split[r["split"]].append(r["label"])
    assert sorted(by_split) == ["test", "train", "val"]
    for labels in by_split.values():
        per_position = [labels.count(k) for k in range(5)]
        assert max(per_position) - min(per_position) <= 1, per_position
    report = json.load(open(os.path.join(release, "stats", "target_positions.json")))[0]
    assert report["per_split"]["train"] == [by_split["train"].count(k) for k in range(5)]
    assert max(report["counts"]) - min(report["counts"]) <= 1 and report["n"] == len(rows)


def test_in_process_rebuild_gives_the_same_release_from_the_cache(release, sample, out):
    again = build(sample, out, "1.0.1")
    assert rows_of(again) == rows_of(release)
    stages = run_counters(again)   # cache hits are the build's work: BUILD.json
    assert stages["cache.sentence_embedding"]["hit"] == 193
    assert "miss" not in stages["cache.sentence_embedding"]
    assert "1.0.0" in open(os.path.join(again, "RELEASE_NOTES.md")).read()


def test_review_decisions_label_drop_move_and_remove(release, sample, out, tmp_path):
    with open(os.path.join(release, "review", "cluster_review.csv")) as f:
        sheet = list(csv.DictReader(f))
    rows = rows_of(release)
    per_cluster = collections.Counter(r["cluster"] for r in rows)
    removed = next(s["action"] for s in sheet if s["cluster"] == "2")
    moved = next(s["action"] for s in sheet if s["cluster"] == "3")
    with open(os.path.join(release, "review", "decisions_template.csv")) as f:
        template = f.read()
    assert template.splitlines()[1].startswith("clustering,,,,")
    decisions = tmp_path / "decisions.csv"
    decisions.write_text(template + "label,0,,,topic zero\nlabel,4,,,topic four\ndrop,1,,,\n"
                         f"remove,,{removed},,\nmove,,{moved},4,\n")
    reviewed = build(sample, out, "1.1.0", "--set", f"clusters.review={decisions}")
    manifest = manifest_of(reviewed)
    by_reason = manifest["counts"]["rejects"]["by_reason"]
    n_removed = sum(normalise_text(r["action"]) == normalise_text(removed) for r in rows)
    assert by_reason[reasons.CLUSTER_DROPPED] == per_cluster[1]
    assert by_reason[reasons.ACTION_DROPPED] == n_removed
    new_rows = rows_of(reviewed)
    assert {r["cluster"] for r in new_rows} == set(range(8)) - {1}
    assert {r["cluster_label"] for r in new_rows if r["cluster"] == 0} == {"topic zero"}
    assert all(r["cluster"] == 4 and r["cluster_label"] == "topic four"
               for r in new_rows if normalise_text(r["action"]) == normalise_text(moved))
    assert not any(normalise_text(e) == normalise_text(removed) for r in new_rows for e in r["endings"])


def test_review_decisions_for_another_clustering_stop_the_build(release, sample, out, tmp_path):
    decisions = tmp_path / "stale.csv"
    decisions.write_text("decision,cluster,action,to_cluster,label\nclustering,,,,0000000000000000\n"
                         "drop,1,,,\n")
    with pytest.raises(ConfigError, match="clusters.review: the decisions were written for clustering 0000"):
        build(sample, out, "1.2.0", "--set", f"clusters.review={decisions}")
    unknown = tmp_path / "unknown.csv"
    fingerprint = manifest_of(release)["figures"]["clusters"]["fingerprint"]
    unknown.write_text(f"decision,cluster,action,to_cluster,label\nclustering,,,,{fingerprint}\n"
                       "label,42,,,nothing\n")
    with pytest.raises(ConfigError, match=r"clusters.review: the decisions name clusters \[42\]"):
        build(sample, out, "1.2.1", "--set", f"clusters.review={unknown}")
