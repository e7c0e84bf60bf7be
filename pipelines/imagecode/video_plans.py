"""From videos to mining plans: shots and frame embeddings, from the cache when it has
them (ImageCoDe §3.1 "Video Frames", before the greedy miner).

    videos -> content sha256 -> cache join (shot list, embeddings, BRISQUE, OCR scores)
      all of shots + embeddings cached ("warm"): replay the shot list, no decode, no model
      else ("cold"): decode + detect shots + embed, then store shot list + embeddings
    -> VideoPlan (shots with embeddings, known quality scores) -> MineFrameSets

Entries are per video. Shot lists and embeddings are keyed by the video's bytes and
every setting they depend on (decode, shot detection, shortest shot, encoder identity
incl. weights). Quality scores are keyed by the bytes, the decode size and the filter's
model identity, not by thresholds: each run stores the scores it computed, and a lookup
merges every run's entries, so a score is computed once whatever thresholds come later.

Without a cache root the same plans are built the cold way, and nothing is stored. A
cache with no entries yet (a cold build) is asked nothing it cannot answer: the graph then
has no per-video join and no warm branch (transforms/cache/store.py has_entries), and the
cache counters are the same as the join's.
Pixels never cross a shuffle: shots leave the encoder without their frames and the
miner decodes the frames it needs (transforms/video/decode.py ForwardFrameReader).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional

import apache_beam as beam
import numpy as np

from pipelines.imagecode.mining import SCORE_FILTERS
from pipelines.imagecode.records import VideoPlan
from schemas.records import ShotFrames, VideoRef
from transforms.cache.read_through import WRITTEN
from transforms.cache.store import (HITS, LookupCacheStages, WriteCache, cache_key, decode_array,
                                    decode_json, encode_array, encode_json, has_entries,
                                    merge_json_dicts)
from transforms.core.hashing import content_sha256
from transforms.core.stage import MAIN, REJECTS, StageCounts, StageFn, stage_pardo
from transforms.image.embed import STAGE as EMBED_STAGE
from transforms.image.embed import EmbedShots
from transforms.video.shots import DEFAULT_TRUNCATION_TOLERANCE, SHOT_LISTS
from transforms.video.shots import STAGE as SHOTS_STAGE
from transforms.video.shots import SplitIntoShots, replay_shots

SHOT_LIST, FRAME_EMBEDDING = "shot_list", "frame_embedding"
UNCACHED = "uncached"  # output tag: videos without cached shots and embeddings
# Bump when shot detection changes its output. v2: a shot list carries its decode facts
# (frames decoded and promised), judged again on replay; v1 lists never are, since
# some of them are of truncated videos taken for whole ones. v3: it carries the digest of
# the decoded frames (duplicates are judged on it); a v2 list lacks it, so its video is
# decoded once more.
SHOTS_CODE_VERSION = "shots/v3"


@dataclass(frozen=True)
class VideoCacheSpec:
    """Where the cache is and what its keys depend on."""
    root: str
    run_id: str
    encoder_fingerprint: str
    filter_fingerprints: Dict[str, str]  # "brisque"/"ocr" -> model fingerprint; only filters that are on
    shot_detector_fingerprint: str = ""  # a learned shot detector's weights; "" for the rule-based ones


@dataclass
class _Looked:
    """One video after the cache join."""
    video: VideoRef
    sha256: str
    shot_list: Optional[dict] = None
    embeddings: Optional[np.ndarray] = None
    known_scores: Dict[str, Dict[int, float]] = field(default_factory=dict)
    keys: Dict[str, str] = field(default_factory=dict)


class PlanVideos(beam.PTransform):
    """VideoRef -> {MAIN: VideoPlan, REJECTS: shot-stage rejects, WRITTEN: cache files}.

    `shot_params` are SplitIntoShots' arguments (backend, threshold, min_scene_len,
    stride, max_side); `min_frames` the shortest shot kept; `truncation_tolerance` the
    share of promised frames a video may miss (not part of the cache key: a cached shot
    list keeps its decode facts and is judged again). `cache` None: no cache.
    Counters: stage "shots" as SplitIntoShots (replayed for cached videos); stage
    "embed" frame.in/out (every frame of a planned video given an embedding) and
    frame.cached. Only a video decoded whole gets a plan or a cache entry."""

    def __init__(self, shot_params: dict, min_frames: int, encoder_spec,
                 cache: Optional[VideoCacheSpec] = None,
                 truncation_tolerance: float = DEFAULT_TRUNCATION_TOLERANCE):
        super().__init__()
        self._shot_params, self._min_frames = dict(shot_params), min_frames
        self._spec, self._cache = encoder_spec, cache
        self._tolerance = truncation_tolerance

    def expand(self, videos):
        if self._cache is None:
            cold = videos | "Not cached" >> beam.Map(lambda v: _Looked(v, ""))
            plans, rejects, written = self._cold(cold, store=False)
            return {MAIN: plans, REJECTS: rejects, WRITTEN: written}
        looked = videos | "Look up" >> _LookUpVideos(self._cache.root, self._keys())
        if not all(has_entries(self._cache.root, [part]) for part in (SHOT_LIST, FRAME_EMBEDDING)):
            # a warm video needs both parts cached: with either stage empty, none is
            return dict(zip((MAIN, REJECTS, WRITTEN), self._cold(looked, store=True)))
        warm_or_cold = looked | "Warm or cold" >> beam.Partition(
            lambda v, _: 0 if _is_warm(v) else 1, 2)
        warm = warm_or_cold[0] | "Replay cached shots" >> stage_pardo(
            _ReplayPlan(self._min_frames, self._tolerance))
        cold_plans, cold_rejects, written = self._cold(warm_or_cold[1], store=True)
        plans = (warm[MAIN], cold_plans) | "All plans" >> beam.Flatten()
        rejects = (warm[REJECTS], cold_rejects) | "All shot rejects" >> beam.Flatten()
        return {MAIN: plans, REJECTS: rejects, WRITTEN: written}

    def _keys(self):
        return cache_keys(self._shot_params, self._min_frames, self._cache)

    def _cold(self, looked, store: bool):
        """Decode, find shots, embed; with `store`, write shot lists and embeddings back."""
        refs = (looked | "Cold videos" >> beam.Map(lambda v: (v.video.key, v)))
        shots = (looked | "Videos to decode" >> beam.Map(lambda v: v.video)
                 | "Spread videos" >> beam.Reshuffle()
                 | "Split into shots" >> SplitIntoShots(min_frames=self._min_frames,
                                                        truncation_tolerance=self._tolerance,
                                                        **self._shot_params))
        embedded = (shots[MAIN] | "Embed frames" >> EmbedShots(self._spec)
                    | "Key embedded shots" >> beam.Map(lambda s: (s.video.key, s)))  # no pixels now
        listed = shots[SHOT_LISTS] | "Key shot lists" >> beam.MapTuple(lambda v, l: (v.key, l))
        plans = ({"looked": refs, "shots": embedded, "listing": listed}
                 | "Group shots per video" >> beam.CoGroupByKey()
                 | "Plan" >> stage_pardo(_ColdPlan(store), outputs=(SHOT_LIST, FRAME_EMBEDDING)))
        written = []
        if store:
            cache = self._cache
            written = [plans[part] | f"Store {part}" >> WriteCache(cache.root, part, cache.run_id)
                       for part in (SHOT_LIST, FRAME_EMBEDDING)]
        files = (written | "Stored files" >> beam.Flatten() if written
                 else looked.pipeline | "No stored files" >> beam.Create([]))
        return plans[MAIN], shots[REJECTS], files


def cache_keys(shot_params: dict, min_frames: int, cache: VideoCacheSpec):
    """video sha256 -> {part: cache key}: everything each part depends on."""
    shots = dict(shot_params, code=SHOTS_CODE_VERSION)
    if cache.shot_detector_fingerprint:   # absent for the rule-based backends: their keys stay as they were
        shots["detector"] = cache.shot_detector_fingerprint
    decode = {"max_side": shot_params.get("max_side")}

    def keys(sha: str) -> Dict[str, str]:
        out = {SHOT_LIST: cache_key(SHOT_LIST, sha, "", shots),
               FRAME_EMBEDDING: cache_key(FRAME_EMBEDDING, sha, cache.encoder_fingerprint,
                                          {"shots": shots, "min_frames": min_frames})}
        for name, fingerprint in cache.filter_fingerprints.items():
            out[name] = cache_key(name, sha, fingerprint, decode)
        return out
    return keys


def _is_warm(looked: "_Looked") -> bool:
    return looked.shot_list is not None and looked.embeddings is not None


class LookUpCachedPlans(beam.PTransform):
    """VideoRef -> {MAIN: VideoPlan of each video whose shots and embeddings are cached,
    UNCACHED: the other VideoRefs}. Reads the cache only: nothing is decoded or computed
    (what `calibrate` answers from). A cached video now judged truncated gets no plan."""

    def __init__(self, shot_params: dict, min_frames: int, cache: VideoCacheSpec,
                 truncation_tolerance: float = DEFAULT_TRUNCATION_TOLERANCE):
        super().__init__()
        self._keys = cache_keys(dict(shot_params), min_frames, cache)
        self._root, self._min_frames = cache.root, min_frames
        self._tolerance = truncation_tolerance

    def expand(self, videos):
        looked = videos | "Look up" >> _LookUpVideos(self._root, self._keys)
        parts = looked | "Cached or not" >> beam.Partition(lambda v, _: 0 if _is_warm(v) else 1, 2)
        plans = parts[0] | "Replay cached shots" >> stage_pardo(
            _ReplayPlan(self._min_frames, self._tolerance))
        return {MAIN: plans[MAIN], UNCACHED: parts[1] | "Uncached videos" >> beam.Map(lambda v: v.video)}


class StoreNewScores(beam.PTransform):
    """MineFrameSets' NEW_SCORES -> cache entries per filter that is on; returns the files
    written (none for a filter that is off: no empty shard either)."""

    def __init__(self, cache: VideoCacheSpec):
        super().__init__()
        self._cache = cache

    def expand(self, new_scores):
        cache = self._cache
        # only filters that are on have score keys, so only they can have new scores
        names = [name for name in SCORE_FILTERS if name in cache.filter_fingerprints]
        if not names:
            return new_scores.pipeline | "No score files" >> beam.Create([])
        by_filter = new_scores | "By filter" >> beam.Partition(
            lambda item, _: names.index(item[0]), len(names))
        written = [by_filter[i]
                   | f"Encode {name}" >> beam.MapTuple(lambda _, key, values: (key, encode_scores(values)))
                   | f"Store {name}" >> WriteCache(cache.root, name, cache.run_id)
                   for i, name in enumerate(names)]
        return written | "Score files" >> beam.Flatten()


# --- the join ------------------------------------------------------------------------------

class _LookUpVideos(beam.PTransform):
    """VideoRef -> _Looked: hashed, keyed, and joined with every cached part (one cache
    join for all parts, then one join per video)."""

    def __init__(self, root: str, keys):
        super().__init__()
        self._root, self._keys = root, keys

    def expand(self, videos):
        keys = self._keys
        hashed = (videos | "Spread hashing" >> beam.Reshuffle()
                  # the manifest stage hashed every video already; hash only refs made elsewhere
                  | "Hash" >> beam.Map(lambda v: _Looked(v, v.content_sha256 or content_sha256(v.path)))
                  | "Keys" >> beam.Map(lambda v: replace(v, keys=keys(v.sha256))))
        parts = (SHOT_LIST, FRAME_EMBEDDING, *SCORE_FILTERS)
        merges = {part: merge_json_dicts if part in SCORE_FILTERS else None for part in parts}
        found = (hashed
                 | "Ask" >> beam.FlatMap(lambda v: [((part, v.keys[part]), v.video.key)
                                                    for part in parts if part in v.keys])
                 | "Look up parts" >> LookupCacheStages(self._root, merges))
        if not has_entries(self._root, parts):  # nothing cached yet: all missed, nothing to join
            return hashed | "Nothing found" >> beam.Map(
                lambda v: replace(v, known_scores={name: {} for name in SCORE_FILTERS}))
        found_by_video = found[HITS] | "Found" >> beam.MapTuple(
            lambda part_key, video_key, value: (video_key, (part_key[0], value)))
        return ({"looked": hashed | "By video" >> beam.Map(lambda v: (v.video.key, v)),
                 "found": found_by_video}
                | "Join per video" >> beam.CoGroupByKey() | "Assemble" >> beam.MapTuple(_assemble))


def _assemble(_video_key, parts) -> _Looked:
    (looked,) = parts["looked"]
    found = dict(parts["found"])  # one value per part: the cache join merged or picked it
    return replace(
        looked,
        shot_list=decode_json(found[SHOT_LIST]) if SHOT_LIST in found else None,
        embeddings=decode_array(found[FRAME_EMBEDDING]) if FRAME_EMBEDDING in found else None,
        known_scores={name: decode_scores(found[name]) if name in found else {}
                      for name in SCORE_FILTERS})


# --- plans -----------------------------------------------------------------------------------

def _plan(looked: _Looked, shots: List[ShotFrames], listing: dict) -> VideoPlan:
    """The plan of a video decoded whole (now or when `listing` was cached): its ref
    carries the digest of its decoded frames."""
    video = replace(looked.video, frames_sha256=listing["frames_sha256"])
    return VideoPlan(video=video, shots=shots, known_scores=looked.known_scores,
                     score_keys={name: looked.keys[name] for name in SCORE_FILTERS
                                 if name in looked.keys})


class _ReplayPlan(StageFn):
    """A video whose shot list and embeddings are cached: no decode, no model. Counts as
    the shots stage would have (replay_shots counts its videos and shots, already tagged
    rejects included) and notes the embed stage's frames."""
    stage, level = SHOTS_STAGE, "video"
    counts_in = counts_out = False  # replay_shots counts; a plan is no shots-stage item

    def __init__(self, min_frames: int, tolerance: float):
        self._min_frames, self._tolerance = min_frames, tolerance

    def setup(self):
        self._embed = StageCounts(EMBED_STAGE)

    def judge(self, looked: _Looked):
        shots, video_rejected = [], False
        for out in replay_shots(self.counts, looked.video, looked.shot_list, self._min_frames,
                                self._tolerance):
            if isinstance(out, beam.pvalue.TaggedOutput):
                video_rejected |= out.value.level == "video"
                yield out
            else:
                shots.append(out)
        if video_rejected:  # truncated under this run's tolerance: no plan
            return
        sizes = [len(s.frame_indices) for s in shots]
        if sum(sizes) != len(looked.embeddings):  # a key collision would be a bug: fail loudly
            raise ValueError(f"{looked.video.key}: cached embeddings hold {len(looked.embeddings)} "
                             f"rows but the cached shot list keeps {sum(sizes)} frames")
        parts = np.split(looked.embeddings, np.cumsum(sizes)[:-1]) if shots else []
        for name in ("frame.in", "frame.out", "frame.cached"):
            self._embed.note(name, sum(sizes))
        yield _plan(looked, [replace(s, embeddings=e) for s, e in zip(shots, parts)],
                    looked.shot_list)


class _ColdPlan(StageFn):
    """A decoded video's embedded shots -> its plan (and, with `store`, what to cache).

    Only a video with a shot list (decoded whole, SplitIntoShots) gets a plan: the shots
    of one rejected after they went out (truncated, broken half-way) stop here. A video
    whose shots were all too short gets a plan without shots, as a replayed one does
    (every video decoded whole is judged for duplicates). Notes the embed stage's
    frame.in/out (EmbedShots counts shots, not frames)."""
    stage, level = EMBED_STAGE, "frame"
    counts_in = counts_out = False  # a video's frames are counted in bulk below

    def __init__(self, store: bool):
        self._store = store

    def judge(self, grouped):
        _, parts = grouped
        (looked,) = parts["looked"]
        listing = next(iter(parts["listing"]), None)
        if listing is None:  # the shots stage rejected the video: its reject stands for them
            return
        shots = sorted(parts["shots"], key=lambda s: s.shot_index)
        frames = sum(len(s.frame_indices) for s in shots)
        self.counts.seen(frames, level="frame")
        self.counts.count_out(frames, level="frame")
        if self._store:  # only videos decoded whole are stored
            if looked.shot_list is None:
                yield beam.pvalue.TaggedOutput(SHOT_LIST, (looked.keys[SHOT_LIST], encode_json(listing)))
            if looked.embeddings is None:  # (0, 0) when every shot was too short
                matrix = (np.concatenate([s.embeddings for s in shots]).astype(np.float32)
                          if shots else np.zeros((0, 0), np.float32))
                yield beam.pvalue.TaggedOutput(FRAME_EMBEDDING,
                                               (looked.keys[FRAME_EMBEDDING], encode_array(matrix)))
        yield _plan(looked, shots, listing)


# --- score values ------------------------------------------------------------------------------

def encode_scores(values: Dict[int, float]) -> bytes:
    """{frame number: score} as JSON; an infinite BRISQUE (featureless frame) as "inf"."""
    return encode_json({str(k): (v if math.isfinite(v) else str(v)) for k, v in values.items()})


def decode_scores(value: bytes) -> Dict[int, float]:
    # ints (OCR character counts) stay ints; floats and "inf" become floats
    return {int(k): v if isinstance(v, int) else float(v) for k, v in decode_json(value).items()}
