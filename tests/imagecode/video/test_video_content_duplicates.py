"""One video muxed two ways is one video (issue 24, part 5): the same frames in other
bytes are found on the digest of the decoded frames (pipelines/imagecode/video/content.py),
in another split as same_content_other_split (counted by the leakage report), in the
same split as duplicate_video_content; the first manifest line wins, and a rebuild that
replays the cached shot lists, decoding nothing, judges the same."""
import json
import os

import ffmpeg
import pyarrow.parquet as pq
import pytest

from pipelines.imagecode import reasons
from tests.release.release_files import build_record, machine_paths
from transforms.core.hashing import content_sha256
from tests.imagecode.video.builds import build_videos
from transforms.video import synthetic

SEGMENTS = [("astronaut", 30, "pan"), ("chelsea", 30, "zoom")]


def remux(src, dst, **output_args):
    """The same packets in another container: the frames decode the same, the bytes differ."""
    (ffmpeg.input(str(src)).output(str(dst), c="copy", **output_args)
     .global_args("-nostdin", "-hide_banner", "-loglevel", "error", "-y").run())


def line(path, video_id, split):
    return json.dumps({"path": path, "source": "msr-vtt", "video_id": video_id, "split": split})


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("muxed")
    synthetic.make_video(str(d / "faststart.mp4"), SEGMENTS)   # index first (+faststart)
    remux(d / "faststart.mp4", d / "tail.mp4")                  # index last: no faststart
    remux(d / "faststart.mp4", d / "other-mux.mp4", movflags="+faststart",
          metadata="comment=muxed again")                       # a third byte spelling
    synthetic.make_video(str(d / "different.mp4"), [("coffee", 30, "pan"), ("rocket", 30, "zoom")])
    lines = [line("faststart.mp4", "first", "train"),     # 1 kept
             line("tail.mp4", "tail", "test"),            # 2 same_content_other_split
             line("other-mux.mp4", "again", "train"),     # 3 duplicate_video_content
             line("different.mp4", "different", "valid")]  # 4 kept
    (d / "videos.jsonl").write_text("\n".join(lines) + "\n")
    return d


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("out")


@pytest.fixture(scope="module")
def release(inputs, out):
    return build_videos(inputs, out)


def rows(release, table):
    return pq.read_table(os.path.join(release, table)).to_pylist()


def video_rejects(release):
    return sorted((r["reason"], r["video_id"], r["line"], r["detail"]) for r in rows(release, "rejects")
                  if r["stage"] == "video_content" and r["level"] == "video")


def test_the_inputs_are_one_video_in_other_bytes(inputs):
    shas = {content_sha256(str(inputs / name)) for name in ("faststart.mp4", "tail.mp4", "other-mux.mp4")}
    assert len(shas) == 3
    with open(inputs / "faststart.mp4", "rb") as f:   # the index (moov) before the data ...
        head = f.read(64)
    with open(inputs / "tail.mp4", "rb") as f:        # ... and after it
        tail_head = f.read(64)
    assert b"moov" in head and b"moov" not in tail_head


def test_the_same_frames_in_other_bytes_are_rejected_naming_the_first_line(inputs, release):
    # a reject names its input relative to the release's input root (BUILD.json)
    root = build_record(release)["input_root"]
    manifest = os.path.relpath(str(inputs / "videos.jsonl"), root)
    found = video_rejects(release)
    assert [(reason, video_id, n) for reason, video_id, n, _ in found] == [
        (reasons.DUPLICATE_VIDEO_CONTENT, "again", 3), (reasons.SAME_CONTENT_OTHER_SPLIT, "tail", 2)]
    for _, _, _, detail in found:
        assert "same content by decoded frames" in detail and "the bytes differ" in detail
        assert f"{manifest}:1 (msr-vtt/first, train)" in detail
    # the bytes alone said nothing: no manifest-stage duplicate
    assert not [r for r in rows(release, "rejects") if r["stage"] == "manifest"]


def test_no_set_of_a_later_duplicate_is_published(release):
    sets = rows(release, "parquet/video_sets")
    assert {s["video_id"] for s in sets} == {"first", "different"}
    assert {s["split"] for s in sets if s["video_id"] == "first"} == {"train"}


def test_leakage_report_counts_the_conflict_and_the_release_reconciles(inputs, release):
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert manifest["reconciled"] is True
    (leakage,) = manifest["figures"]["leakage"]
    assert leakage["video_leakage"] is False and leakage["videos_in_several_splits"] == []
    assert leakage["video_split_conflicts_rejected"] == 1
    (example,) = leakage["video_split_conflict_examples"]
    assert example.startswith("videos.jsonl:2 (msr-vtt/tail, test): same content by decoded frames")
    # no path of the building machine, in the manifest's figures or anywhere else
    assert machine_paths(release, [str(inputs), release]) == []
    stage = manifest["stages"]["video_content"]
    assert stage["video.in"] == 4 and stage["video.out"] == 2
    assert stage["video.rejected.same_content_other_split"] == 1
    assert stage["video.rejected.duplicate_video_content"] == 1
    # the duplicates' shots and frames are rejects too: every level reconciles, and what
    # the miner took in is what this stage passed on
    assert stage["frame.rejected.same_content_other_split"] > 0
    assert manifest["stages"]["mining"]["frame.in"] == stage["frame.out"]
    assert manifest["stages"]["mining"]["shot.in"] == stage["shot.out"]


def test_a_rebuild_from_cached_shot_lists_judges_the_same(inputs, out, release):
    again = build_videos(inputs, out, "1.0.1")
    manifest = build_record(again)
    assert manifest["cache"]["shot_list"]["cached"] == 4 and manifest["cache"]["shot_list"]["computed"] == 0
    assert video_rejects(again) == video_rejects(release)
    assert ({s["set_name"] for s in rows(again, "parquet/video_sets")}
            == {s["set_name"] for s in rows(release, "parquet/video_sets")})


def test_the_frame_digest_is_the_same_for_every_mux_and_differs_for_other_frames(inputs):
    from schemas.records import VideoRef
    from transforms.core.hashing import PixelDigest
    from transforms.video.shots import iter_shots

    def digest(name):
        d = PixelDigest()
        for _ in iter_shots(VideoRef(str(inputs / name), "s", name, "train"), digest=d):
            pass
        return d.hexdigest(), d.frames

    first = digest("faststart.mp4")
    assert first[1] == 60
    assert digest("tail.mp4") == digest("other-mux.mp4") == first
    assert digest("different.mp4")[0] != first[0]
