"""A small release written by the Beam writers and the driver's table step (one set of
Parquet and TFRecord files per split, images embedded), then read back the way users
read it.

Runner: Beam 2.77's "DirectRunner" first tries Prism and downloads its binary from
GitHub, so tests use the in-process FnApiRunner (what DirectRunner falls back to for
batch pipelines) directly: nothing is downloaded.
"""
import dataclasses
import json
import os
import pathlib
import struct

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline

from pipelines.imagecode import reasons
from pipelines.imagecode.names import compat_image_path, video_set_name
from pipelines.imagecode.release import PublishCompatImages, WriteFrameSets
from pipelines.imagecode.records import FrameSet
from pipelines.imagecode.tables import FRAMESET_SCHEMA, frameset_to_row
from pipelines.release.cards.datacard import render_datacard, write_datacard
from pipelines.release.write.locations import Relocate
from pipelines.release.write.manifest import (file_checksums, finalise, new_staging_dir, release_counts,
                                              remove_work_dir, staged_release, verify_manifest,
                                              write_manifest, write_reject_counts)
from pipelines.release.write.row_paths import RowPaths
from pipelines.release.write.split_files import MAIN, partition_table
from schemas.layout import MANIFEST, REJECT_COUNTS, work_dir
from schemas.rejects import REJECT_SCHEMA, Reject, reject_to_row
from schemas.tfexample import (Example, feature_spec, iter_tfrecord_file, parse_example_bytes,
                               tf_feature_spec, to_example_bytes)
from transforms.core.stage import StageCounts, read_stage_counts
from transforms.io.release import WriteRejects


def pipeline(**options):
    return BeamTestPipeline(runner=FnApiRunner(), options=PipelineOptions(**options))


def make_set(staging, source, video_id, shot, index, split, frames):
    """A FrameSet whose JPEGs wait in the staging folder's scratch space."""
    name = video_set_name(source, video_id, shot, index)
    staged = []
    for frame in frames:
        path = pathlib.Path(work_dir(staging), "frames", f"{name}-{frame}.jpg")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"jpeg {name} {frame}".encode())
        staged.append(str(path))
    return FrameSet(
        set_name=name, source=source, video_id=video_id, split=split, shot_index=shot,
        set_index=index, frame_indices=list(frames),
        image_paths=[compat_image_path(name, f) for f in frames],
        brisque_scores=[10.5 + f for f in frames], text_chars=[f % 3 for f in frames],
        distance_min=0.125, distance_mean=0.25, distance_max=0.5, staged_images=staged)


REJECTS = [
    Reject("decode", "video", reasons.UNREADABLE_VIDEO, "MSR-VTT/broken", "MSR-VTT", "broken",
           "train", "moov atom not found"),
    Reject("mining", "frame", reasons.TOO_SIMILAR, "YouCook/v1/shot0/frame3", "YouCook", "v1",
           "valid"),
    Reject("mining", "frame", reasons.TOO_SIMILAR, "YouCook/v1/shot0/frame4", "YouCook", "v1",
           "valid"),
]


class _CountSets(beam.DoFn):
    """A stand-in stage, so the release carries real stage counters."""

    def __init__(self):
        self.counts = StageCounts("sampling")

    def process(self, fs):
        self.counts.seen(level="set")
        yield self.counts.passed(fs, level="set")


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """Write one release (3 sets, 3 rejects) and return what the test needs."""
    out = str(tmp_path_factory.mktemp("out"))
    with staged_release(out, "imagecode", "v1") as staging:
        sets = [make_set(staging, "MSR-VTT", "TrainValVideo_video2044", 1, 0, "train",
                         [3, 17, 40]),
                make_set(staging, "MSR-VTT", "TrainValVideo_video2044", 1, 1, "train",
                         [50, 61, 77]),
                make_set(staging, "YouCook", "v1", 0, 0, "valid", [0, 8, 9])]
        p = pipeline()
        published = (p | "Sets" >> beam.Create(sets)
                     | beam.ParDo(_CountSets()) | PublishCompatImages(staging))
        published | WriteFrameSets(staging, num_shards=2)
        p | "Rejects" >> beam.Create(REJECTS) | WriteRejects(staging)
        result = p.run()
        result.wait_until_finish()
        partition_table(staging, "video_sets", MAIN,
                        rewrite=lambda schema: RowPaths(schema, staging, Relocate(None, [staging])))

        counts = release_counts(staging)
        write_reject_counts(staging, counts)
        remove_work_dir(staging)
        context = {"benchmark": "ImageCoDe", "version": "v1", "summary": "Test release.",
                   "counts": counts, "thresholds": {"distance": {"value": 0.06,
                                                                 "source": "paper §3.1"}},
                   "models": {"encoder": {"name": "ViT-B-32", "sha256": "abc"}},
                   "stages": read_stage_counts(result)}
        write_datacard(staging, context)
        manifest = write_manifest(staging, {"version": "v1", "counts": counts})
    return {"out": out, "version": os.path.join(out, "imagecode", "v1"), "sets": sets,
            "counts": counts, "manifest": manifest, "context": context}


def test_version_folder_replaces_staging(release):
    assert os.listdir(os.path.join(release["out"], "imagecode")) == ["v1"]
    top = sorted(os.listdir(release["version"]))
    assert top == ["DATACARD.md", MANIFEST, "compat", "parquet", "rejects", "tfrecord"]


def test_parquet_rows_and_types(release):
    table = pq.read_table(os.path.join(release["version"], "parquet", "video_sets"))
    assert table.drop_columns(["images"]).schema.remove_metadata() == FRAMESET_SCHEMA
    names = sorted(os.listdir(os.path.join(release["version"], "parquet", "video_sets")))
    assert [n.split("-")[0] for n in names] == ["train"] * len(names[:-1]) + ["valid"]
    rows = sorted(table.to_pylist(), key=lambda r: r["set_name"])
    images = [r.pop("images") for r in rows]
    assert rows == sorted((frameset_to_row(s) for s in release["sets"]),
                          key=lambda r: r["set_name"])
    for row, embedded in zip(rows, images):   # each image's bytes and its path in the release
        assert [i["path"] for i in embedded] == row["image_paths"]
        assert [i["bytes"] for i in embedded] == [
            pathlib.Path(release["version"], p).read_bytes() for p in row["image_paths"]]


def _tfrecord_files(release):
    folder = os.path.join(release["version"], "tfrecord", "video_sets")
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".tfrecord"))


def test_tfrecord_framing_and_examples(release):
    records = [r for path in _tfrecord_files(release) for r in iter_tfrecord_file(path)]
    parsed = sorted((parse_example_bytes(r, FRAMESET_SCHEMA) for r in records), key=lambda r: r["set_name"])
    expected = sorted((frameset_to_row(s) for s in release["sets"]),
                      key=lambda r: r["set_name"])
    assert parsed == expected  # all test floats are exact in float32
    assert set(Example.FromString(records[0]).features.feature) == set(feature_spec(FRAMESET_SCHEMA))


def test_tfrecord_framing_check_catches_corruption(release, tmp_path):
    data = bytearray(pathlib.Path(_tfrecord_files(release)[0]).read_bytes())
    (length,) = struct.unpack("<Q", data[:8])
    assert length > 0
    data[12 + length // 2] ^= 0xFF  # flip a byte inside the first record
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="crc"):
        list(iter_tfrecord_file(str(bad)))


def test_tensorflow_reads_our_tfrecords(release):
    tf = pytest.importorskip("tensorflow")
    dataset = tf.data.TFRecordDataset(_tfrecord_files(release))
    parsed = {}
    for record in dataset:
        ex = tf.io.parse_single_example(record, tf_feature_spec(tf, FRAMESET_SCHEMA))
        parsed[ex["set_name"].numpy().decode()] = ex
    assert len(parsed) == len(release["sets"])
    for fs in release["sets"]:
        ex = parsed[fs.set_name]
        assert ex["split"].numpy().decode() == fs.split
        assert ex["shot_index"].numpy() == fs.shot_index
        assert ex["frame_indices"].values.numpy().tolist() == fs.frame_indices
        assert [p.decode() for p in ex["image_paths"].values.numpy()] == fs.image_paths
        assert ex["brisque_scores"].values.numpy().tolist() == fs.brisque_scores
        assert float(ex["distance_max"].numpy()) == fs.distance_max


def test_descriptor_matches_tensorflow_and_bytes_are_identical():
    tf = pytest.importorskip("tensorflow")
    ours, theirs = Example.DESCRIPTOR.file, tf.train.Example.DESCRIPTOR.file
    assert ours.name == theirs.name and ours.package == theirs.package
    for name in ("BytesList", "FloatList", "Int64List", "Feature", "Features", "Example"):
        mine = ours.pool.FindMessageTypeByName(f"tensorflow.{name}")
        tfs = theirs.pool.FindMessageTypeByName(f"tensorflow.{name}")
        assert ([(f.name, f.number, f.type, f.is_packed) for f in mine.fields]
                == [(f.name, f.number, f.type, f.is_packed) for f in tfs.fields]), name
    row = frameset_to_row(make_set("/nonexistent", "YouCook", "v9", 2, 3, "test", []))
    row.update(frame_indices=[1, 2], image_paths=["a", "b"], brisque_scores=[0.5, -1.0],
               text_chars=[0, 2**40])
    ours_bytes = to_example_bytes(row, FRAMESET_SCHEMA)
    assert tf.train.Example.FromString(ours_bytes).SerializeToString(
        deterministic=True) == ours_bytes


def test_compat_images_moved_into_place(release):
    for fs in release["sets"]:
        for frame, rel in zip(fs.frame_indices, fs.image_paths):
            path = os.path.join(release["version"], rel)
            assert rel == f"compat/image-sets/{fs.set_name}/img{frame}.jpg"
            assert pathlib.Path(path).read_bytes() == f"jpeg {fs.set_name} {frame}".encode()
        assert not any(os.path.exists(p) for p in fs.staged_images)
    assert not os.path.exists(os.path.join(release["version"], "_work"))


def test_rejects_and_counts(release):
    table = pq.read_table(os.path.join(release["version"], "rejects"))
    assert table.schema.remove_metadata() == REJECT_SCHEMA
    assert sorted(table.to_pylist(), key=lambda r: r["item_id"]) == sorted(
        (reject_to_row(r) for r in REJECTS), key=lambda r: r["item_id"])
    counts = release["counts"]
    assert counts["tables"]["video_sets"]["by_split"] == {"train": 2, "valid": 1}
    assert counts["tables"]["video_sets"]["by_source"] == {"MSR-VTT": 2, "YouCook": 1}
    assert counts["rejects"]["by_reason"] == {reasons.UNREADABLE_VIDEO: 1,
                                              reasons.TOO_SIMILAR: 2}
    with open(os.path.join(release["version"], REJECT_COUNTS)) as f:
        assert json.load(f) == counts["rejects"]


def test_manifest_checksums_verify(release, tmp_path):
    files = release["manifest"]["files"]
    assert MANIFEST not in files and "DATACARD.md" in files and REJECT_COUNTS in files
    assert sum(k.startswith("compat/image-sets/") for k in files) == 9
    assert verify_manifest(release["version"]) == []
    text = pathlib.Path(release["version"], MANIFEST).read_text()
    assert json.loads(text) == release["manifest"]
    assert text == json.dumps(release["manifest"], sort_keys=True, indent=2,
                              ensure_ascii=False) + "\n"  # stable form

    # a tampered copy is caught
    from tests.release.release_files import writable_copy
    copy = pathlib.Path(writable_copy(release["version"], str(tmp_path / "copy")))
    (copy / "DATACARD.md").write_text("changed")
    (copy / "extra.txt").write_text("x")
    os.remove(copy / release["sets"][0].image_paths[0])
    problems = verify_manifest(str(copy))
    assert problems == [f"missing: {release['sets'][0].image_paths[0]}",
                        "not in manifest: extra.txt", "checksum differs: DATACARD.md"]


def test_datacard(release):
    card = pathlib.Path(release["version"], "DATACARD.md").read_text()
    assert card.startswith("# ImageCoDe v1\n")
    assert "| MSR-VTT | 2 | 0 | 2 |" in card
    assert "| too_similar | 2 |" in card
    assert "| distance | 0.06 | paper §3.1 |" in card
    assert "| sampling | set | 3 | 3 | 0 |" in card
    assert "All stage counters reconcile" in card
    assert release["context"]["stages"] == {"sampling": {"set.in": 3, "set.out": 3}}


def test_datacard_flags_unbalanced_stages():
    stages = {"mining": {"frame.in": 10, "frame.out": 6, "frame.rejected.too_similar": 3}}
    card = render_datacard({"benchmark": "NLVR2", "version": "v0", "stages": stages,
                            "sections": [{"title": "Notes", "table": {"a|b": 1}}]})
    assert "**NO**" in card and "## Notes" in card and "a\\|b" in card
    assert "Counters that do NOT reconcile: mining/frame: in 10 != out 6 + rejected 3" in card


def test_existing_version_is_refused(release):
    with pytest.raises(FileExistsError):
        new_staging_dir(release["out"], "imagecode", "v1")
    with pytest.raises(FileExistsError):
        with staged_release(release["out"], "imagecode", "v1"):
            pass
    with pytest.raises(ValueError):
        new_staging_dir(release["out"], "imagecode", "../v2")


def test_failure_before_finalise_leaves_no_version(tmp_path):
    out = str(tmp_path)
    with pytest.raises(RuntimeError, match="boom"):
        with staged_release(out, "imagecode", "v2") as staging:
            p = pipeline()
            p | beam.Create(REJECTS) | WriteRejects(staging)
            p.run().wait_until_finish()
            assert os.listdir(os.path.join(staging, "rejects"))
            raise RuntimeError("boom")
    assert os.listdir(os.path.join(out, "imagecode")) == []


def test_finalise_guards(tmp_path):
    out = str(tmp_path)
    staging = new_staging_dir(out, "imagecode", "v3")
    assert os.path.basename(staging).startswith(".v3.staging-")
    final = os.path.join(out, "imagecode", "v3")
    with pytest.raises(FileNotFoundError):  # no manifest yet
        finalise(staging, final)
    write_manifest(staging, {"version": "v3"})
    os.makedirs(final)  # another run got there first
    with pytest.raises(FileExistsError):
        finalise(staging, final)
    os.rmdir(final)
    assert finalise(staging, final) == final and not os.path.exists(staging)


def test_publish_refuses_bad_sets(tmp_path):
    staging = str(tmp_path / "staging")
    os.makedirs(staging)
    outside = tmp_path / "source.jpg"
    outside.write_bytes(b"x")
    fs = make_set(staging, "YouCook", "v1", 0, 0, "valid", [1])
    bad_sets = [dataclasses.replace(fs, staged_images=[str(outside)]),
                dataclasses.replace(fs, image_paths=["compat/image-sets/other/img1.jpg"])]
    for bad in bad_sets:
        with pytest.raises(Exception, match="outside the staging|expected"):
            p = pipeline()
            p | beam.Create([bad]) | PublishCompatImages(staging)
            p.run().wait_until_finish()
    assert outside.exists()  # a file outside staging is never moved


def test_multi_process_runner_and_empty_rejects(tmp_path):
    """Pickling problems show up here, not on a cluster; no rejects still gives a table."""
    staging = new_staging_dir(str(tmp_path), "imagecode", "v4")
    sets = [make_set(staging, "YouCook", f"v{i}", 0, 0, "test", [i, i + 1]) for i in range(4)]
    p = pipeline(direct_running_mode="multi_processing", direct_num_workers=2)
    p | beam.Create(sets) | PublishCompatImages(staging) | WriteFrameSets(staging)
    p | "NoRejects" >> beam.Create([]).with_output_types(Reject) | WriteRejects(staging)
    p.run().wait_until_finish()
    counts = release_counts(staging)
    assert counts["tables"]["video_sets"]["by_split"] == {"test": 4}
    assert counts["rejects"] == {"total": 0, "by_reason": {}, "by_stage": {}}
    assert sum(k.startswith("compat/") for k in file_checksums(staging)) == 8


def test_finalise_by_copy_as_on_object_stores(tmp_path):
    """gs:// has no folder rename: files are copied (manifest last), then staging goes."""
    staging = new_staging_dir(str(tmp_path), "imagecode", "v5")
    os.makedirs(os.path.join(staging, "parquet"))
    pathlib.Path(staging, "parquet", "a.parquet").write_bytes(b"rows")
    write_manifest(staging, {"version": "v5"})
    final = finalise(staging, os.path.join(str(tmp_path), "imagecode", "v5"), rename=False)
    assert not os.path.exists(staging)
    assert verify_manifest(final) == []


def test_the_stage_table_shows_counters_of_no_level_beside_the_levels():
    """A cache stage counts `item.in`/`item.out` and, with no level, `miss` and `written`:
    the card shows them as they are, never as levels of zeros."""
    stages = {"cache.brisque": {"item.in": 5, "item.out": 5, "miss": 5, "written": 4},
              "embed": {"frame.in": 9, "frame.out": 9, "frame.cached": 3, "frame.embedded": 6},
              "counters_only": {"hit": 2}}
    card = render_datacard({"benchmark": "B", "version": "1", "stages": stages})
    assert "| cache.brisque | item | 5 | 5 | 0 |  | 0 | yes | miss 5, written 4 |" in card
    assert "| embed | frame | 9 | 9 | 0 |  | 0 | yes | cached 3, embedded 6 |" in card
    assert "| counters_only |  | 0 | 0 | 0 |  | 0 | yes | hit 2 |" in card
    assert "| miss |" not in card and "| written |" not in card


def test_rejects_that_leave_their_item_in_the_release_are_counted_apart():
    counts = {"rejects": {"total": 10, "by_reason": {"low_agreement": 3, "concepts_across_splits": 7}}}
    card = render_datacard({"benchmark": "B", "version": "1", "counts": counts,
                            "kept_rejects": {"concepts_across_splits": "stays in the random split"}})
    assert ("10 records in `rejects/`, per reason: 3 name items that are not in the release; "
            "7 (marked yes) name items that stay in it") in card
    assert "| concepts_across_splits | 7 | yes: stays in the random split |" in card
    assert "| low_agreement | 3 | no |" in card
