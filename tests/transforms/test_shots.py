"""Shot detection (transforms/video/shots.py): the three backends, stride, and the Beam stage."""
import json

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas import reasons
from schemas.records import VideoRef
from transforms.core.stage import MAIN, REJECTS
from transforms.video import synthetic
from transforms.video.shots import SplitIntoShots, _ShotBuffer, iter_shots

# "FnApiRunner", not "DirectRunner": in Beam 2.77 DirectRunner tries the Prism runner
# first, which downloads a binary.
RUNNER = "FnApiRunner"

SEGMENTS = [("astronaut", 30, "pan"), ("chelsea", 25, "zoom"),
            ("coffee", 20, "pan+text"), ("rocket", 30, "zoom")]
CUTS = [30, 55, 75]
N = 105
# A 6-frame shot in the middle, too short for a set of 10 frames.
SHORT_SEGMENTS = [("astronaut", 24, "pan"), ("motorcycle_left", 6, "pan"),
                  ("hubble", 24, "zoom")]


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    d = tmp_path_factory.mktemp("shots")
    paths = {k: str(d / f"{k}.mp4") for k in ("clip", "short", "corrupt", "empty", "truncated")}
    assert synthetic.make_video(paths["clip"], SEGMENTS, size=(192, 144)) == CUTS
    assert synthetic.make_video(paths["short"], SHORT_SEGMENTS, size=(192, 144)) == [24, 30]
    synthetic.make_corrupt_video(paths["corrupt"])
    synthetic.make_empty_video(paths["empty"])
    # the first half decodes: two whole shots of 24 frames, then part of the third
    paths["truncated_total"] = synthetic.make_truncated_video(
        paths["truncated"], keep=0.5, segments=[("astronaut", 24, "pan"), ("chelsea", 24, "zoom"),
                                                ("hubble", 48, "zoom")])
    paths["frameless"] = str(d / "frameless.y4m")
    synthetic.make_frameless_video(paths["frameless"])
    paths["missing"] = str(d / "missing.mp4")
    return paths


def ref(path, video_id="v1"):
    return VideoRef(path=path, source="synthetic", video_id=video_id, split="train")


@pytest.mark.parametrize("backend", ["ffmpeg", "pyscenedetect", "transnetv2"])
def test_backends_find_the_true_cuts(videos, backend):
    shots = list(iter_shots(ref(videos["clip"]), backend=backend))
    assert [s.shot_index for s in shots] == [0, 1, 2, 3]
    starts = [s.start_frame for s in shots]
    assert starts[0] == 0
    assert all(abs(a - b) <= 1 for a, b in zip(starts[1:], CUTS)), starts
    assert [s.end_frame for s in shots] == starts[1:] + [N]
    for s in shots:
        assert s.frame_indices == list(range(s.start_frame, s.end_frame))
        assert len(s.frames) == len(s.frame_indices) and s.fps == pytest.approx(25.0)
        assert s.frames[0].shape == (144, 192, 3)


def test_the_rgb_content_score_is_the_stock_detectors_bit_for_bit(videos):
    """Our ContentDetector scores RGB frames its own cheaper way (shots.py): every score,
    and so every cut, must equal the stock detector's on the BGR frame."""
    import cv2
    from scenedetect import FrameTimecode
    from scenedetect.detectors import ContentDetector

    from transforms.video.decode import iter_frames
    from transforms.video.shots import _rgb_content_detector

    rng = np.random.default_rng(0)
    noise = [rng.integers(0, 256, (37, 53, 3), dtype=np.uint8) for _ in range(20)]
    flat = [np.full((37, 53, 3), v, np.uint8) for v in (0, 0, 255, 7)]
    for frames in ([f for _, f in iter_frames(videos["clip"])], noise + flat):
        stock, ours = ContentDetector(min_scene_len=2), _rgb_content_detector()(min_scene_len=2)
        stock_cuts, our_cuts, scores = [], [], []
        for i, frame in enumerate(frames):
            tc = FrameTimecode(i, 25.0)
            stock_cuts += stock.process_frame(tc, cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
            our_cuts += ours.process_frame(tc, frame)
            scores.append((stock._frame_score, ours._frame_score))
        assert all(a == b for a, b in scores), scores
        assert [t.frame_num for t in our_cuts] == [t.frame_num for t in stock_cuts]
    assert any(a > 0 for a, _ in scores)  # the comparison saw real scores


@pytest.mark.parametrize("backend", ["ffmpeg", "pyscenedetect"])
def test_stride_keeps_every_kth_frame_from_each_shot_start(videos, backend):
    full = list(iter_shots(ref(videos["clip"]), backend=backend))
    strided = list(iter_shots(ref(videos["clip"]), backend=backend, stride=4))
    assert [(s.start_frame, s.end_frame) for s in strided] == \
        [(s.start_frame, s.end_frame) for s in full]  # the detector still sees every frame
    for s, f in zip(strided, full):
        assert s.frame_indices == list(range(s.start_frame, s.end_frame, 4))
        for i, frame in zip(s.frame_indices, s.frames):
            assert np.array_equal(frame, f.frames[i - f.start_frame])


@pytest.mark.parametrize("backend", ["ffmpeg", "pyscenedetect"])
def test_min_scene_len_merges_short_shots(videos, backend):
    short = ref(videos["short"])
    assert [s.start_frame for s in iter_shots(short, backend=backend, min_scene_len=5)] \
        == [0, 24, 30]
    merged = [s.start_frame for s in iter_shots(short, backend=backend, min_scene_len=10)]
    assert len(merged) == 2 and all(b - a >= 10 for a, b in zip(merged, merged[1:] + [54]))


def test_max_side_is_applied(videos):
    shot = next(iter_shots(ref(videos["clip"]), max_side=96))
    assert shot.frames[0].shape == (72, 96, 3)


def test_shot_buffer_handles_a_late_cut_with_stride():
    buf = _ShotBuffer(stride=3, lookback=5)
    for i in range(21):
        buf.add(i, np.full((1, 1, 3), i, np.uint8))
    start, end, kept = buf.cut(17)  # reported at frame 20, i.e. 3 frames late
    assert (start, end) == (0, 17) and [i for i, _ in kept] == [0, 3, 6, 9, 12, 15]
    for i in range(21, 26):
        buf.add(i, np.full((1, 1, 3), i, np.uint8))
    start, end, kept = buf.close(26)
    assert (start, end) == (17, 26) and [i for i, _ in kept] == [17, 20, 23]
    assert [int(f[0, 0, 0]) for _, f in kept] == [17, 20, 23]
    assert buf.cut(17) is None  # not inside the current shot


def test_bad_parameters_fail_before_any_work():
    with pytest.raises(ValueError):
        SplitIntoShots(backend="opencv")
    with pytest.raises(ValueError):
        SplitIntoShots(stride=0)


def _run_stage(videos, options=None, **params):
    refs = [ref(videos["short"], "short"), ref(videos["corrupt"], "corrupt"),
            ref(videos["missing"], "missing"), ref(videos["empty"], "empty"),
            ref(videos["frameless"], "frameless")]
    p = test_pipeline.TestPipeline(runner=RUNNER, options=options)
    out = p | beam.Create(refs) | SplitIntoShots(**params)
    shots = out[MAIN] | "ShotKeys" >> beam.Map(
        lambda s: (s.key, s.start_frame, s.end_frame, len(s.frames)))
    rejects = out[REJECTS] | "RejectKeys" >> beam.Map(
        lambda r: (r.stage, r.level, r.reason, r.item_id))
    expected_shot_rejects = [("shots", "shot", reasons.SHOT_TOO_SHORT, "synthetic/short/shot1")] + \
        [("shots", "frame", reasons.SHOT_TOO_SHORT, f"synthetic/short/shot1/frame{i}")
         for i in range(24, 30)]
    assert_that(shots, equal_to([("synthetic/short/shot0", 0, 24, 24),
                                 ("synthetic/short/shot2", 30, 54, 24)]), label="Shots")
    assert_that(rejects, equal_to(expected_shot_rejects + [
        ("shots", "video", reasons.UNREADABLE_VIDEO, "synthetic/corrupt"),
        ("shots", "video", reasons.UNREADABLE_VIDEO, "synthetic/missing"),
        ("shots", "video", reasons.UNREADABLE_VIDEO, "synthetic/empty"),
        ("shots", "video", reasons.NO_FRAMES, "synthetic/frameless"),
    ]), label="Rejects")
    result = p.run()
    result.wait_until_finish()
    return result


@pytest.mark.parametrize("backend", ["ffmpeg", "pyscenedetect"])
def test_stage_emits_shots_and_rejects_and_counts_reconcile(videos, backend):
    result = _run_stage(videos, backend=backend, min_scene_len=5, min_frames=10)
    counters = result.metrics().query(MetricsFilter().with_namespace("stage.shots"))["counters"]
    got = {c.key.metric.name: c.committed for c in counters}
    assert got == {
        "video.in": 5, "video.out": 1, "video.rejected.unreadable_video": 3,
        "video.rejected.no_frames": 1,
        "shot.in": 3, "shot.out": 2, "shot.rejected.shot_too_short": 1,
        "frame.in": 54, "frame.out": 48, "frame.rejected.shot_too_short": 6,
    }
    for level in ("video", "shot", "frame"):
        rejected = sum(v for k, v in got.items() if k.startswith(f"{level}.rejected."))
        assert got[f"{level}.in"] == got[f"{level}.out"] + rejected


@pytest.mark.slow
def test_stage_runs_in_multi_process_mode(videos):
    """Pickling check: the DoFn and the records must cross process boundaries."""
    from apache_beam.options.pipeline_options import PipelineOptions
    options = PipelineOptions(direct_running_mode="multi_processing", direct_num_workers=2)
    _run_stage(videos, options=options, min_scene_len=5, min_frames=10)


def _split(videos, refs, **params):
    """SplitIntoShots over `refs`: (shot keys in MAIN, rejects, videos with a shot list,
    stage counters)."""
    from tests.beam_testing import local_test_pipeline
    from transforms.core.stage import read_stage_counts, reconcile
    from transforms.video.shots import SHOT_LISTS
    out_file = videos["truncated"] + ".split.json"
    p = local_test_pipeline()
    out = p | beam.Create(refs) | SplitIntoShots(**params)
    _ = ((out[MAIN] | "shots" >> beam.Map(lambda s: ["shot", s.key]),
             out[REJECTS] | "rejects" >> beam.Map(lambda r: ["reject", [r.level, r.reason, r.item_id, r.detail]]),
             out[SHOT_LISTS] | "lists" >> beam.Map(lambda kv: ["listed", [kv[0].key, kv[1]["decode"]]]))
            | beam.Flatten() | beam.combiners.ToList()
            | beam.Map(lambda items: open(out_file, "w").write(json.dumps(items))))
    counts = read_stage_counts(p.run())["shots"]
    assert reconcile({"shots": counts}) == []
    items = json.load(open(out_file))
    return ({v for k, v in items if k == "shot"}, [v for k, v in items if k == "reject"],
            {v[0]: v[1] for k, v in items if k == "listed"}, counts)


def test_a_truncated_video_is_rejected_whole_not_used_in_part(videos):
    # Before: ffmpeg exited 0 after half the frames and the shots of that half went on.
    shots, rejects, listed, counts = _split(
        videos, [ref(videos["truncated"], "cut"), ref(videos["short"], "whole")], min_frames=10)
    assert [r[:3] for r in rejects if r[2].startswith("synthetic/cut")] == [
        ["video", reasons.TRUNCATED_VIDEO, "synthetic/cut"]]
    assert rejects[0][3].startswith("decoded ") and f"of {videos['truncated_total']} frames" in rejects[0][3]
    assert set(listed) == {"synthetic/whole"}  # no shot list: no plan, nothing cached
    assert listed["synthetic/whole"]["frames"] == listed["synthetic/whole"]["expected"] == 54
    # the truncated video's shots that went out before the verdict are never counted
    whole = {s for s in shots if s.startswith("synthetic/whole/")}
    assert counts["video.rejected.truncated_video"] == 1 and counts["video.out"] == 1
    assert counts["shot.out"] == len(whole) == 2


def test_the_truncation_tolerance_is_a_setting(videos):
    shots, rejects, listed, counts = _split(
        videos, [ref(videos["truncated"], "cut")], min_frames=10, truncation_tolerance=0.7)
    assert [r for r in rejects if r[0] == "video"] == [] and set(listed) == {"synthetic/cut"}
    assert listed["synthetic/cut"]["frames"] < listed["synthetic/cut"]["expected"]
    assert counts["video.out"] == 1 and counts["shot.out"] == len(shots) == 2


def test_a_cached_shot_list_is_judged_again_with_this_runs_tolerance():
    from transforms.core.stage import StageCounts
    from transforms.video.shots import replay_shots
    listing = {"fps": 25.0, "shots": [{"index": 0, "start": 0, "end": 98, "frames": list(range(98))}],
               "decode": {"frames": 98, "expected": 100, "basis": "container frame count",
                          "exit_code": 0, "errors": ""}}
    video = ref("/nonexistent.mp4", "v")
    out = list(replay_shots(StageCounts("replay-test"), video, listing, 10, 0.02))
    assert [s.key for s in out] == ["synthetic/v/shot0"]  # 2% missing: whole enough
    out = list(replay_shots(StageCounts("replay-test"), video, listing, 10, 0.01))
    assert [(o.value.level, o.value.reason) for o in out] == [("video", reasons.TRUNCATED_VIDEO)]


@pytest.mark.slow
def test_transnetv2_finds_the_known_cuts_exactly(videos):
    found = [s.start_frame for s in iter_shots(ref(videos["clip"]), backend="transnetv2")][1:]
    right = set(found) & set(CUTS)
    assert len(right) / len(found) == 1.0 and len(right) / len(CUTS) == 1.0, found   # precision, recall


@pytest.mark.slow
def test_transnetv2_stream_gives_the_packages_own_probabilities(videos):
    """The frame-by-frame windows are the authors' windows: the same probabilities as the
    package's whole-video inference (predict_frames) on the same 48x27 frames."""
    import torch

    from transforms.video.decode import iter_frames
    from transforms.video.transnetv2 import TransitionStream, load_model, small_frame
    stream, streamed, frames = TransitionStream(), [], []
    for _, frame in iter_frames(videos["clip"], None):
        frames.append(small_frame(frame))
        streamed += stream.feed(frame)
    streamed += stream.finish()
    assert [i for i, _ in streamed] == list(range(N))
    whole, _ = load_model().predict_frames(torch.from_numpy(np.stack(frames)), quiet=True)
    assert np.allclose([p for _, p in streamed], whole.numpy(), atol=1e-5)
    assert [i for i, p in streamed if p > 0.5] == [c - 1 for c in CUTS]   # the last frame before each cut
