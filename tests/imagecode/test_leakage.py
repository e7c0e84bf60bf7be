"""The release's leakage check (pipelines/imagecode/leakage.py) judges videos by content."""
import json

import apache_beam as beam

from pipelines.imagecode import reasons
from pipelines.imagecode.leakage import CheckLeakage
from pipelines.imagecode.records import FrameSet
from schemas.records import VideoRef
from schemas.rejects import Reject
from tests.beam_testing import local_test_pipeline


def _set(video_id, split, k=0):
    return FrameSet(set_name=f"s-video{video_id}-shot0_{k}", source="s", video_id=video_id,
                    split=split, shot_index=0, set_index=k, frame_indices=[], image_paths=[],
                    brisque_scores=[], text_chars=[], distance_min=0.0, distance_mean=0.0,
                    distance_max=0.0)


def _report(tmp_path, sets, videos, rejects=()):
    out = tmp_path / "leakage.json"
    with local_test_pipeline() as p:
        _ = ({"video_sets": p | "sets" >> beam.Create(sets),
              "videos": p | "videos" >> beam.Create(videos),
              "video_rejects": p | "rejects" >> beam.Create(list(rejects)),
              "static_rows": p | "static" >> beam.Create([])}
             | CheckLeakage() | beam.Map(lambda r: out.write_text(json.dumps(r))))
    return json.loads(out.read_text())


def test_two_ids_with_the_same_bytes_in_two_splits_are_leakage(tmp_path):
    # Before: judged on "source/video_id", so two ids of one file never counted as one video.
    videos = [VideoRef("/v/x.mp4", "s", "x", "train", "ab" * 32),
              VideoRef("/v/y.mp4", "s", "y", "test", "ab" * 32),
              VideoRef("/v/z.mp4", "s", "z", "test", "cd" * 32)]
    report = _report(tmp_path, [_set("x", "train"), _set("x", "train", 1), _set("y", "test"),
                                _set("z", "test")], videos)
    assert report["video_leakage"] is True
    assert report["videos_in_several_splits"] == [
        {"content": "bytes:" + "ab" * 32, "videos": ["s/x", "s/y"], "splits": ["test", "train"]}]


def test_split_conflicts_rejected_by_the_manifest_are_counted_and_named(tmp_path):
    videos = [VideoRef("/v/x.mp4", "s", "x", "train", "ab" * 32)]
    conflict = Reject(stage="manifest", level="line", reason=reasons.SAME_CONTENT_OTHER_SPLIT,
                      item_id="/v/y.mp4", source="s", video_id="y", split="test",
                      detail="same content as m.jsonl:1", file="m.jsonl", line=2)
    other = Reject(stage="manifest", level="line", reason=reasons.BAD_JSON, item_id="{",
                   file="m.jsonl", line=3)
    report = _report(tmp_path, [_set("x", "train")], videos, [conflict, other])
    assert report["video_leakage"] is False
    assert report["video_split_conflicts_rejected"] == 1
    assert report["video_split_conflict_examples"] == [
        "m.jsonl:2 (s/y, test): same content as m.jsonl:1"]


def test_two_muxes_of_one_video_in_two_splits_are_leakage_though_their_bytes_differ(tmp_path):
    # the check a release runs on itself: judged on the decoded frames, not the bytes
    videos = [VideoRef("/v/x.mp4", "s", "x", "train", "ab" * 32, frames_sha256="ef" * 32),
              VideoRef("/v/x-tail.mp4", "s", "y", "test", "cd" * 32, frames_sha256="ef" * 32)]
    report = _report(tmp_path, [_set("x", "train"), _set("y", "test")], videos)
    assert report["video_leakage"] is True
    assert report["videos_in_several_splits"] == [
        {"content": "frames:" + "ef" * 32, "videos": ["s/x", "s/y"], "splits": ["test", "train"]}]


def test_a_conflict_found_by_frames_counts_once_not_once_per_shot_and_frame(tmp_path):
    videos = [VideoRef("/v/x.mp4", "s", "x", "train", "ab" * 32, frames_sha256="ef" * 32)]
    detail = "same content by decoded frames (...) as m.jsonl:1 (s/x, train): one video in two splits would leak"
    line = Reject(stage="video_content", level="video", reason=reasons.SAME_CONTENT_OTHER_SPLIT,
                  item_id="/v/y.mp4", source="s", video_id="y", split="test", detail=detail,
                  file="m.jsonl", line=2)
    inside = [Reject(stage="video_content", level=level, reason=reasons.SAME_CONTENT_OTHER_SPLIT,
                     item_id=item, source="s", video_id="y", split="test", detail="in m.jsonl:2 ...")
              for level, item in (("shot", "s/y/shot0"), ("frame", "s/y/shot0/frame0"))]
    report = _report(tmp_path, [_set("x", "train")], videos, [line, *inside])
    assert report["video_split_conflicts_rejected"] == 1
    assert report["video_split_conflict_examples"] == [f"m.jsonl:2 (s/y, test): {detail}"]
