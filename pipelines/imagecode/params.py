"""What each ImageCoDe stage is given, from the config: the one place that maps config
keys to transform parameters (the build and `calibrate` must agree on them, since they
also make the cache keys)."""
from __future__ import annotations

import functools

from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.quality_gate import build_quality_gate
from pipelines.imagecode.video_plans import VideoCacheSpec
from transforms.cache.store import fingerprint
from transforms.image.brisque import brisque_identity
from transforms.image.encoders import EncoderSpec, encoder_identity
from transforms.image.ocr import ocr_identity


def encoder_spec(cfg: ImageCodeConfig) -> EncoderSpec:
    e = cfg.embed
    return EncoderSpec(kind=e.kind, model_name=e.model_name, pretrained=e.pretrained,
                       checkpoint=e.checkpoint, batch_size=e.batch_size, device=e.device,
                       thumbnail_size=e.thumbnail_size)


def quality_gate_factory(cfg: ImageCodeConfig):
    """A picklable zero-argument factory; the gate (and its models) is built on the worker."""
    q = cfg.quality
    return functools.partial(
        build_quality_gate,
        brisque_enabled=q.brisque.enabled, max_brisque=q.brisque.max_score,
        brisque_model_dir=q.brisque.model_dir, brisque_features=q.brisque.features,
        ocr_enabled=q.ocr.enabled, max_text_chars=q.ocr.max_text_chars,
        min_confidence=q.ocr.min_confidence, lang=q.ocr.lang)


def shot_params(cfg: ImageCodeConfig) -> dict:
    """SplitIntoShots' settings from the config (they also key the cached shot lists)."""
    backend = cfg.shots.backend
    return dict(backend=backend,
                threshold=(cfg.shots.pyscenedetect_threshold if backend == "pyscenedetect"
                           else cfg.shots.ffmpeg_threshold),
                min_scene_len=cfg.shots.min_scene_len, stride=cfg.decode.stride,
                max_side=cfg.decode.max_side or None)


def filter_identities(cfg: ImageCodeConfig) -> dict:
    """Identities of the quality filters that are on (manifest; cache key fingerprints)."""
    q, out = cfg.quality, {}
    if q.brisque.enabled:
        out["brisque"] = brisque_identity(q.brisque.model_dir, q.brisque.features)
    if q.ocr.enabled:
        out["ocr"] = ocr_identity(q.ocr.min_confidence, q.ocr.lang)
    return {name: dict(identity, fingerprint=fingerprint(identity)) for name, identity in out.items()}


def video_cache_spec(cfg: ImageCodeConfig, root: str, run_id: str) -> VideoCacheSpec:
    """Where the video stage's cache is and the model fingerprints its keys carry."""
    return VideoCacheSpec(
        root=root, run_id=run_id,
        encoder_fingerprint=encoder_identity(encoder_spec(cfg))["fingerprint"],
        filter_fingerprints={name: identity["fingerprint"]
                             for name, identity in filter_identities(cfg).items()})
