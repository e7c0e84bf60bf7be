"""ImageCoDe builds on hostile video inputs (issue 10): a truncated download, ids that
read alike once made safe, one file under two ids in two splits, a folder given as a
video, a Latin-1 byte in the manifest. A small build of generated videos, end to end."""
import json
import os
import shutil

import pyarrow.parquet as pq
import pytest

from pipelines import build as build_command
from pipelines.imagecode import reasons
from pipelines.imagecode.names import parse_video_set_name
from pipelines.release.write.assemble import ReleaseError
from schemas.names import safe_name
from transforms.video import synthetic
from tests.release.release_files import on_building_machine

SAMPLE_CONFIG = "pipelines/imagecode/configs/sample.yaml"
SEGMENTS = [("astronaut", 48, "pan"), ("chelsea", 48, "zoom"), ("hubble", 48, "zoom")]


def _line(path, video_id, split, source="msr-vtt"):
    return json.dumps({"path": path, "source": source, "video_id": video_id, "split": split},
                      ensure_ascii=False).encode("utf-8")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    synthetic.make_video(str(d / "whole.mp4"), SEGMENTS)
    shutil.copyfile(d / "whole.mp4", d / "whole-copy.mp4")
    synthetic.make_video(str(d / "one.mp4"), [("coffee", 48, "pan"), ("rocket", 48, "zoom")])
    synthetic.make_video(str(d / "two.mp4"), [("motorcycle_left", 48, "pan")])
    # an interrupted download: the index (first) promises 144 frames, half the bytes are there
    synthetic.make_truncated_video(str(d / "cut.mp4"), keep=0.6, segments=SEGMENTS)
    (d / "folder.mp4").mkdir()
    lines = [
        _line("whole.mp4", "whole", "train"),          # 1
        _line("cut.mp4", "cut", "train"),              # 2 truncated_video
        _line("whole-copy.mp4", "copy", "test"),       # 3 same_content_other_split
        _line("one.mp4", "视频一", "valid"),            # 4 both ids read "___" once made safe
        _line("two.mp4", "视频二", "valid"),            # 5
        _line("folder.mp4", "folder", "train"),        # 6 not_a_file
        _line("two.mp4", "caf\u00e9", "test").decode("utf-8").encode("latin-1"),  # 7 bad_encoding
    ]
    (d / "videos.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return d


def build(inputs, out, *extra):
    return build_command.build("imagecode", [
        "--config", SAMPLE_CONFIG, "--output", str(out), "--version", "1.0.0",
        "--set", f"inputs.videos={inputs / 'videos.jsonl'}", "--set", "static.images=null",
        "--set", "crowd.descriptions=null", "--set", "crowd.retrievals=null",
        "--set", "quality.brisque.enabled=false", "--set", "quality.ocr.enabled=false", *extra])


@pytest.fixture(scope="module")
def release(inputs, tmp_path_factory):
    return build(inputs, tmp_path_factory.mktemp("out"))


def rows(release, table):
    return pq.read_table(os.path.join(release, table)).to_pylist()


def test_hostile_lines_are_rejects_naming_file_and_line(inputs, release):
    manifest = str(inputs / "videos.jsonl")
    line_rejects = {(r["reason"], r["line"]) for r in rows(release, "rejects")
                    if r["stage"] == "manifest"}
    assert line_rejects == {(reasons.SAME_CONTENT_OTHER_SPLIT, 3), (reasons.NOT_A_FILE, 6),
                            (reasons.BAD_ENCODING, 7)}
    assert {on_building_machine(release, r["file"]) for r in rows(release, "rejects")
            if r["stage"] == "manifest"} == {manifest}


def test_no_set_comes_from_a_truncated_video(release):
    sets = rows(release, "parquet/video_sets")
    assert sets and "cut" not in {s["video_id"] for s in sets}
    (cut,) = [r for r in rows(release, "rejects") if r["video_id"] == "cut"]
    assert (cut["stage"], cut["level"], cut["reason"]) == ("shots", "video", reasons.TRUNCATED_VIDEO)
    assert cut["detail"].startswith("decoded ") and "of 144 frames (container frame count)" in cut["detail"]


def test_ids_that_read_alike_give_distinct_sets_and_keep_their_original_id(release):
    sets = rows(release, "parquet/video_sets")
    by_id = {}
    for s in sets:
        by_id.setdefault(s["video_id"], set()).add(parse_video_set_name(s["set_name"]).video_id)
    assert by_id["视频一"] == {safe_name("视频一")} and by_id["视频二"] == {safe_name("视频二")}
    assert safe_name("视频一") != safe_name("视频二")
    assert len({s["set_name"] for s in sets}) == len(sets)


def test_one_file_under_two_ids_lands_in_one_split_and_leakage_is_judged_on_content(release):
    sets = rows(release, "parquet/video_sets")
    assert {s["split"] for s in sets if s["video_id"] in ("whole", "copy")} == {"train"}
    assert "copy" not in {s["video_id"] for s in sets}
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    (leakage,) = manifest["figures"]["leakage"]
    assert leakage["video_leakage"] is False and leakage["videos_in_several_splits"] == []
    assert leakage["video_split_conflicts_rejected"] == 1
    (example,) = leakage["video_split_conflict_examples"]
    assert ":3 (msr-vtt/copy, test): same content" in example and ":1 (msr-vtt/whole, train)" in example
    assert manifest["reconciled"] is True


def test_on_conflict_fail_stops_the_build_and_publishes_nothing(inputs, tmp_path):
    with pytest.raises(ReleaseError, match=r"leakage.on_conflict is 'fail' and 1 line\(s\) .*"
                                           r"videos.jsonl:3 \(msr-vtt/copy, test\)"):
        build(inputs, tmp_path, "--set", "leakage.on_conflict=fail")
    assert not os.path.exists(tmp_path / "imagecode" / "1.0.0")
