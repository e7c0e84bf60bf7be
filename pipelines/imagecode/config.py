"""The ImageCoDe video-frame pipeline's config schema (values live in configs/*.yaml)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Literal, Optional

from pipelines.config import (AnswerFiles, Device, ImageSource, InputFile, InputPath, KnnConfig, Precision,
                              inside, sample_dir)
from transforms.core.errors import ConfigError
from transforms.image.formats import DEFAULT_MAX_PIXELS, pillow_pixel_ceiling

SAMPLE_DIR = sample_dir("imagecode")   # where the sample configs read, generated on first use


@dataclass
class InputsConfig:
    videos: Optional[InputFile] = None          # JSON Lines video manifest


@dataclass
class DecodeConfig:
    stride: int = 1                       # keep every n-th frame; 1 = every frame
    max_side: int = 0                     # downscale so the longer side is at most this; 0 = native
    truncation_tolerance: float = 0.02    # share of the container's frames that may fail to decode


@dataclass
class ShotsConfig:
    backend: Literal["pyscenedetect", "ffmpeg", "transnetv2"] = "pyscenedetect"
    pyscenedetect_threshold: float = 27.0
    ffmpeg_threshold: float = 0.3
    transnetv2_threshold: float = 0.5     # transition probability; its authors' 0.5
    transnetv2_device: Device = "auto"    # resolved off the CPU: part of the shot lists' cache key
    min_scene_len: int = 15


@dataclass
class EmbedConfig:
    kind: Literal["open_clip", "thumbnail"] = "open_clip"
    model_name: str = "ViT-B-16"
    pretrained: str = "openai"
    checkpoint: Optional[InputPath] = None      # local weights file; nothing is downloaded
    batch_size: int = 64
    device: Device = "auto"
    precision: Precision = "auto"   # fp16 on a GPU, fp32 on a CPU; int8 (CPU): transforms/image/encoders.py
    thumbnail_size: int = 16


@dataclass
class BrisqueConfig:
    enabled: bool = True
    max_score: float = 0.65               # on the BRISQUE/100 scale
    model_dir: Optional[InputPath] = None       # folder with svm.txt + normalize.pickle
    features: Literal["package", "piq"] = "package"   # who computes the 36 features
    device: Device = "auto"               # float64 on either: scores agree to ~1e-12 (docs/benchmarks.md)
    frames_per_call: int = 0              # 0: 256 on a GPU, 1 on the CPU (the miner scores ahead in one call)


@dataclass
class OcrConfig:
    enabled: bool = True
    max_text_chars: int = 10
    min_confidence: int = 60
    lang: str = "eng"
    # who runs Tesseract: the library in process (tesserocr) or the program per frame
    backend: Literal["tesserocr", "pytesseract"] = "tesserocr"
    tessdata: Optional[str] = None        # tesserocr's language data; null = $TESSDATA_PREFIX or Debian's
    tesseract_cmd: Optional[str] = None   # pytesseract's program; null = `tesseract` on PATH


@dataclass
class QualityConfig:
    brisque: BrisqueConfig = field(default_factory=BrisqueConfig)
    ocr: OcrConfig = field(default_factory=OcrConfig)
    score_all_frames: bool = False        # score every frame, not only those the miner asks about


@dataclass
class MiningConfig:
    distance_threshold: float = 0.35
    set_size: int = 10


@dataclass
class SamplingConfig:
    # Sets to keep per source; a source not listed keeps `default` (null = all).
    sets_per_source: Dict[str, int] = field(default_factory=dict)
    default: Optional[int] = None


@dataclass
class StaticConfig:
    images: Optional[ImageSource] = None          # folder or JSON Lines {"path", "image_id"}; null = none
    source: str = "open-images"
    sets: Optional[int] = None            # sets to sample; null = one per image
    neighbours: int = 9
    shards: int = 8
    knn: KnnConfig = field(default_factory=KnnConfig)
    max_pixels: int = DEFAULT_MAX_PIXELS  # width x height above which an image is too_many_pixels
    split_ratios: Dict[str, float] = field(
        default_factory=lambda: {"train": 0.78, "valid": 0.11, "test": 0.11})


@dataclass
class TasksReleaseConfig:
    """Per round, the release folder whose crowd/ task files the answers were collected
    against: what shows what a worker saw when an answer row carries no task_fingerprint."""
    descriptions: Optional[InputPath] = None    # its crowd/describe_tasks.jsonl
    retrievals: Optional[InputPath] = None      # its crowd/retrieve_tasks.jsonl


@dataclass
class CrowdConfig:
    targets_per_set: int = 3
    # describer and retriever output (CSV, JSON Lines, MTurk's results, Label Studio's
    # export): a file or glob, or a list of them (several batches or exports)
    descriptions: Optional[AnswerFiles] = None
    retrievals: Optional[AnswerFiles] = None
    tasks_release: TasksReleaseConfig = field(default_factory=TasksReleaseConfig)
    # where the worker pages (crowd/pages/) load the images from: this URL + the image's
    # path in the release (e.g. https://cdn.example.org/imagecode/1.0.0/); null = the path
    # as it is, relative to the release (a local preview)
    image_base_url: Optional[str] = None


@dataclass
class StatsConfig:
    parser: Optional[str] = None          # spaCy pipeline (name or path) for tree depth


@dataclass
class CacheConfig:
    dir: Optional[InputPath] = None             # null = <output>/.cache; any Beam filesystem
    enabled: bool = True


@dataclass
class LeakageConfig:
    # a manifest line whose video content (bytes, or decoded frames) an earlier line listed in another split:
    # "reject" it (same_content_other_split) or "fail" the build, publishing nothing
    on_conflict: Literal["reject", "fail"] = "reject"


@dataclass
class ReleaseConfig:
    jpeg_quality: int = 95


@dataclass
class ImageCodeConfig:
    benchmark: Literal["imagecode"] = "imagecode"
    seed: int = 0
    inputs: InputsConfig = field(default_factory=InputsConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    shots: ShotsConfig = field(default_factory=ShotsConfig)
    embed: EmbedConfig = field(default_factory=EmbedConfig)
    quality: QualityConfig = field(default_factory=QualityConfig)
    mining: MiningConfig = field(default_factory=MiningConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    static: StaticConfig = field(default_factory=StaticConfig)
    crowd: CrowdConfig = field(default_factory=CrowdConfig)
    stats: StatsConfig = field(default_factory=StatsConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    leakage: LeakageConfig = field(default_factory=LeakageConfig)
    release: ReleaseConfig = field(default_factory=ReleaseConfig)

    def reads_sample(self) -> bool:
        """Whether this config reads the embedded sample (SAMPLE_DIR, generated on first use)."""
        return inside(self.inputs.videos, SAMPLE_DIR)

    def unjudged_answers(self) -> Dict[str, str]:
        """{answer key: reason}: the rounds whose answers a build of this config has not
        judged yet (pipelines/crowd/approvals.py holds their approval back): a
        description is judged by its retrievers (§3.3), so without crowd.retrievals every
        description the build read awaits them (no_retrieval)."""
        return {"crowd.descriptions": "no_retrieval"} if self.crowd.descriptions and not self.crowd.retrievals else {}

    def validate(self) -> None:
        """Range checks that types alone cannot express."""
        checks = [
            (self.decode.stride >= 1, "decode.stride must be >= 1"),
            (self.decode.max_side >= 0, "decode.max_side must be >= 0 (0 = native)"),
            (0.0 <= self.decode.truncation_tolerance <= 1.0,
             "decode.truncation_tolerance must be in [0, 1] (a share of the expected frames)"),
            (self.shots.min_scene_len >= 1, "shots.min_scene_len must be >= 1"),
            (0.0 <= self.shots.transnetv2_threshold < 1.0, "shots.transnetv2_threshold must be in [0, 1)"),
            (self.embed.batch_size >= 1, "embed.batch_size must be >= 1"),
            (self.embed.thumbnail_size >= 2, "embed.thumbnail_size must be >= 2"),
            (0.0 <= self.quality.brisque.max_score, "quality.brisque.max_score must be >= 0"),
            (0 <= self.quality.brisque.frames_per_call, "quality.brisque.frames_per_call must be >= 0"),
            (self.quality.ocr.max_text_chars >= 0, "quality.ocr.max_text_chars must be >= 0"),
            (0.0 <= self.mining.distance_threshold <= 2.0,
             "mining.distance_threshold must be in [0, 2] (unit vectors)"),
            (self.mining.set_size >= 2, "mining.set_size must be >= 2"),
            (all(n >= 0 for n in self.sampling.sets_per_source.values()),
             "sampling.sets_per_source values must be >= 0"),
            (self.sampling.default is None or self.sampling.default >= 0,
             "sampling.default must be >= 0 or null"),
            (1 <= self.release.jpeg_quality <= 100, "release.jpeg_quality must be in 1..100"),
            (self.static.sets is None or self.static.sets >= 1, "static.sets must be >= 1 or null"),
            (self.static.images is None or self.static.neighbours + 1 == self.mining.set_size,
             "static.neighbours + 1 (the query) must equal mining.set_size"),
            (self.static.shards >= 1, "static.shards must be >= 1"),
            (1 <= self.static.max_pixels <= pillow_pixel_ceiling(),
             f"static.max_pixels must be in 1..{pillow_pixel_ceiling()} "
             "(Pillow refuses to open larger images at all)"),
            (set(self.static.split_ratios) <= {"train", "valid", "test"}
             and abs(sum(self.static.split_ratios.values()) - 1.0) < 1e-6,
             "static.split_ratios: train/valid/test shares summing to 1"),
            (1 <= self.crowd.targets_per_set <= self.mining.set_size,
             "crowd.targets_per_set must be in 1..mining.set_size"),
            (not self.crowd.retrievals or bool(self.crowd.descriptions),
             "crowd.retrievals needs crowd.descriptions (the round they validate)"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
