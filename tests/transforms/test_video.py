"""Streaming decode (transforms/video/decode.py) on generated videos."""
import contextlib
import os
import threading
import tracemalloc

import numpy as np
import psutil
import pytest

from transforms.video import synthetic
from transforms.video.decode import (DecodeReport, ForwardFrameReader, VideoError, VideoInfo,
                                     _pipe_frames, iter_frames,
                                     iter_scored_frames, output_size, probe, truncation)

SEGMENTS = [("astronaut", 20, "pan"), ("chelsea", 15, "zoom"), ("coffee", 12, "still")]
N = sum(n for _, n, _ in SEGMENTS)


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    d = tmp_path_factory.mktemp("video")
    paths = {k: str(d / f"{k}.mp4") for k in
             ("clip", "long", "corrupt", "truncated", "empty", "audio")}
    paths["frameless"] = str(d / "frameless.y4m")
    synthetic.make_frameless_video(paths["frameless"])
    synthetic.make_video(paths["clip"], SEGMENTS, fps=25, size=(160, 120))
    synthetic.make_video(paths["long"], [("rocket", 300, "pan")], size=(320, 240))
    synthetic.make_corrupt_video(paths["corrupt"])
    paths["truncated_total"] = synthetic.make_truncated_video(paths["truncated"], keep=0.5)
    synthetic.make_empty_video(paths["empty"])
    synthetic.make_audio_only(paths["audio"])
    return paths


def _ffmpeg_children():
    return [p for p in psutil.Process().children(recursive=True)
            if "ffmpeg" in (p.name() or "")]


def test_probe(videos):
    info = probe(videos["clip"])
    assert (info.width, info.height, info.codec) == (160, 120, "h264")
    assert info.fps == pytest.approx(25.0)
    assert info.n_frames == N
    assert info.duration == pytest.approx(N / 25, abs=0.05)


def test_probe_runs_ffprobe_once_per_version_of_a_file(videos, tmp_path, monkeypatch):
    import shutil

    import ffmpeg
    runs = []
    real = ffmpeg.probe
    monkeypatch.setattr(ffmpeg, "probe", lambda path, **kw: runs.append(path) or real(path, **kw))
    copy = str(tmp_path / "clip.mp4")
    shutil.copyfile(videos["clip"], copy)
    assert probe(copy) == probe(copy) and runs == [copy]
    shutil.copyfile(videos["long"], copy)  # another version of the file: probed again
    assert (probe(copy).width, probe(copy).width) == (320, 320) and runs == [copy, copy]


def test_decodes_every_frame_in_order_as_rgb(videos):
    seen = []
    for index, frame in iter_frames(videos["clip"]):
        assert frame.shape == (120, 160, 3) and frame.dtype == np.uint8
        seen.append(index)
    assert seen == list(range(N))
    # Channel order: the decoded first frame matches what we rendered (RGB, not BGR).
    first = next(iter_frames(videos["clip"]))[1].astype(int)
    rendered = synthetic._render("astronaut", "pan", 0, 20, 160, 120).astype(int)
    assert np.abs(first - rendered).mean() < 6
    assert np.abs(first - rendered[..., ::-1]).mean() > 2 * np.abs(first - rendered).mean()


def test_frames_are_independent_writable_arrays(videos):
    frames = [f for _, f in iter_frames(videos["clip"])]
    frames[0][:] = 0  # must not touch any other frame
    assert frames[1].any()


def test_max_side_downscales_inside_ffmpeg(videos):
    _, frame = next(iter_frames(videos["long"], max_side=101))
    assert frame.shape == (76, 100, 3)  # aspect kept, even sides
    _, frame = next(iter_frames(videos["clip"], max_side=1000))  # never upscales
    assert frame.shape == (120, 160, 3)
    assert output_size(VideoInfo(1920, 1080, 30.0, None, "h264"), 256) == (256, 144)


def test_streaming_memory_does_not_grow_with_length(videos):
    frame_bytes = 320 * 240 * 3
    tracemalloc.start()
    try:
        n = sum(1 for _ in iter_frames(videos["long"]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 300
    assert peak < 10 * frame_bytes  # the whole video would be 300 frames


def test_early_exit_kills_ffmpeg(videos):
    threads_before = threading.active_count()
    frames = iter_scored_frames(videos["long"])
    next(frames)
    assert _ffmpeg_children()
    frames.close()
    assert not _ffmpeg_children()
    assert threading.active_count() == threads_before


def test_scene_scores_peak_at_cuts(videos):
    scores = {i: s for i, _, s in iter_scored_frames(videos["clip"])}
    assert len(scores) == N and scores[0] == 0.0
    top = sorted(scores, key=scores.get, reverse=True)[:2]
    assert sorted(top) == [20, 35]


def test_truncated_file_yields_what_decodes_then_stops(videos):
    n = sum(1 for _ in iter_frames(videos["truncated"]))
    assert 0 < n < videos["truncated_total"]


@pytest.mark.parametrize("scored", [False, True])
def test_a_truncated_file_is_reported_short_though_ffmpeg_exits_0(videos, scored):
    # An mp4 with its index first, cut in half: ffmpeg exits 0 after half the frames.
    report = DecodeReport()
    frames = (iter_scored_frames if scored else iter_frames)(videos["truncated"], report=report)
    n = sum(1 for _ in frames)
    assert report.frames == n < videos["truncated_total"] == report.expected
    assert report.exit_code == 0 and report.basis == "container frame count"
    assert "partial file" in report.errors and " @ 0x" not in report.errors
    why = truncation(report, 0.02)
    assert why.startswith(f"decoded {n} of {videos['truncated_total']} frames "
                          "(container frame count): 50% missing > decode.truncation_tolerance 0.02")
    assert truncation(report, 0.5) is None  # the tolerance decides


def test_a_whole_file_is_reported_whole(videos):
    report = DecodeReport()
    assert sum(1 for _ in iter_frames(videos["clip"], report=report)) == N
    assert (report.frames, report.expected, report.exit_code, report.errors) == (N, N, 0, "")
    assert truncation(report, 0.0) is None


def test_truncation_rules():
    assert truncation(DecodeReport(frames=49, expected=50, basis="b"), 0.02) is None  # 2% missing
    assert truncation(DecodeReport(frames=48, expected=50, basis="b"), 0.02).startswith(
        "decoded 48 of 50 frames (b): 4% missing")
    assert truncation(DecodeReport(frames=0, expected=50, basis="b"), 1.0) is None
    # no promise from the container: only an ffmpeg that stopped with an error tells
    assert truncation(DecodeReport(frames=7, exit_code=0, errors="x"), 0.0) is None
    assert truncation(DecodeReport(frames=7, exit_code=1, errors="boom"), 0.0) == (
        "decoded 7 frames, then ffmpeg exit 1 (the container gives no frame count); ffmpeg: boom")


def test_frameless_video_yields_nothing(videos):
    assert probe(videos["frameless"]).codec == "rawvideo"
    assert list(iter_frames(videos["frameless"])) == []
    assert list(iter_scored_frames(videos["frameless"])) == []


@pytest.mark.parametrize("name,message", [
    ("corrupt", "moov atom not found"), ("empty", "ffprobe failed"),
    ("audio", "no video stream"), ("missing", "no such file")])
def test_unreadable_inputs_raise_video_error(videos, name, message):
    path = videos.get(name, "/nonexistent/video.mp4")
    with pytest.raises(VideoError, match=message):
        list(iter_frames(path))
    assert not _ffmpeg_children()


def test_decode_error_without_probe_is_a_video_error(videos):
    # Skip the probe (info given): ffmpeg itself must fail cleanly.
    info = VideoInfo(160, 120, 25.0, 1.0, "h264")
    with pytest.raises(VideoError, match="ffmpeg exit"):
        list(iter_frames(videos["corrupt"], info=info))


def test_stalled_ffmpeg_is_killed(tmp_path):
    fifo = str(tmp_path / "never-written.mp4")
    os.mkfifo(fifo)  # ffmpeg blocks opening it: a stand-in for a hung read
    info = VideoInfo(160, 120, 25.0, 1.0, "h264")
    with pytest.raises(VideoError, match="stalled"):
        list(iter_frames(fifo, info=info, stall_timeout=1.0))
    assert not _ffmpeg_children()


# --- ForwardFrameReader: the second pass, PyAV where it gives the pipe's pixels ----------

def _reencoded(src, dst, *args):
    """`src` through ffmpeg again with `args` (another codec, size or container tag)."""
    import subprocess
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", src, *args, dst], check=True)
    return dst


@pytest.fixture(scope="module")
def variants(videos, tmp_path_factory):
    """Videos PyAV reads (plain, BT.709) and ones it must leave to the pipe (odd size,
    rotated, full range)."""
    d = tmp_path_factory.mktemp("variants")
    clip = videos["clip"]
    return {
        "bt709": _reencoded(clip, str(d / "bt709.mp4"), "-c:v", "libx264", "-colorspace", "bt709",
                            "-color_primaries", "bt709", "-color_trc", "bt709"),
        "odd": _reencoded(clip, str(d / "odd.mp4"), "-vf", "scale=157:117", "-c:v", "mpeg4"),
        "rotated": _reencoded(clip, str(d / "rotated.mp4"), "-c", "copy",
                              "-metadata:s:v:0", "rotate=90"),
        "full_range": _reencoded(clip, str(d / "full.mp4"), "-c:v", "libx264",
                                 "-pix_fmt", "yuvj420p"),
    }


@pytest.mark.parametrize("name, max_side, decoder", [
    ("clip", None, "pyav"), ("long", None, "pyav"), ("bt709", None, "pyav"),
    ("clip", 400, "pyav"),        # max_side above the frame size: no downscale
    ("clip", 80, "ffmpeg"), ("odd", None, "ffmpeg"), ("rotated", None, "ffmpeg"),
    ("full_range", None, "ffmpeg")])
def test_in_process_decoding_gives_the_pipes_pixels(videos, variants, name, max_side, decoder):
    """iter_frames and the forward reader decode in process only where the frames are
    the ffmpeg pipe's, pixel for pixel."""
    path = {**videos, **variants}[name]
    expected = dict(_pipe_frames(path, max_side, None, 30.0))
    report = DecodeReport()
    streamed = dict(iter_frames(path, max_side, report=report))
    assert sorted(streamed) == sorted(expected)
    for number, frame in expected.items():
        np.testing.assert_array_equal(streamed[number], frame)
    assert (report.frames, report.exit_code, report.errors) == (len(expected), 0, "")
    assert report.expected == len(expected)
    reader = ForwardFrameReader(path, max_side)
    try:
        got = reader.frames_of(0, len(expected), sorted(expected))
        assert reader.decoder == decoder
        assert reader.frames_decoded == len(expected)
    finally:
        reader.close()
    assert sorted(got) == sorted(expected)
    for number, frame in expected.items():  # looked at after close(): still there
        assert got[number].flags.c_contiguous and got[number].flags.writeable
        np.testing.assert_array_equal(got[number], frame)


def test_the_forward_reader_converts_only_the_frames_looked_at(videos):
    reader = ForwardFrameReader(videos["clip"])
    with contextlib.closing(reader):
        first = reader.frames_of(0, 20, range(20))
        second = reader.frames_of(20, 35, [20, 27])   # shots in order; frames in between skipped
        assert reader.decoder == "pyav" and reader.frames_decoded == 28
        assert all(not isinstance(f, np.ndarray) for f in first._frames.values())
        a = first[3]
        assert first[3] is a                            # converted once
        a[:] = 0                                        # independent of the other frames
        assert first[4].any() and second[27].any()
        with pytest.raises(ValueError, match="in order"):
            reader.frames_of(10, 20, [10])


def test_the_forward_reader_on_a_truncated_video_falls_back_and_stops_where_the_pipe_does(videos):
    path = videos["truncated"]
    decodable = dict(iter_frames(path))
    reader = ForwardFrameReader(path)
    with contextlib.closing(reader):
        got = reader.frames_of(0, len(decodable), sorted(decodable))
        for number, frame in decodable.items():
            np.testing.assert_array_equal(got[number], frame)
        with pytest.raises(VideoError, match="ended before frame"):
            reader.frames_of(len(decodable), len(decodable) + 5, [len(decodable) + 4])
    assert reader.decoder == "ffmpeg"  # PyAV stops at the damaged data; the pipe read on


@pytest.mark.parametrize("name", ["corrupt", "empty", "missing"])
def test_the_forward_reader_raises_video_error_on_unreadable_files(videos, tmp_path, name):
    path = videos.get(name, str(tmp_path / "missing.mp4"))
    reader = ForwardFrameReader(path)
    with contextlib.closing(reader), pytest.raises(VideoError):
        reader.frames_of(0, 1, [0])
