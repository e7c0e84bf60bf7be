import json

import apache_beam as beam

from apache_beam.testing.util import assert_that, equal_to

from schemas import reasons
from schemas.records import VideoRef
from tests.beam_testing import local_test_pipeline
from transforms.inputs import ReadVideoManifest
from transforms.stage import MAIN, REJECTS


def test_every_line_becomes_a_video_or_a_reject_with_its_reason(tmp_path):
    (tmp_path / "a.mp4").write_bytes(b"x")
    (tmp_path / "b.mp4").write_bytes(b"x")
    good = {"path": "a.mp4", "source": "msr-vtt", "video_id": "v1", "split": "train"}
    lines = [
        json.dumps(good),
        json.dumps({**good, "path": "b.mp4", "video_id": "v/1"}),     # clashes after safe_name? no: v_1
        json.dumps({**good, "path": "b.mp4"}),                        # duplicate of v1 (b > a)
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"path": "a.mp4", "source": "s", "split": "train"}),
        json.dumps({**good, "split": "dev"}),
        json.dumps({**good, "video_id": ""}),
        json.dumps({**good, "path": "missing.mp4", "video_id": "v9"}),
        "",
    ]
    manifest = tmp_path / "videos.jsonl"
    manifest.write_text("\n".join(lines) + "\n")

    with local_test_pipeline() as p:
        result = p | ReadVideoManifest(str(manifest))
        assert_that(result[MAIN], equal_to([
            VideoRef(str(tmp_path / "a.mp4"), "msr-vtt", "v1", "train"),
            VideoRef(str(tmp_path / "b.mp4"), "msr-vtt", "v/1", "train"),
        ]), label="videos")
        assert_that(result[REJECTS] | "reasons" >> beam.Map(lambda r: r.reason),
                    equal_to([reasons.DUPLICATE_VIDEO, reasons.BAD_JSON, reasons.BAD_JSON,
                              reasons.MISSING_FIELD, reasons.BAD_FIELD, reasons.BAD_FIELD,
                              reasons.PATH_NOT_FOUND]), label="rejects")


def test_ids_that_read_alike_once_made_safe_are_both_kept(tmp_path):
    # Before: both ids became "___" and the second line was a duplicate_video of the first.
    (tmp_path / "a.mp4").write_bytes(b"a")
    (tmp_path / "b.mp4").write_bytes(b"b")
    (tmp_path / "c.mp4").write_bytes(b"c")
    lines = [json.dumps({"path": "a.mp4", "source": "s", "video_id": "视频一", "split": "test"}),
             json.dumps({"path": "b.mp4", "source": "s", "video_id": "视频二", "split": "test"}),
             json.dumps({"path": "c.mp4", "source": "s", "video_id": "x_y", "split": "test"})]
    manifest = tmp_path / "videos.jsonl"
    manifest.write_text("\n".join(lines), encoding="utf-8")
    with local_test_pipeline() as p:
        result = p | ReadVideoManifest(str(manifest))
        assert_that(result[MAIN] | "ids" >> beam.Map(lambda v: v.video_id),
                    equal_to(["视频一", "视频二", "x_y"]), label="kept")
        assert_that(result[REJECTS], equal_to([]), label="no rejects")
