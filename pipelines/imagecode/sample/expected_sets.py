"""The sets a build of the embedded sample will mine, worked out before that build, in
this process: no Beam pipeline, no release. The sample's simulated crowd answers
(crowd.py beside this file) are made for them.

Why worked out here, not shipped with the code. An answer counts only on what its worker
saw: it carries its task's `task_fingerprint`, a digest of the task's content ids,
`video:<sha256 of the mp4's bytes>#frame<n>` and `image:<sha256 of the file's bytes>`
(crowd/records.py, transforms/crowd/shown.py). The sample is generated on each machine,
and its bytes are that machine's: x264 writes its build and settings into every stream,
the mp4 names the libavformat that muxed it, ffmpeg's drawtext rasterises the captions
with the local FreeType, and the photos are the installed scikit-image's. Which frames
a set takes follows the decoded pixels, BRISQUE, and the installed Tesseract's reading of
each frame. So answers made on one machine would bind, on another, to content its build
does not show: every one a stale_answer. They are made where the sample is, from what its
build will mine.

How, without a build. The deciding is done by the build's own code, run here on the
sample's inputs under configs/sample.yaml: the manifest's line rule and content hash
(transforms/video/manifest.py); the cold video plan, decode + shots + embeddings in one
call per video (video/plans.py plans_in_process, the build's DoFn); the greedy miner
with its quality gate (video/scoring.py mine_in_process, the build's DoFn); for the
static sets, the image manifest's line rule, the hash and pixel limit, the build's
encoder handler, the seeded sample of queries and the exact kNN
(transforms/vectors/knn.py: one flat search over every vector gives, by construction,
what the build's sharded search gives), then the set names, splits and public paths of
static/sets.py and static/release.py. What is written here is the wiring between them,
and the steps that only group (one item per name or content:
transforms.core.stage.first_per_key, KeepFirst's rule; the sampling per source:
video/sampling.py's rule). Every setting is the build's own, from params.py
(video_params, static_params, encoder_spec, quality_rule).
tests/imagecode/test_imagecode_e2e.py checks that these sets give exactly the task files
a build of the sample exports.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
from collections import defaultdict
from typing import Dict, List

import numpy as np

from pipelines.config import load_config
from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.video.scoring import mine_in_process
from pipelines.imagecode.names import compat_image_path
from pipelines.imagecode.params import (SamplingParams, StaticParams, VideoParams, encoder_spec, quality_rule,
                                        static_params, video_params)
from pipelines.imagecode.records import FrameSet
from pipelines.imagecode.crowd.records import AnnotationSet
from pipelines.imagecode.static.sets import assign_split, check_split_ratios, static_set_name
from pipelines.imagecode.video.plans import plans_in_process
from schemas.names import safe_name
from schemas.records import ImageEmbedding, ImageRef, VideoRef
from transforms.core.hashing import content_sha256
from transforms.core.sampling import priority
from transforms.core.stage import first_per_key
from transforms.image.collection import check_pixel_limit, is_manifest, parse_image_line
from transforms.image.content import image_content
from transforms.image.decode import Unreadable
from transforms.image.embed import ImageEncoderHandler
from transforms.io.lines import read_numbered_lines
from transforms.vectors.knn import shard_topk_rows
from transforms.video.manifest import parse_manifest_line


def sample_config(config_path: str, videos: str, images: str) -> ImageCodeConfig:
    """The sample config as a build of the sample resolves it, reading `videos` and
    `images` (the crowd answers are what is being made: none yet)."""
    return load_config(config_path, [f"inputs.videos={videos}", f"static.images={images}",
                                     "crowd.descriptions=null", "crowd.retrievals=null"],
                       ImageCodeConfig)


def mined_sets(cfg: ImageCodeConfig) -> List[AnnotationSet]:
    """Every set a build of `cfg` hands to the crowd rounds: the video sets, then the
    static ones."""
    encoder = encoder_spec(cfg)
    with tempfile.TemporaryDirectory(prefix="imagecode-sample-sets-") as work:
        video_sets = _video_sets(video_params(cfg), encoder, quality_rule(cfg), work)
    return ([AnnotationSet.from_frame_set(s) for s in video_sets]
            + _static_sets(static_params(cfg), encoder))


# --- video sets (pipeline._video_sets) -------------------------------------------------

def _video_sets(v: VideoParams, encoder, gate_factory, work: str) -> List[FrameSet]:
    """The video stages' settings as the build has them (params.py)."""
    plans = plans_in_process(_manifest_videos(v.videos),
                             **v.plan_settings(encoder, os.path.join(work, "embeddings")))
    # one video per decoded content (video/content.py)
    plans = first_per_key(plans, key=lambda plan: plan.video.frames_sha256,
                          order=lambda plan: plan.video.listed_order)
    mined = mine_in_process(plans, **v.mine_settings(gate_factory, work))
    return _sampled(mined, v.sampling)


def _manifest_videos(manifest: str) -> List[VideoRef]:
    """The videos the manifest stage passes on: lines that parse, files that hash, one
    line per content, then one per set-name prefix (the first line of each)."""
    videos = []
    for line in read_numbered_lines(manifest):
        parsed = parse_manifest_line(line, os.path.dirname(line.path))
        if not isinstance(parsed, VideoRef):
            continue   # the build's reject (bad_json, missing_field, path_not_found ...)
        try:
            sha = content_sha256(parsed.path)
        except OSError:
            continue   # unreadable_video
        videos.append(dataclasses.replace(parsed, content_sha256=sha, file=line.path,
                                          line=line.number))
    videos = first_per_key(videos, key=lambda v: v.content_sha256, order=lambda v: v.listed_order)
    return first_per_key(videos, key=lambda v: (safe_name(v.source), safe_name(v.video_id)),
                         order=lambda v: v.listed_order)


def _sampled(sets: List[FrameSet], sampling: SamplingParams) -> List[FrameSet]:
    """video/sampling.py's rule: a source with a quota keeps the sets of lowest
    priority(seed, set name), the others keep every set."""
    by_source: Dict[str, List[FrameSet]] = defaultdict(list)
    for frame_set in sets:
        by_source[frame_set.source].append(frame_set)
    kept = []
    for source, found in by_source.items():
        quota = sampling.quota(source)
        if quota is None:
            kept += found
            continue
        chosen = {name for _, name in sorted(
            (priority(sampling.seed, s.set_name), s.set_name) for s in found)[:quota]}
        kept += [s for s in found if s.set_name in chosen]
    return kept


# --- static sets (pipeline._static_sets) -----------------------------------------------

def _static_sets(static: StaticParams, encoder) -> List[AnnotationSet]:
    """The static stages' settings as the build has them (params.py)."""
    if not static.images:
        return []
    images = _distinct_images(static.images, static.max_pixels, encoder)
    # the seeded sample of queries (static/sets.py BuildStaticSets): lowest priorities, ranked
    queries = sorted((priority(static.seed, e.image_id), e.image_id) for e in images)
    if static.n_sets is not None:
        queries = queries[:static.n_sets]
    if not queries:
        return []
    by_id = {e.image_id: e for e in images}
    query_ids = [image_id for _, image_id in queries]
    found = shard_topk_rows(np.stack([by_id[i].embedding for i in query_ids]), query_ids,
                            np.stack([e.embedding for e in images]), [e.image_id for e in images],
                            static.neighbours, exclude_self=True)
    ratios = check_split_ratios(static.split_ratios)
    sets = []
    for rank, (query_id, neighbours) in enumerate(zip(query_ids, found)):
        if len(neighbours) < static.neighbours:
            continue   # too_few_neighbours
        name = static_set_name(safe_name(static.source), rank, query_id)
        members = [query_id] + [image_id for _, image_id, _ in neighbours]
        # static/release.py: the set's images at their public paths, each known by its bytes
        sets.append(AnnotationSet.from_static_row({
            "set_name": name, "source": static.source,
            "split": assign_split(static.seed, name, ratios),
            "image_paths": [compat_image_path(name, i) for i in range(len(members))],
            "image_sha256s": [by_id[i].content_sha256 for i in members]}))
    return sets


def _distinct_images(source: str, max_pixels: int, spec) -> List[ImageEmbedding]:
    """The images the static sets are drawn from: manifest lines that parse (one per id),
    files that hash within the pixel limit (one per content), decoded and embedded by the
    build's encoder handler, then one per decoded content."""
    if not is_manifest(source):
        raise ValueError(f"the sample's images are a manifest of paths and ids, not {source}")
    base_dir = os.path.dirname(os.path.abspath(source))
    refs = [ref for ref in (parse_image_line(line, base_dir) for line in read_numbered_lines(source))
            if isinstance(ref, ImageRef)]
    refs = first_per_key(refs, key=lambda ref: ref.image_id, order=lambda ref: ref.path)
    hashed = []
    for ref in refs:
        try:
            sha = content_sha256(ref.path)
            check_pixel_limit(ref.path, max_pixels)
        except Exception:  # noqa: BLE001 - the build's reject (unreadable_image, too_many_pixels)
            continue
        hashed.append(dataclasses.replace(ref, content_sha256=sha))
    hashed = first_per_key(hashed, key=lambda ref: ref.content_sha256,
                           order=lambda ref: (ref.image_id, ref.path))
    handler = ImageEncoderHandler(spec, max_pixels)
    model = handler.load_model()
    embedded = []
    for start in range(0, len(hashed), spec.batch_size):
        for result in handler.run_inference(hashed[start:start + spec.batch_size], model):
            if isinstance(result.inference, Unreadable):
                continue   # unreadable_image
            embedding, sha, pixels = result.inference
            embedded.append(ImageEmbedding(
                image_id=result.example.image_id, path=result.example.path, content_sha256=sha,
                embedding=np.asarray(embedding, dtype=np.float32), pixels_sha256=pixels))
    return first_per_key(embedded, key=image_content, order=lambda e: (e.image_id, e.path))
