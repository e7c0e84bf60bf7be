"""What each ImageCoDe stage is given, from the config: the one place that maps config
keys to transform parameters. A threshold travels YAML (configs/*.yaml) -> config.py
(its type and range) -> here (the stage's parameter) -> the stage, which takes it as an
argument and never sees the config. pipeline.py reads nothing from the config but
through the functions below; `calibrate` and the sample's expected sets
(sample/expected_sets.py) use the same ones, so the three agree (the parameters also
make the cache keys).

Per part of the paper, one small frozen record:

    video_params(cfg)     §3.1 Video Frames: decode, shots, the miner, its JPEGs, sampling
    static_params(cfg)    §3.1 Static Pictures: the collection, the kNN sets, their splits
    crowd_params(cfg)     §3.2-3.3: targets, the answer files, where tasks were exported
    stats_params(cfg)     §4: the language statistics' parser, the static sources (§4.3)
    leakage_params(cfg)   the leakage check: what a split conflict does

Inputs (the video manifest, the image collection, the answer files and the releases
whose task files they answer) are config keys like the thresholds, and travel the same
way, in the record of the part that reads them: a part is given what it reads and how
in one record, and whether it runs at all (no static images: no static sets; no
retrievals: no descriptions table) is read there too. So pipeline.py names no config
key at all. Where the cache is and the build's staging folder are the runner's
(pipelines/build.py), passed to build_pipeline beside the config.

`build_rules` builds the rules a build is made of once (in the benchmark's `prepare`):
the encoder spec and its identity, the quality gate and its filters' identities. The
stages, the cache keys and the data card take them whole; nothing rebuilds them from
the config (the OCR identity starts a Tesseract process, the open_clip one hashes the
weights). `encoder_spec`, `quality_rule` and `shot_params` are the cheap parts of them,
for what needs no identity (the sample's expected sets, `calibrate`'s candidates)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.video.plans import VideoCacheSpec
from pipelines.imagecode.video.quality_gate import QualityRule
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


# --- per stage: what pipeline.py hands each part of the paper ---------------------------

@dataclass(frozen=True)
class SamplingParams:
    """§3.1 "we randomly sample ... per source": video sets kept per source, chosen by a
    hash of (seed, set name) (video/sampling.py)."""
    seed: int                        # seed
    quotas: Mapping[str, int]        # sampling.sets_per_source
    default: Optional[int]           # sampling.default: a source not listed; None = every set

    def quota(self, source: str) -> Optional[int]:
        """How many sets `source` keeps; None: all of them."""
        return self.quotas.get(source, self.default)


@dataclass(frozen=True)
class VideoParams:
    """§3.1 Video Frames: the video stages' settings (video/)."""
    videos: Optional[str]            # inputs.videos: the manifest (an input)
    shots: Mapping[str, Any]         # SplitIntoShots' settings (shot_params; they key the shot lists)
    truncation_tolerance: float      # decode.truncation_tolerance
    distance_threshold: float        # mining.distance_threshold (§3.1 fn. 4)
    set_size: int                    # mining.set_size (§3.1: 10); also the shortest shot embedded
    max_side: Optional[int]          # decode.max_side; None: native size
    jpeg_quality: int                # release.jpeg_quality: the published frames (and their cache key)
    score_all_frames: bool           # quality.score_all_frames
    sampling: SamplingParams

    def plan_settings(self, encoder: EncoderSpec, spill_dir: str) -> Dict[str, Any]:
        """The arguments of the video plans (video/plans.py PlanVideos, plans_in_process)
        but the cache: shots, embeddings, the tolerance of a truncated video."""
        return dict(shot_params=dict(self.shots), min_frames=self.set_size, encoder_spec=encoder,
                    spill_dir=spill_dir, truncation_tolerance=self.truncation_tolerance)

    def mine_settings(self, gate_factory, staging_dir: str) -> Dict[str, Any]:
        """The miner's arguments (video/scoring.py MineFrameSets, mine_in_process)."""
        return dict(threshold=self.distance_threshold, set_size=self.set_size,
                    gate_factory=gate_factory, staging_dir=staging_dir,
                    jpeg_quality=self.jpeg_quality, max_side=self.max_side,
                    score_all_frames=self.score_all_frames)


def video_params(cfg: ImageCodeConfig) -> VideoParams:
    return VideoParams(
        videos=cfg.inputs.videos, shots=shot_params(cfg),
        truncation_tolerance=cfg.decode.truncation_tolerance,
        distance_threshold=cfg.mining.distance_threshold, set_size=cfg.mining.set_size,
        max_side=cfg.decode.max_side or None, jpeg_quality=cfg.release.jpeg_quality,
        score_all_frames=cfg.quality.score_all_frames,
        sampling=SamplingParams(seed=cfg.seed, quotas=dict(cfg.sampling.sets_per_source),
                                default=cfg.sampling.default))


@dataclass(frozen=True)
class StaticParams:
    """§3.1 Static Pictures: the static stages' settings (static/)."""
    images: Optional[str]            # static.images: the collection (an input); None: no static sets
    source: str                      # static.source: the first part of the set names
    seed: int                        # seed: the sampled queries and the splits
    n_sets: Optional[int]            # static.sets (§3.1: 4,845); None: one per image
    neighbours: int                  # static.neighbours (§3.1: 9)
    shards: int                      # static.shards: the kNN's database shards
    split_ratios: Mapping[str, float]   # static.split_ratios
    max_pixels: int                  # static.max_pixels
    knn: Any                         # static.knn: transforms/vectors/knn.py KnnSpec
    jpeg_quality: int                # release.jpeg_quality: images re-encoded for compat/

    def sets_settings(self, scratch_dir: Optional[str]) -> Dict[str, Any]:
        """The arguments of the kNN sets (static/sets.py BuildStaticSets)."""
        return dict(seed=self.seed, n_sets=self.n_sets, k=self.neighbours, num_shards=self.shards,
                    split_ratios=dict(self.split_ratios), source=self.source,
                    scratch_dir=scratch_dir, knn=self.knn)


def static_params(cfg: ImageCodeConfig) -> StaticParams:
    s = cfg.static
    return StaticParams(images=s.images, source=s.source, seed=cfg.seed, n_sets=s.sets,
                        neighbours=s.neighbours, shards=s.shards,
                        split_ratios=dict(s.split_ratios), max_pixels=s.max_pixels,
                        knn=s.knn.spec(), jpeg_quality=cfg.release.jpeg_quality)


@dataclass(frozen=True)
class CrowdParams:
    """§3.2-§3.3: the rounds' settings (crowd/)."""
    seed: int                        # seed: targets and the order images are shown in
    targets_per_set: int             # crowd.targets_per_set (§3.2: 3)
    image_base_url: Optional[str]    # crowd.image_base_url: where the worker pages load images
    descriptions: Union[None, str, Sequence[str]] = None   # crowd.descriptions (an input)
    retrievals: Union[None, str, Sequence[str]] = None     # crowd.retrievals (an input)
    descriptions_tasks_release: Optional[str] = None       # crowd.tasks_release.descriptions
    retrievals_tasks_release: Optional[str] = None         # crowd.tasks_release.retrievals


def crowd_params(cfg: ImageCodeConfig) -> CrowdParams:
    c = cfg.crowd
    return CrowdParams(seed=cfg.seed, targets_per_set=c.targets_per_set,
                       image_base_url=c.image_base_url, descriptions=c.descriptions,
                       retrievals=c.retrievals,
                       descriptions_tasks_release=c.tasks_release.descriptions,
                       retrievals_tasks_release=c.tasks_release.retrievals)


@dataclass(frozen=True)
class StatsParams:
    """§4: the statistics' settings (set_stats.py, transforms/text/stats.py)."""
    parser: Optional[str]            # stats.parser: spaCy pipeline for tree depth; None: no depth
    static_sources: Tuple[str, ...]  # (static.source,): the sources of static sets (§4.3's ratio)


def stats_params(cfg: ImageCodeConfig) -> StatsParams:
    return StatsParams(parser=cfg.stats.parser, static_sources=(cfg.static.source,))


@dataclass(frozen=True)
class LeakageParams:
    """The leakage check's settings (leakage.py, pipeline.check_split_conflicts)."""
    on_conflict: str                 # leakage.on_conflict: "reject" or "fail"
    videos: Optional[str]            # inputs.videos: the manifest a conflict is in


def leakage_params(cfg: ImageCodeConfig) -> LeakageParams:
    return LeakageParams(on_conflict=cfg.leakage.on_conflict, videos=cfg.inputs.videos)
