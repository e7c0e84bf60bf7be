"""The whole ImageCoDe video-frame build on the embedded sample, then reloading it."""
import glob
import json
import os

import pyarrow.parquet as pq
import pytest

from pipelines import imagecode
from pipelines.release import ReleaseError
from pipelines.samples import make_imagecode_sample
from schemas import reasons
from schemas.manifest import verify_manifest
from schemas.names import parse_video_set_name
from schemas.tfexample import tf_feature_spec

SAMPLE_CONFIG = "pipelines/configs/imagecode_sample.yaml"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return str(make_imagecode_sample(str(tmp_path_factory.mktemp("sample"))))


def build(sample, out, version="1.0.0", *extra):
    return imagecode.run(["--config", SAMPLE_CONFIG, "--set", f"inputs.videos={sample}",
                          "--output", str(out), "--version", version, *extra])


@pytest.fixture(scope="module")
def release(sample, tmp_path_factory):
    return build(sample, tmp_path_factory.mktemp("out"))


def set_rows(release_dir):
    table = pq.read_table(os.path.join(release_dir, "parquet"))
    return sorted(table.to_pylist(), key=lambda r: r["set_name"])


def test_release_layout_and_counts(release):
    assert sorted(os.listdir(release)) == ["DATACARD.md", "MANIFEST.json", "compat", "parquet",
                                           "rejects", "tfrecord"]
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert manifest["version"] == "1.0.0" and manifest["benchmark"] == "imagecode"
    assert manifest["models"]["image_encoder"]["kind"] == "thumbnail"
    assert manifest["config"]["mining"]["distance_threshold"] == 0.35
    assert manifest["reconciled"] is True
    assert verify_manifest(release) == []
    by_split = manifest["counts"]["framesets"]["by_split"]
    assert set(by_split) == {"train", "valid", "test"}, "the sample yields sets in every split"
    assert "stand-in encoder" in open(os.path.join(release, "DATACARD.md")).read()


def test_every_kind_of_bad_input_lands_in_rejects_with_its_reason(release):
    rejects = pq.read_table(os.path.join(release, "rejects")).to_pylist()
    found = {r["reason"] for r in rejects}
    assert {reasons.BAD_JSON, reasons.MISSING_FIELD, reasons.PATH_NOT_FOUND,
            reasons.UNREADABLE_VIDEO, reasons.SHOT_TOO_SHORT, reasons.TOO_SIMILAR,
            reasons.BLURRY, reasons.TEXT, reasons.UNFINISHED_SET} <= found
    unreadable = [r for r in rejects if r["reason"] == reasons.UNREADABLE_VIDEO]
    assert unreadable[0]["video_id"] == "video9001" and unreadable[0]["detail"]


def test_parquet_rows_are_sets_of_ten_in_temporal_order(release):
    rows = set_rows(release)
    assert rows
    for row in rows:
        assert len(row["frame_indices"]) == 10 == len(row["image_paths"])
        assert row["frame_indices"] == sorted(row["frame_indices"])
        assert row["distance_min"] > 0.35
        assert max(row["brisque_scores"]) <= 0.65  # BRISQUE/100, the §3.1 cut-off
        assert max(row["text_chars"]) <= 10
        for path in row["image_paths"]:
            assert os.path.isfile(os.path.join(release, path))


def test_compat_layout_follows_the_public_grammar(release):
    folders = sorted(os.listdir(os.path.join(release, "compat", "image-sets")))
    assert folders == [r["set_name"] for r in set_rows(release)]
    for name in folders:
        parsed = parse_video_set_name(name)
        files = os.listdir(os.path.join(release, "compat", "image-sets", name))
        assert len(files) == 10 and all(f.startswith("img") and f.endswith(".jpg") for f in files)
        assert parsed.source in {"msr-vtt", "video-storytelling", "youcook"}


def test_tfrecords_parse_as_tf_train_examples(release):
    import tensorflow as tf  # a test dependency (requirements-dev.txt)
    files = sorted(glob.glob(os.path.join(release, "tfrecord", "*")))
    parsed = [tf.io.parse_single_example(r, tf_feature_spec(tf))
              for r in tf.data.TFRecordDataset(files)]
    names = sorted(p["set_name"].numpy().decode() for p in parsed)
    assert names == [r["set_name"] for r in set_rows(release)]


def test_an_existing_version_is_never_overwritten(sample, release):
    out = os.path.dirname(os.path.dirname(release))
    before = open(os.path.join(release, "MANIFEST.json")).read()
    with pytest.raises(ReleaseError, match="already exists"):
        build(sample, out)
    assert open(os.path.join(release, "MANIFEST.json")).read() == before


def test_same_config_gives_the_same_sets_on_the_multi_process_runner(sample, release, tmp_path):
    other = build(sample, tmp_path, "1.0.0", "--direct_running_mode=multi_processing",
                  "--direct_num_workers=2")
    assert set_rows(other) == set_rows(release)
    a = pq.read_table(os.path.join(release, "rejects")).to_pylist()
    b = pq.read_table(os.path.join(other, "rejects")).to_pylist()
    key = lambda r: (r["stage"], r["level"], r["item_id"], r["reason"])  # noqa: E731
    assert sorted(map(key, a)) == sorted(map(key, b))


def test_a_threshold_override_changes_the_release(sample, release, tmp_path):
    other = build(sample, tmp_path, "1.1.0", "--set", "mining.distance_threshold=0.5")
    manifest = json.load(open(os.path.join(other, "MANIFEST.json")))
    assert manifest["config"]["mining"]["distance_threshold"] == 0.5
    assert all(r["distance_min"] > 0.5 for r in set_rows(other))
    assert len(set_rows(other)) < len(set_rows(release))
