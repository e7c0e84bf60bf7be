import hashlib
import json

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from schemas import reasons
from schemas.records import VideoRef
from tests.beam_testing import local_test_pipeline
from transforms.core.stage import MAIN, REJECTS, read_stage_counts, reconcile
from transforms.video.manifest import ReadVideoManifest


def _video(tmp_path, name, content):
    (tmp_path / name).write_bytes(content)
    return VideoRef(str(tmp_path / name), "", "", "", hashlib.sha256(content).hexdigest())


def _line(path, video_id, split="train", source="msr-vtt"):
    return json.dumps({"path": path, "source": source, "video_id": video_id, "split": split},
                      ensure_ascii=False)


def _read(manifest):
    """(videos as (path, video_id, split, sha), rejects as (reason, file, line, detail),
    the stage's counters), sorted."""
    out = manifest.parent / "read.json"
    p = local_test_pipeline()
    result = p | ReadVideoManifest(str(manifest))
    videos = result[MAIN] | "videos" >> beam.Map(
        lambda v: ("videos", (v.path, v.video_id, v.split, v.content_sha256)))
    rejects = result[REJECTS] | "rejects" >> beam.Map(
        lambda r: ("rejects", (r.reason, r.file, r.line, r.detail)))
    _ = ((videos, rejects) | beam.Flatten() | beam.combiners.ToList()
         | beam.Map(lambda rows: out.write_text(json.dumps(rows))))
    counts = read_stage_counts(p.run())["manifest"]
    assert reconcile({"manifest": counts}) == []
    rows = json.loads(out.read_text())
    return (sorted(tuple(r) for kind, r in rows if kind == "videos"),
            sorted(tuple(r) for kind, r in rows if kind == "rejects"), counts)


def test_every_line_becomes_a_video_or_a_reject_with_its_reason(tmp_path):
    (tmp_path / "a.mp4").write_bytes(b"a")
    (tmp_path / "b.mp4").write_bytes(b"b")
    good = {"path": "a.mp4", "source": "msr-vtt", "video_id": "v1", "split": "train"}
    lines = [
        json.dumps(good),
        json.dumps({**good, "path": "b.mp4", "video_id": "v/1"}),     # v_1-<hash>: its own name
        json.dumps({**good, "path": "b.mp4"}),                        # same bytes as line 2
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
        assert_that(result[MAIN] | "keys" >> beam.Map(lambda v: (v.path, v.video_id, v.split)),
                    equal_to([(str(tmp_path / "a.mp4"), "v1", "train"),
                              (str(tmp_path / "b.mp4"), "v/1", "train")]), label="videos")
        assert_that(result[REJECTS] | "reasons" >> beam.Map(lambda r: (r.reason, r.line)),
                    equal_to([(reasons.DUPLICATE_VIDEO_CONTENT, 3), (reasons.BAD_JSON, 4),
                              (reasons.BAD_JSON, 5), (reasons.MISSING_FIELD, 6),
                              (reasons.BAD_FIELD, 7), (reasons.BAD_FIELD, 8),
                              (reasons.PATH_NOT_FOUND, 9)]), label="rejects")


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


def test_a_latin1_byte_is_a_reject_naming_file_and_line(tmp_path):
    # Before: UnicodeDecodeError ... position 62, with no file or line, and no build.
    _video(tmp_path, "a.mp4", b"a")
    _video(tmp_path, "b.mp4", b"b")
    manifest = tmp_path / "videos.jsonl"
    manifest.write_bytes(_line("a.mp4", "v1").encode() + b"\n"
                         + _line("b.mp4", "caf\u00e9").encode("latin-1") + b"\n")
    videos, rejects, counts = _read(manifest)
    assert [v[1] for v in videos] == ["v1"]
    assert rejects == [(reasons.BAD_ENCODING, str(manifest), 2,
                        "byte 0xe9 at column 56 is not UTF-8")]
    assert counts == {"line.in": 2, "line.out": 1, "line.rejected.bad_encoding": 1}


def test_a_directory_given_as_a_video_path_is_not_a_file(tmp_path):
    # Before: IsADirectoryError inside a Beam stage ended the build.
    (tmp_path / "clips.mp4").mkdir()
    _video(tmp_path, "a.mp4", b"a")
    manifest = tmp_path / "videos.jsonl"
    manifest.write_text(_line("clips.mp4", "v0") + "\n" + _line("a.mp4", "v1") + "\n")
    videos, rejects, _ = _read(manifest)
    assert [v[1] for v in videos] == ["v1"]
    assert rejects == [(reasons.NOT_A_FILE, str(manifest), 1,
                        f"{tmp_path / 'clips.mp4'} is a directory")]


def test_one_file_under_two_ids_in_two_splits_is_kept_once(tmp_path):
    # Before: both lines were kept, train and test shared the frames, and the leakage
    # check (by id) said no leakage.
    a = _video(tmp_path, "a.mp4", b"same bytes")
    (tmp_path / "copy.mp4").write_bytes(b"same bytes")
    manifest = tmp_path / "videos.jsonl"
    manifest.write_text("\n".join([
        _line("copy.mp4", "v2", "test"),   # line 1: first in the manifest, kept
        _line("a.mp4", "v1", "train"),     # line 2: the same bytes under another id
    ]) + "\n")
    videos, rejects, counts = _read(manifest)
    assert videos == [(str(tmp_path / "copy.mp4"), "v2", "test", a.content_sha256)]
    assert rejects == [(reasons.SAME_CONTENT_OTHER_SPLIT, str(manifest), 2,
                        f"same content (sha256 {a.content_sha256[:16]}) as {manifest}:1 "
                        "(msr-vtt/v2, test): one video in two splits would leak")]
    assert counts["line.rejected.same_content_other_split"] == 1


def test_one_path_listed_in_two_splits_takes_the_split_of_its_first_line(tmp_path):
    # Before: the split of whichever line a worker saw first. Now line order decides,
    # whatever the order the lines reach the stage in (many lines, spread by a shuffle).
    _video(tmp_path, "a.mp4", b"a")
    for first, second in (("valid", "test"), ("test", "valid")):
        manifest = tmp_path / f"videos-{first}.jsonl"
        fillers = []
        for i in range(20):
            _video(tmp_path, f"f{i}.mp4", f"filler {i}".encode())
            fillers.append(_line(f"f{i}.mp4", f"f{i}"))
        manifest.write_text("\n".join(fillers[:10] + [_line("a.mp4", "v1", first)] + fillers[10:]
                                      + [_line("a.mp4", "v1", second)]) + "\n")
        videos, rejects, _ = _read(manifest)
        assert [v[2] for v in videos if v[1] == "v1"] == [first]
        assert [(r[0], r[2]) for r in rejects] == [(reasons.SAME_CONTENT_OTHER_SPLIT, 22)]


def test_the_same_bytes_twice_in_one_split_are_one_video(tmp_path):
    _video(tmp_path, "a.mp4", b"x")
    (tmp_path / "b.mp4").write_bytes(b"x")
    manifest = tmp_path / "videos.jsonl"
    manifest.write_text(_line("b.mp4", "v2") + "\n" + _line("a.mp4", "v1") + "\n")
    videos, rejects, _ = _read(manifest)
    assert [v[1] for v in videos] == ["v2"]
    assert [(r[0], r[2]) for r in rejects] == [(reasons.DUPLICATE_VIDEO_CONTENT, 2)]


def test_one_id_for_two_files_keeps_the_first_line(tmp_path):
    _video(tmp_path, "a.mp4", b"a")
    _video(tmp_path, "b.mp4", b"b")
    manifest = tmp_path / "videos.jsonl"
    manifest.write_text(_line("b.mp4", "v1") + "\n" + _line("a.mp4", "v1", "test") + "\n")
    videos, rejects, _ = _read(manifest)
    assert [(v[0], v[2]) for v in videos] == [(str(tmp_path / "b.mp4"), "train")]
    assert rejects == [(reasons.DUPLICATE_VIDEO, str(manifest), 2,
                        f"same source and video_id as {manifest}:1")]
