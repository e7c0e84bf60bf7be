"""From videos to mining plans: shots and frame embeddings, from the cache when it has
them (ImageCoDe §3.1 "Video Frames", before the greedy miner).

    videos -> content sha256 -> cache join (shot list, where the embeddings are, BRISQUE, OCR
              scores, where the frame images are)
      all of shots + embeddings cached ("warm"): replay the shot list, no decode, no model
      else ("cold"): decode + detect shots + embed, one video per call; store shot list + embeddings
    -> VideoPlan (shots, where their embeddings are, known quality scores) -> MineFrameSets

Entries are per video. Shot lists and embeddings are keyed by the video's bytes and
every setting they depend on (decode, shot detection, shortest shot, encoder identity
incl. weights). Quality scores are keyed by the bytes, the decode size and the filter's
model identity, not by thresholds: each run stores the scores it computed, and a lookup
merges every run's entries, so a score is computed once whatever thresholds come later.
Frame images (the JPEG of every frame a build scored or published, keyed by the bytes,
the decode size, the JPEG quality and encoder: transforms/video/frame_images.py) are
added to the same way, one bundle per build and video, and let the miner publish a
frame without decoding its video; the miner counts them (frame.served_from_cache), so
the cache stage itself is not counted (`quiet`).

Without a cache root the same plans are built the cold way, and nothing is stored. A
cache with no entries yet (a cold build) is asked nothing it cannot answer: the graph then
has no per-video join and no warm branch (transforms/cache/store.py has_entries), and the
cache counters are the same as the join's.

Memory is bounded by the videos in flight, not by the manifest (issue 28). On a batch
runner every grouping step holds its whole input (Beam's local runner in one process),
so what is big never reaches one: a cold video is decoded, split into shots and embedded
in one call (pixels never leave it; `_DecodeAndEmbed`), its embeddings go to the cache
and to a file in the build's work folder, and the plan carries only where they are
(records.EmbeddingsAt); a warm video's plan points into the cache shard (the lookup joins
references, not values). The miner reads the embeddings of the video it mines. What the
joins and the one-video-per-content step group is small: refs, keys, shot spans (frame
numbers), known scores. tests/imagecode/video/test_video_stage_memory.py keeps it so.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from pipelines.imagecode.video.scoring import SCORE_FILTERS
from pipelines.imagecode.records import EmbeddingsAt, VideoPlan
from schemas.records import ShotFrames, VideoRef
from transforms.cache.read_through import WRITTEN
from transforms.cache.store import (HITS, EntryRef, LookupCacheStages, WriteCache, cache_key,
                                    decode_json, encode_array, encode_json, every_entry,
                                    has_entries, merge_json_dicts)
from transforms.core.hashing import content_sha256
from transforms.core.stage import MAIN, REJECTS, StageCounts, StageFn, apply_in_process, stage_pardo
from transforms.image.embed import STAGE as EMBED_STAGE
from transforms.image.embed import ShotEmbedder
from transforms.video.shots import DEFAULT_TRUNCATION_TOLERANCE, SHOT_LISTS
from transforms.video.shots import STAGE as SHOTS_STAGE
from transforms.video.shots import detect_shots, replay_shots

SHOT_LIST, FRAME_EMBEDDING = "shot_list", "frame_embedding"
FRAME_IMAGE = "frame_image"   # bundles of frames' JPEGs (transforms/video/frame_images.py)
FRAME_IMAGE_CODE_VERSION = "frame_image/v1"
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
    jpeg_quality: int = 0                # of the published frames; 0: no frame images cached
    jpeg_fingerprint: str = ""           # the JPEG encoder's identity (frame_images.identity)


@dataclass
class _Looked:
    """One video after the cache join."""
    video: VideoRef
    sha256: str
    shot_list: Optional[dict] = None
    embeddings: Optional[EntryRef] = None  # where the cached embeddings are, not them
    frame_images: Tuple[EntryRef, ...] = ()  # where the cached frame images are
    known_scores: Dict[str, Dict[int, float]] = field(default_factory=dict)
    keys: Dict[str, str] = field(default_factory=dict)


class PlanVideos(beam.PTransform):
    """VideoRef -> {MAIN: VideoPlan, REJECTS: shot-stage rejects, WRITTEN: cache files}.

    `shot_params` are SplitIntoShots' arguments (backend, threshold, min_scene_len,
    stride, max_side); `min_frames` the shortest shot kept; `truncation_tolerance` the
    share of promised frames a video may miss (not part of the cache key: a cached shot
    list keeps its decode facts and is judged again). `cache` None: no cache.
    `spill_dir`: where the embeddings of the videos embedded now wait for the miner (a
    folder of the build's work space, one file per video).
    Counters: stage "shots" as SplitIntoShots (replayed for cached videos); stage
    "embed" as EmbedShots (shot.in/out, the replayed videos' shots too; the work
    frame.embedded, model.loaded), frame.in/out (every frame of a planned video given an
    embedding) and the work frame.cached. Only a video
    decoded whole gets a plan or a cache entry."""

    def __init__(self, shot_params: dict, min_frames: int, encoder_spec, spill_dir: str,
                 cache: Optional[VideoCacheSpec] = None,
                 truncation_tolerance: float = DEFAULT_TRUNCATION_TOLERANCE):
        super().__init__()
        self._shot_params, self._min_frames = dict(shot_params), min_frames
        self._spec, self._cache = encoder_spec, cache
        self._spill_dir = spill_dir
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
        """Decode, find shots, embed, one video per call; with `store`, write shot lists and
        embeddings back. The cache's writer takes one embedding matrix at a time."""
        plans = (looked
                 | "Spread videos" >> beam.Reshuffle()
                 | "Shots and embeddings per video" >> stage_pardo(
                     _DecodeAndEmbed(self._shot_params, self._min_frames, self._tolerance,
                                     self._spec, self._spill_dir, store),
                     outputs=(SHOT_LIST, FRAME_EMBEDDING)))
        written = []
        if store:
            cache = self._cache
            written = [plans[part] | f"Store {part}" >> WriteCache(
                           cache.root, part, cache.run_id,
                           rows_per_group=1 if part == FRAME_EMBEDDING else 0)
                       for part in (SHOT_LIST, FRAME_EMBEDDING)]
        files = (written | "Stored files" >> beam.Flatten() if written
                 else looked.pipeline | "No stored files" >> beam.Create([]))
        return plans[MAIN], plans[REJECTS], files


def plans_in_process(videos, shot_params: dict, min_frames: int, encoder_spec, spill_dir: str,
                     truncation_tolerance: float = DEFAULT_TRUNCATION_TOLERANCE) -> List[VideoPlan]:
    """PlanVideos' cold path without a cache, run here on VideoRefs in hand (no pipeline):
    the plans of the videos decoded whole, by the build's own DoFn; its rejects dropped."""
    fn = _DecodeAndEmbed(shot_params, min_frames, truncation_tolerance, encoder_spec, spill_dir,
                         store=False)
    return apply_in_process(fn, [_Looked(video, "") for video in videos]).get(MAIN, [])


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
        if cache.jpeg_quality:
            out[FRAME_IMAGE] = cache_key(FRAME_IMAGE, sha, cache.jpeg_fingerprint,
                                         dict(decode, jpeg_quality=cache.jpeg_quality,
                                              code=FRAME_IMAGE_CODE_VERSION))
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


class StoreNewFrames(beam.PTransform):
    """MineFrameSets' NEW_FRAMES ((key, bundle) per video) -> frame image cache entries,
    one per row group (a lookup hands on references; the miner reads one video's); returns
    the files written. Not counted here: the miner counts the frames it serves."""

    def __init__(self, cache: VideoCacheSpec):
        super().__init__()
        self._cache = cache

    def expand(self, new_frames):
        cache = self._cache
        return new_frames | "Store frame images" >> WriteCache(
            cache.root, FRAME_IMAGE, cache.run_id, rows_per_group=1, counted=False)


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
        parts = (SHOT_LIST, FRAME_EMBEDDING, *SCORE_FILTERS, FRAME_IMAGE)
        merges = {part: merge_json_dicts if part in SCORE_FILTERS else None for part in parts}
        merges[FRAME_IMAGE] = every_entry   # each build's bundle holds a part
        found = (hashed
                 | "Ask" >> beam.FlatMap(lambda v: [((part, v.keys[part]), v.video.key)
                                                    for part in parts if part in v.keys])
                 # embeddings and frame images by reference: a few bytes per entry
                 | "Look up parts" >> LookupCacheStages(
                     self._root, merges, by_reference=(FRAME_EMBEDDING, FRAME_IMAGE),
                     quiet=(FRAME_IMAGE,)))
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
        embeddings=found.get(FRAME_EMBEDDING),
        frame_images=tuple(found.get(FRAME_IMAGE, ())),
        known_scores={name: decode_scores(found[name]) if name in found else {}
                      for name in SCORE_FILTERS})


# --- plans -----------------------------------------------------------------------------------

def _plan(looked: _Looked, shots: List[ShotFrames], listing: dict,
          embeddings: Optional[EmbeddingsAt]) -> VideoPlan:
    """The plan of a video decoded whole (now or when `listing` was cached): its ref
    carries the digest of its decoded frames."""
    video = replace(looked.video, frames_sha256=listing["frames_sha256"])
    return VideoPlan(video=video, shots=shots, embeddings=embeddings,
                     known_scores=looked.known_scores,
                     score_keys={name: looked.keys[name] for name in SCORE_FILTERS
                                 if name in looked.keys},
                     frame_images=looked.frame_images, frame_key=looked.keys.get(FRAME_IMAGE, ""))


class _ReplayPlan(StageFn):
    """A video whose shot list and embeddings are cached: no decode, no model. Counts as
    the shots and embed stages would have (replay_shots counts its videos and shots,
    already tagged rejects included), and the embed stage's cached frames as work. The plan points at the cached
    embeddings; the miner reads them (and checks they are the shot list's frames)."""
    stage, level = SHOTS_STAGE, "video"
    counts_in = counts_out = False  # replay_shots counts; a plan is no shots-stage item

    def __init__(self, min_frames: int, tolerance: float):
        self._min_frames, self._tolerance = min_frames, tolerance

    def setup(self):
        self._embed = StageCounts(EMBED_STAGE)

    def judge(self, looked: _Looked):
        # the shots a cold build would have embedded (every one long enough, also of a
        # video then found truncated): counted in and out of the embed stage as it would,
        # so its counts follow the data, not the cache
        embedded = sum(len(s["frames"]) >= self._min_frames for s in looked.shot_list["shots"])
        self._embed.seen(embedded, level="shot")
        self._embed.count_out(embedded, level="shot")
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
        frames = sum(len(s.frame_indices) for s in shots)
        self._embed.seen(frames, level="frame")
        self._embed.count_out(frames, level="frame")
        self._embed.work("frame.cached", frames)
        yield _plan(looked, shots, looked.shot_list, EmbeddingsAt(entry=looked.embeddings))


class _DecodeAndEmbed(beam.DoFn):
    """A video to be decoded -> its plan (MAIN), the shots stage's rejects (REJECTS) and,
    with `store`, what to cache (SHOT_LIST, FRAME_EMBEDDING: (key, value bytes)).

    SplitIntoShots and EmbedShots in one call (transforms/video/shots.py detect_shots,
    transforms/image/embed.py ShotEmbedder): each shot is embedded as it ends and its
    pixels let go, so the call holds one video's embeddings and a few shots' pixels. The
    matrix goes to a file under `spill_dir` (and to the cache); the plan says where.

    Only a video with a shot list (decoded whole) gets a plan or a cache entry: the shots
    of one rejected once its decode ended (truncated, broken half-way) were embedded and
    counted as EmbedShots counts them, and stop here. A video whose shots were all too
    short gets a plan without shots, as a replayed one does (every video decoded whole
    is judged for duplicates). Notes the embed stage's frame.in/out for planned videos."""

    def __init__(self, shot_params: dict, min_frames: int, tolerance: float, encoder_spec,
                 spill_dir: str, store: bool):
        self._shot_params, self._min_frames = dict(shot_params), min_frames
        self._tolerance = tolerance
        self._embedder = ShotEmbedder(encoder_spec)
        self._spill_dir, self._store = spill_dir, store

    def setup(self):
        self._embedder.setup()
        self._shots = StageCounts(SHOTS_STAGE)
        self._embed = StageCounts(EMBED_STAGE)

    def process(self, looked: _Looked):
        found = {"listing": None, "rejects": []}

        def shots():  # the shots stage's output: shots on to the encoder, the rest kept
            for out in detect_shots(self._shots, looked.video, self._shot_params,
                                    self._min_frames, self._tolerance):
                if isinstance(out, ShotFrames):  # with its pixels, let go once embedded
                    yield out
                elif out.tag == SHOT_LISTS:
                    found["listing"] = out.value[1]
                else:
                    found["rejects"].append(out)  # counted by detect_shots

        embedded = sorted(self._embedder.embed(shots()), key=lambda s: s.shot_index)
        yield from found["rejects"]
        listing = found["listing"]
        if listing is None:  # the shots stage rejected the video: its reject stands for them
            return
        frames = sum(len(s.frame_indices) for s in embedded)
        self._embed.seen(frames, level="frame")
        self._embed.count_out(frames, level="frame")
        # (0, 0) when every shot was too short, as the cache has always kept it
        value = encode_array(np.concatenate([s.embeddings for s in embedded]).astype(np.float32)
                             if embedded else np.zeros((0, 0), np.float32))
        shots = [replace(s, embeddings=None) for s in embedded]
        del embedded
        if self._store:  # only videos decoded whole are stored
            if looked.shot_list is None:
                yield beam.pvalue.TaggedOutput(SHOT_LIST, (looked.keys[SHOT_LIST], encode_json(listing)))
            if looked.embeddings is None:
                yield beam.pvalue.TaggedOutput(FRAME_EMBEDDING, (looked.keys[FRAME_EMBEDDING], value))
        spilled = None
        if shots:
            spilled = EmbeddingsAt(spill=self._spill_path(looked.video))
            with FileSystems.create(spilled.spill) as f:
                f.write(value)
        yield _plan(looked, shots, listing, spilled)

    def _spill_path(self, video: VideoRef) -> str:
        # the key, hashed: unique per manifest (duplicate keys are rejected before) and
        # a safe file name whatever characters the id has
        name = hashlib.sha256(video.key.encode("utf-8")).hexdigest()[:32]
        return FileSystems.join(self._spill_dir, f"{name}.npy")


# --- score values ------------------------------------------------------------------------------

def encode_scores(values: Dict[int, float]) -> bytes:
    """{frame number: score} as JSON; an infinite BRISQUE (featureless frame) as "inf"."""
    return encode_json({str(k): (v if math.isfinite(v) else str(v)) for k, v in values.items()})


def decode_scores(value: bytes) -> Dict[int, float]:
    # ints (OCR character counts) stay ints; floats and "inf" become floats
    return {int(k): v if isinstance(v, int) else float(v) for k, v in decode_json(value).items()}
