"""What each ImageCoDe stage is given, from the config: the one place that maps config
keys to transform parameters (the build and `calibrate` must agree on them, since they
also make the cache keys).

`build_rules` builds the rules a build is made of once (in the benchmark's `prepare`):
the encoder spec and its identity, the quality gate and its filters' identities. The
stages, the cache keys and the data card take them whole; nothing rebuilds them from
the config (the OCR identity starts a Tesseract process, the open_clip one hashes the
weights)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.quality_gate import QualityRule
from pipelines.imagecode.video_plans import VideoCacheSpec
from transforms.image.encoders import EncoderSpec, encoder_identity


@dataclass(frozen=True)
class ImageCodeRules:
    """The encoder and the quality gate of one build, with the identities the manifest
    records and the cache keys carry."""
    encoder: EncoderSpec
    encoder_identity: Dict[str, Any]
    quality: QualityRule
    filter_identities: Dict[str, dict]   # "brisque"/"ocr": only the filters that are on
    shot_detector_identity: Optional[Dict[str, Any]] = None   # a learned detector (transnetv2) only
    devices: Dict[str, dict] = field(default_factory=dict)     # per model stage: setting, device, versions
    stats_parser_identity: Optional[Dict[str, Any]] = None     # stats.parser (spaCy): no cache key

    @property
    def models(self) -> Dict[str, dict]:
        """What the manifest records about the models (Plan.models)."""
        detector = {"shot_detector": self.shot_detector_identity} if self.shot_detector_identity else {}
        parser = {"stats_parser": self.stats_parser_identity} if self.stats_parser_identity else {}
        return {"image_encoder": self.encoder_identity, **self.filter_identities, **detector,
                **parser, "devices": self.devices}

    @property
    def encoder_fingerprint(self) -> str:
        return self.encoder_identity["fingerprint"]

    def video_cache_spec(self, root: str, run_id: str, jpeg_quality: int = 0) -> VideoCacheSpec:
        """Where the video stage's cache is and the model fingerprints its keys carry;
        with `jpeg_quality` (the release's), it keeps the frames' JPEGs too."""
        jpeg_fingerprint = ""
        if jpeg_quality:
            from transforms.cache.store import fingerprint
            from transforms.video import frame_images
            jpeg_fingerprint = fingerprint(frame_images.identity())
        return VideoCacheSpec(
            jpeg_quality=jpeg_quality, jpeg_fingerprint=jpeg_fingerprint,
            root=root, run_id=run_id, encoder_fingerprint=self.encoder_fingerprint,
            filter_fingerprints={name: identity["fingerprint"]
                                 for name, identity in self.filter_identities.items()},
            shot_detector_fingerprint=(self.shot_detector_identity or {}).get("fingerprint", ""))


def build_rules(cfg: ImageCodeConfig) -> ImageCodeRules:
    """The rules from the config, each built once."""
    encoder = encoder_spec(cfg)
    quality = quality_rule(cfg)
    detector = None
    if cfg.shots.backend == "transnetv2":   # its weights decide the shots: they key the shot lists
        from transforms.video import transnetv2
        detector = transnetv2.identity()
    parser = None
    if cfg.stats.parser:   # the language statistics' tree depth (Table 4)
        from transforms.text.parsers import parser_identity
        parser = parser_identity("spacy", cfg.stats.parser)
    return ImageCodeRules(encoder=encoder, encoder_identity=encoder_identity(encoder),
                          quality=quality, filter_identities=quality.identities(),
                          shot_detector_identity=detector, devices=stage_devices(cfg),
                          stats_parser_identity=parser)


def stage_devices(cfg: ImageCodeConfig) -> Dict[str, dict]:
    """The manifest's record of where each model stage of this build runs (the stages on)."""
    from transforms.core.devices import torch_device_record
    from transforms.vectors.knn import knn_identity
    out = {}
    if cfg.embed.kind == "open_clip":
        from transforms.image.encoders import encoder_device, resolve_precision
        spec = encoder_spec(cfg)
        out["embed"] = torch_device_record(cfg.embed.device, "embed.device", precision_setting=cfg.embed.precision,
                                           precision=resolve_precision(spec))
        out["embed"]["device"] = encoder_device(spec)   # int8 runs on the CPU whatever the setting
    if cfg.quality.brisque.enabled:
        out["brisque"] = torch_device_record(cfg.quality.brisque.device, "quality.brisque.device")
    if cfg.shots.backend == "transnetv2":
        out["shots"] = torch_device_record(cfg.shots.transnetv2_device, "shots.transnetv2_device")
    if cfg.static.images:
        out["static_knn"] = knn_identity(cfg.static.knn.spec())
    return out


def encoder_spec(cfg: ImageCodeConfig) -> EncoderSpec:
    e = cfg.embed
    return EncoderSpec(kind=e.kind, model_name=e.model_name, pretrained=e.pretrained,
                       checkpoint=e.checkpoint, batch_size=e.batch_size, device=e.device,
                       thumbnail_size=e.thumbnail_size, precision=e.precision)


def quality_rule(cfg: ImageCodeConfig) -> QualityRule:
    q = cfg.quality
    return QualityRule(
        brisque_enabled=q.brisque.enabled, max_brisque=q.brisque.max_score,
        brisque_model_dir=q.brisque.model_dir, brisque_features=q.brisque.features,
        brisque_device=q.brisque.device, brisque_frames_per_call=q.brisque.frames_per_call,
        ocr_enabled=q.ocr.enabled, max_text_chars=q.ocr.max_text_chars,
        min_confidence=q.ocr.min_confidence, lang=q.ocr.lang,
        ocr_backend=q.ocr.backend, tessdata=q.ocr.tessdata, tesseract_cmd=q.ocr.tesseract_cmd)


def shot_params(cfg: ImageCodeConfig) -> dict:
    """SplitIntoShots' settings from the config (they also key the cached shot lists)."""
    backend = cfg.shots.backend
    thresholds = {"pyscenedetect": cfg.shots.pyscenedetect_threshold,
                  "ffmpeg": cfg.shots.ffmpeg_threshold,
                  "transnetv2": cfg.shots.transnetv2_threshold}
    params = dict(backend=backend, threshold=thresholds[backend],
                  min_scene_len=cfg.shots.min_scene_len, stride=cfg.decode.stride,
                  max_side=cfg.decode.max_side or None)
    if backend == "transnetv2":
        # Another device may round a probability at the threshold the other way: its shot
        # lists are cached apart, under the device the setting means on this machine (not
        # "auto", which means another device elsewhere). The CPU keeps the key it always had.
        from transforms.core.devices import resolve_torch_device
        device = resolve_torch_device(cfg.shots.transnetv2_device, "shots.transnetv2_device")
        if device != "cpu":
            params["device"] = device
    return params
