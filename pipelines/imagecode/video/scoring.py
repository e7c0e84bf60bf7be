"""The miner as a Beam stage (ImageCoDe §3.1 "Video Frames"): the greedy rule of
mining.py run over each video's plan, with the quality gate asked lazily.

The rule decides; this module serves it. Per video (one call): its shots' embeddings
from the plan, each frame's pixels decoded on demand (one forward pass per video, only
up to the last shot that needs pixels), BRISQUE and OCR scores taken from the plan's
cached ones or computed (one frame at a time as the rule asks, a few frames ahead on
lookahead threads while the gate keeps rejecting, or many frames in one BRISQUE call on a
GPU), the selected frames' JPEGs staged (from the cached frame images where they are),
and what was computed handed on for the cache (NEW_SCORES, NEW_FRAMES). Whatever the
timing, threads or batch, the sets, rejects and scores are those of asking the gate one
frame at a time (tests/imagecode/video/test_mining.py, test_frame_cache.py).
"""
from __future__ import annotations

import concurrent.futures
import itertools
import logging
import pickle
import threading
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from pipelines.imagecode import reasons
from pipelines.imagecode.names import compat_image_path, image_file_name, video_set_name
from pipelines.imagecode.records import FrameSet, VideoPlan
from pipelines.imagecode.video.mining import mine_sets
from schemas.records import ShotFrames
from schemas.rejects import Reject
from transforms.cache.store import read_entry
from transforms.core.precision import rounded_mean
from transforms.core.stage import MAIN, StageFn, apply_in_process, stage_pardo
from transforms.vectors.distances import pairwise_distances
from transforms.video.decode import ForwardFrameReader
from transforms.video.frame_images import CachedFrameImages, encode_bundle

log = logging.getLogger(__name__)

# A zero-argument callable returning a quality gate (or None for no filtering). It is
# called once per DoFn instance on the worker, so models load there, not at pickling.
GateFactory = Callable[[], Optional[object]]


BRISQUE_SCORES = "brisque_scores"  # tagged output: BRISQUE/100 of every evaluated frame
NEW_SCORES = "new_scores"          # tagged output: (filter, cache key, {frame: value}) computed here
NEW_FRAMES = "new_frames"          # tagged output: (cache key, bundle of the frame JPEGs made here)
SCORE_FILTERS = ("brisque", "ocr")


class MineFrameSets(beam.PTransform):
    """VideoPlan -> FrameSet (main), frame-level Rejects (REJECTS), the BRISQUE/100 score
    of every frame the gate consulted (BRISQUE_SCORES, for the data card), and the
    scores computed in this run, per video and filter (NEW_SCORES, for the cache), and
    per video the JPEGs of the frames it decoded to score or publish (NEW_FRAMES, for the
    cache; only for a plan with a `frame_key`).

    A score in the plan's `known_scores` is used as is; only the others are computed
    (for every frame with `score_all_frames`, else only for frames the gate is asked
    about), on frames decoded on demand (one forward pass per video, only up to the last shot
    that needs pixels). The selected frames are written as JPEG under
    `<staging_dir>/frames/<set>/`; the release step moves the sets it keeps into compat/.
    A selected frame whose JPEG is in the plan's cached frame images is written from
    there, byte for byte what encoding it again would give: a video whose scores and
    selected frames are all cached is not decoded at all.

    While the gate keeps rejecting (a blurred or captioned shot, where it is asked about
    every frame), the frames it will be asked about next, should the current one be
    rejected too, are scored ahead on `lookahead_threads` threads (BRISQUE's compiled
    loop, torch and Tesseract release the GIL, so two cores score two frames at once).
    Only values the gate then asks for are used; the sets, rejects and scores are those
    of scoring one frame at a time.

    Counters (stage "mining"): shot/frame/set in, out, rejected; and, as the run's work
    (StageCounts.work: they follow the cache), frame.brisque_evaluations and
    frame.ocr_evaluations (values the gate asked for that were computed, here or
    ahead), frame.brisque_cached and frame.ocr_cached (taken from the plan),
    frame.brisque_unused and frame.ocr_unused (scored ahead, never asked for: work a
    one-frame-at-a-time run would not have done; not cached), frame.decoded (frames
    decoded again for pixels), frame.served_from_cache (selected frames written from
    the cached frame images, noted only when there are any).
    """

    def __init__(self, threshold: float, set_size: int, gate_factory: GateFactory,
                 staging_dir: str, jpeg_quality: int = 95, max_side: Optional[int] = None,
                 score_all_frames: bool = False, lookahead_threads: int = 2):
        super().__init__()
        self._dofn = _MineVideo(threshold, set_size, gate_factory, staging_dir, jpeg_quality,
                                max_side, score_all_frames, lookahead_threads)

    def expand(self, plans):
        return plans | stage_pardo(self._dofn, outputs=(BRISQUE_SCORES, NEW_SCORES, NEW_FRAMES))


def mine_in_process(plans, **settings) -> List[FrameSet]:
    """MineFrameSets(**settings) run here on plans in hand (no pipeline): the sets it
    mines, by the build's own DoFn (JPEGs staged as it stages them); rejects and scores
    dropped."""
    return apply_in_process(MineFrameSets(**settings)._dofn, plans).get(MAIN, [])


class _MineVideo(StageFn):
    """A video's plan in; its sets out (level "set"), rejected frames (level "frame")."""
    stage, level = "mining", "set"
    counts_in = False  # a plan is no set: sets are born here and counted in as they form

    def __init__(self, threshold, set_size, gate_factory, staging_dir, jpeg_quality, max_side,
                 score_all_frames, lookahead_threads):
        self._score_all_frames = score_all_frames
        self._lookahead_threads = lookahead_threads
        self._threshold = threshold
        self._set_size = set_size
        self._gate_factory = gate_factory
        self._staging_dir = staging_dir
        self._jpeg_quality = jpeg_quality
        self._max_side = max_side

    def setup(self):
        self._gate = self._gate_factory()
        self._lookahead = (_Lookahead(self._gate, self._lookahead_threads)
                           if self._gate is not None and self._lookahead_threads > 0 else None)

    def teardown(self):
        if getattr(self, "_lookahead", None) is not None:
            self._lookahead.close()

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_lookahead", None)     # threads: made again by setup() where it runs
        return state

    def judge(self, plan: VideoPlan):
        reader = ForwardFrameReader(plan.video.path, self._max_side)
        known = {name: plan.known_scores.get(name, {}) for name in SCORE_FILTERS}
        new: Dict[str, Dict[int, float]] = {name: {} for name in SCORE_FILTERS}
        images = CachedFrameImages(plan.frame_images, read_entry, self._jpeg_quality)
        try:
            for shot in sorted(plan.embedded_shots(), key=lambda s: s.shot_index):
                pixels = _ShotPixels(shot, reader)
                yield from self._mine_shot(shot, pixels, known, new, images)
                if plan.frame_key:   # what was decoded now need not be decoded again
                    for position in sorted(pixels.looked_at):
                        images.keep(shot.frame_indices[position], lambda p=position: pixels[p])
        finally:
            reader.close()
            self.counts.work("frame.decoded", reader.frames_decoded)
            if images.served:
                self.counts.work("frame.served_from_cache", images.served)
        for name in SCORE_FILTERS:
            if new[name] and plan.score_keys.get(name):
                yield beam.pvalue.TaggedOutput(NEW_SCORES, (name, plan.score_keys[name], new[name]))
        if plan.frame_key and images.made:
            yield beam.pvalue.TaggedOutput(NEW_FRAMES, (plan.frame_key, encode_bundle(images.made)))

    def _mine_shot(self, shot: ShotFrames, pixels: "_ShotPixels", known, new,
                   images: CachedFrameImages):
        verdicts = {}
        lookahead = self._lookahead
        rejecting = [False]          # was the gate's last verdict in this shot a rejection?

        resolved = {name: {} for name in SCORE_FILTERS}  # asked before in this shot: not counted again
        gate = self._gate
        per_call = gate.brisque_frames_per_call if gate is not None else 1
        scored_together: Dict[int, float] = {}   # BRISQUE scored in one call ahead of the rule

        def brisque_of(position: int) -> float:
            # One frame at a time (the CPU: as the rule asks), or, where a call is cheap
            # only when it is large (a GPU), this frame and the next ones of the shot whose
            # scores are not known yet, `per_call` frames in one call. Scores are rounded
            # where they are made, so a frame's score does not depend on its batch.
            number = shot.frame_indices[position]
            if per_call == 1:
                return float(gate.brisque.score_normalised([pixels[position]])[0])
            if number not in scored_together:
                unknown = (p for p in range(position, len(shot.frame_indices))
                           if shot.frame_indices[p] not in known["brisque"]
                           and shot.frame_indices[p] not in resolved["brisque"])
                together = list(itertools.islice(unknown, per_call))
                values = gate.brisque.score_normalised([pixels[p] for p in together])
                for p, value in zip(together, values):
                    new["brisque"][shot.frame_indices[p]] = scored_together[shot.frame_indices[p]] = float(value)
            return scored_together.pop(number)

        def score(name: str, position: int, compute):
            number = shot.frame_indices[position]
            if number in resolved[name]:
                return resolved[name][number]
            if number in known[name]:
                self.counts.work(f"frame.{name}_cached")
                value = known[name][number]
            else:
                self.counts.work(f"frame.{name}_evaluations")
                ahead = lookahead.take(name, number) if lookahead is not None else None
                value = ahead if ahead is not None else compute(position)
                new[name][number] = value
            resolved[name][number] = value
            return value

        if self._score_all_frames and gate is not None:
            for position in range(len(shot.frame_indices)):
                if gate.brisque is not None:
                    score("brisque", position, brisque_of)
                if gate.text is not None:
                    score("ocr", position, lambda p: gate.text.text_chars(pixels[p]))

        def accept(position: int) -> Optional[str]:
            if self._gate is None:
                return None
            gate = self._gate
            if lookahead is not None and not rejecting[0]:
                read_alongside(position)
            verdict = verdicts[position] = gate.judge(
                lambda: score("brisque", position, brisque_of),
                lambda: score("ocr", position, lambda p: gate.text.text_chars(pixels[p])))
            rejecting[0] = not verdict.ok
            return None if verdict.ok else verdict.reason

        def read_alongside(position: int) -> None:
            # Outside a run of rejections a frame is most often sharp, and then both
            # filters must score it: its text is read on a lookahead thread while the gate
            # computes BRISQUE here. Only for a frame with neither score yet, so it decodes
            # nothing the gate would not; read in vain when the frame is blurry.
            number = shot.frame_indices[position]
            if gate.brisque is None or gate.text is None or any(
                    number in resolved[name] or number in known[name] for name in SCORE_FILTERS):
                return
            lookahead.submit_text(number, lambda: pixels[position])

        def foresee(position: int, asked_next: Iterator[int]) -> None:
            # Ahead only while the gate rejects: then the guess "rejected again" is what a
            # blurred or captioned shot makes true frame after frame; elsewhere it is not.
            # And only once the shot is decoded: a guess must never decode a shot whose
            # scores all come from the cache.
            if not rejecting[0] or not pixels.loaded:
                return
            window = itertools.islice(itertools.chain([position], asked_next), lookahead.width)
            for ahead in window:
                number = shot.frame_indices[ahead]
                brisque = resolved["brisque"].get(number, known["brisque"].get(number))
                lookahead.submit(number, lambda ahead=ahead: pixels[ahead], brisque,
                                 need_brisque=number not in known["brisque"] and per_call == 1,
                                 need_ocr=number not in known["ocr"])

        self.counts.seen(len(shot.frame_indices), level="frame")
        self.counts.seen(level="shot")
        try:
            result = mine_sets(shot.embeddings, self._threshold, self._set_size, accept,
                               foresee if lookahead is not None else None)
        finally:
            if lookahead is not None:
                for name, unused in lookahead.settle().items():
                    self.counts.work(f"frame.{name}_unused", unused)
        if scored_together:   # scored in a call ahead of the rule, never asked for (kept in the cache)
            self.counts.work("frame.brisque_unused", len(scored_together))
        for position in sorted(verdicts):
            if verdicts[position].brisque is not None:
                yield beam.pvalue.TaggedOutput(BRISQUE_SCORES, verdicts[position].brisque)

        for set_index, positions in enumerate(result.sets):
            self.counts.seen(level="set")  # sets are born here: every one goes on
            self.counts.count_out(len(positions), level="frame")
            yield self._frame_set(shot, set_index, positions, verdicts, pixels, images)
        for position, reason in sorted(result.rejected.items()):
            if position in result.nearest:   # the frame it was too close to, for the explorer
                near, distance = result.nearest[position]
                detail = f"distance={distance} nearest=frame{shot.frame_indices[near]}"   # as published
            else:
                detail = _scores(verdicts.get(position))
            yield self._frame_reject(shot, position, reason, detail)
        for position in result.unfinished:
            yield self._frame_reject(shot, position, reasons.UNFINISHED_SET,
                                     f"shot ended with {len(result.unfinished)}/{self._set_size} frames")
        self.counts.count_out(level="shot")
        log.info("mining: %s -> %d sets from %d frames", shot.key, len(result.sets),
                 len(shot.frame_indices))

    def _frame_set(self, shot: ShotFrames, set_index: int, positions: List[int],
                   verdicts: Dict[int, object], pixels: "_ShotPixels",
                   images: CachedFrameImages) -> FrameSet:
        video = shot.video
        name = video_set_name(video.source, video.video_id, shot.shot_index, set_index)
        frame_numbers = [shot.frame_indices[p] for p in positions]
        files = [image_file_name(n) for n in frame_numbers]
        staged = [FileSystems.join(self._staging_dir, "frames", name, f) for f in files]
        for position, number, path in zip(positions, frame_numbers, staged):
            with FileSystems.create(path) as f:
                f.write(images.jpeg(number, lambda p=position: pixels[p]))
        distances = pairwise_distances(shot.embeddings[positions])
        return FrameSet(
            set_name=name, source=video.source, video_id=video.video_id, split=video.split,
            shot_index=shot.shot_index, set_index=set_index, frame_indices=frame_numbers,
            image_paths=[compat_image_path(name, n) for n in frame_numbers],
            brisque_scores=[_score(verdicts.get(p), "brisque", float("nan")) for p in positions],
            text_chars=[int(_score(verdicts.get(p), "text_chars", -1)) for p in positions],
            distance_min=float(distances.min()), distance_mean=rounded_mean(distances),
            distance_max=float(distances.max()), staged_images=staged,
            video_sha256=video.content_sha256 or "")

    def _frame_reject(self, shot: ShotFrames, position: int, reason: str,
                      detail: str = "") -> Reject:
        video = shot.video
        return self.reject(reason, f"{shot.key}/frame{shot.frame_indices[position]}",
                           level="frame", source=video.source, video_id=video.video_id,
                           split=video.split, detail=detail)


class _Lookahead:
    """Scores frames ahead of the gate's questions on a few threads, one frame per job:
    BRISQUE, then (if the frame is not blurry) OCR, each only where the plan has no
    value (`submit`); or a frame's text alone, read while the gate computes its BRISQUE
    on the caller's thread (`submit_text`). Each thread reads text with its own
    Tesseract engine (an engine is not shared between threads); the BRISQUE scorer is
    shared (it holds no per-call state)."""

    def __init__(self, gate, threads: int):
        self._gate = gate
        self._threads = threads
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._local = threading.local()
        # frame number -> (the job: {filter: value}, the filters it may score)
        self._jobs: Dict[int, Tuple[concurrent.futures.Future, FrozenSet[str]]] = {}

    @property
    def width(self) -> int:
        """How many frames, from the one being judged on, are scored at once: one per
        thread, so at most threads - 1 frames are scored in vain when the guess fails."""
        return self._threads

    def submit(self, number: int, frame: Callable[[], np.ndarray], brisque: Optional[float],
               need_brisque: bool, need_ocr: bool) -> None:
        """Score frame `number` ahead; `brisque` is its known score (None: not known)."""
        if number in self._jobs or not (need_brisque or need_ocr):
            return
        pixels = self._start(frame)
        may_score = frozenset(name for name, needed in (("brisque", need_brisque), ("ocr", need_ocr))
                              if needed)
        self._jobs[number] = (self._pool.submit(self._score, pixels, brisque, need_brisque,
                                                need_ocr), may_score)

    def submit_text(self, number: int, frame: Callable[[], np.ndarray]) -> None:
        """Read frame `number`'s text ahead, whatever its BRISQUE score will be."""
        if number in self._jobs:
            return
        pixels = self._start(frame)
        self._jobs[number] = (self._pool.submit(lambda: {"ocr": self._read_text(pixels)}),
                              frozenset({"ocr"}))

    def _start(self, frame: Callable[[], np.ndarray]) -> np.ndarray:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                self._threads, thread_name_prefix="mining-lookahead")
        return frame()               # decoded here: the frame reader is not thread-safe

    def _score(self, frame: np.ndarray, brisque: Optional[float], need_brisque: bool,
               need_ocr: bool) -> Dict[str, float]:
        gate, values = self._gate, {}
        if gate.brisque is not None:
            if brisque is None and need_brisque:
                brisque = values["brisque"] = float(gate.brisque.score_normalised([frame])[0])
            if brisque is None or gate.is_blurry(brisque):
                return values        # unknown: the gate's own call decides; blurry: no OCR
        if gate.text is not None and need_ocr:
            values["ocr"] = self._read_text(frame)
        return values

    def _read_text(self, frame: np.ndarray) -> int:
        if getattr(self._local, "text", None) is None:
            self._local.text = pickle.loads(pickle.dumps(self._gate.text))  # engine-less copy
        return self._local.text.text_chars(frame)

    def take(self, name: str, number: int):
        """Frame `number`'s `name` value if it was scored ahead (waiting for it), else None
        (at once when no job may score it: the caller computes it meanwhile)."""
        job, may_score = self._jobs.get(number, (None, frozenset()))
        if name not in may_score:
            return None
        return job.result().pop(name, None)

    def settle(self) -> Dict[str, int]:
        """End of a shot: wait for every job; how many values per filter were scored ahead
        and never asked for. No job is cancelled: which jobs exist follows from the
        verdicts alone, so the count is the same on every run, whatever the timing."""
        unused: Dict[str, int] = {}
        for job, _ in self._jobs.values():
            for name in job.result():
                unused[name] = unused.get(name, 0) + 1
        self._jobs = {}
        return unused

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class _ShotPixels:
    """A shot's frames by position: its own when it carries them, else decoded (once,
    on first use) by the video's forward reader."""

    def __init__(self, shot: ShotFrames, reader: ForwardFrameReader):
        self._shot, self._reader = shot, reader
        self._by_number = None
        self.looked_at = set()   # positions whose pixels were asked for

    @property
    def loaded(self) -> bool:
        """Are the shot's pixels at hand (carried, or decoded already)?"""
        return bool(self._shot.frames) or self._by_number is not None

    def __getitem__(self, position: int) -> np.ndarray:
        shot = self._shot
        self.looked_at.add(position)
        if shot.frames:
            return shot.frames[position]
        if self._by_number is None:
            self._by_number = self._reader.frames_of(shot.start_frame, shot.end_frame,
                                                     shot.frame_indices)
        return self._by_number[shot.frame_indices[position]]


def _scores(verdict) -> str:
    """The quality figures of an evaluated frame, for its reject's detail (and plots)."""
    if verdict is None:
        return ""
    parts = []
    if verdict.brisque is not None:
        parts.append(f"brisque={verdict.brisque}")      # as published: 6 decimals at most
    if verdict.text_chars is not None:
        parts.append(f"text_chars={verdict.text_chars}")
    return " ".join(parts)


def _score(verdict, attribute: str, missing):
    value = getattr(verdict, attribute, None) if verdict is not None else None
    return missing if value is None else value
