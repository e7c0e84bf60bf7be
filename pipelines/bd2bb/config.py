"""The BD2BB pipeline's config schema (values live in configs/paper.yaml and configs/sample.yaml)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Literal, Optional

from pipelines.config import InputFile, InputPath, inside, sample_dir
from transforms.core.errors import ConfigError

SAMPLE_DIR = sample_dir("bd2bb")   # where the sample configs read, generated on first use


@dataclass
class InputsConfig:
    tuples: Optional[InputFile] = None          # JSON Lines {"image", "intention", "action", "annotator"}
    captions: Optional[InputFile] = None        # COCO captions JSON (captions_train2014.json)
    parses: Optional[InputFile] = None          # CoNLL-U parses of the actions (parser.backend: conllu)


@dataclass
class FiltersConfig:
    max_intention_chars: int = 500        # longer intentions are too_long (the public maximum is 107)
    max_action_chars: int = 500           # longer actions are too_long (the public maximum is 105)
    min_english_share: float = 0.5        # share of English words in intention and in action
    wordlist: Optional[InputFile] = None        # extra English word list; null = bundled vocabulary
    # The language identifier (py3langid) chooses among these; "en" must be one of them.
    languages: List[str] = field(default_factory=lambda: ["en", "es", "de", "fr", "it", "pt", "nl", "la"])
    min_english_probability: float = 0.05  # below: not_english; 0 = identifier off
    intention_min_tokens: int = 5
    count_opener: bool = True             # count "If I" in the intention's tokens


@dataclass
class ParserConfig:
    backend: Literal["conllu", "spacy", "stanza"] = "conllu"
    model: Optional[str] = None           # spaCy name/folder or Stanza folder


@dataclass
class EmbedConfig:
    model: Optional[InputPath] = None           # sentence-transformers folder; null = bundled MiniLM
    batch_size: int = 64
    device: Literal["auto", "cpu", "cuda"] = "auto"


@dataclass
class ClustersConfig:
    k: Optional[int] = None               # force k; null = elbow over k_min..k_max
    k_min: int = 10
    k_max: int = 100
    k_step: int = 5
    n_init: int = 3
    silhouette_sample: int = 5000
    review: Optional[InputFile] = None          # decisions CSV (decision,cluster,action,to_cluster,label)
    review_per_cluster: int = 20


@dataclass
class DecoysConfig:
    pool_size: int = 100


@dataclass
class SplitsConfig:
    ratios: Dict[str, float] = field(default_factory=lambda: {"train": 0.2, "val": 0.4, "test": 0.4})


@dataclass
class CacheConfig:
    dir: Optional[InputPath] = None             # null = <output>/.cache
    enabled: bool = True


@dataclass
class BD2BBConfig:
    benchmark: Literal["bd2bb"] = "bd2bb"
    seed: int = 0
    inputs: InputsConfig = field(default_factory=InputsConfig)
    filters: FiltersConfig = field(default_factory=FiltersConfig)
    parser: ParserConfig = field(default_factory=ParserConfig)
    embed: EmbedConfig = field(default_factory=EmbedConfig)
    clusters: ClustersConfig = field(default_factory=ClustersConfig)
    decoys: DecoysConfig = field(default_factory=DecoysConfig)
    splits: SplitsConfig = field(default_factory=SplitsConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)

    def k_values(self):
        c = self.clusters
        return list(range(c.k_min, c.k_max + 1, c.k_step))

    def reads_sample(self) -> bool:
        """Whether this config reads the embedded sample (SAMPLE_DIR, generated on first use)."""
        return inside(self.inputs.tuples, SAMPLE_DIR)

    def validate(self) -> None:
        c = self.clusters
        checks = [
            (0.0 <= self.filters.min_english_share <= 1.0, "filters.min_english_share must be in [0, 1]"),
            (self.filters.max_intention_chars >= 1 and self.filters.max_action_chars >= 1,
             "filters.max_intention_chars and filters.max_action_chars must be >= 1"),
            ("en" in self.filters.languages and len(set(self.filters.languages)) >= 2,
             "filters.languages must hold \"en\" and at least one other language"),
            (0.0 <= self.filters.min_english_probability < 1.0,
             "filters.min_english_probability must be in [0, 1)"),
            (self.filters.intention_min_tokens >= 0, "filters.intention_min_tokens must be >= 0"),
            (self.parser.backend == "conllu" or self.parser.model,
             f"parser.model is required for parser.backend {self.parser.backend}"),
            (self.embed.batch_size >= 1, "embed.batch_size must be >= 1"),
            (2 <= c.k_min <= c.k_max and c.k_step >= 1, "clusters: need 2 <= k_min <= k_max, k_step >= 1"),
            (c.k is None or c.k >= 2, "clusters.k must be >= 2 or null (elbow)"),
            (c.n_init >= 1 and c.silhouette_sample >= 2 and c.review_per_cluster >= 1,
             "clusters.n_init, silhouette_sample and review_per_cluster must be positive"),
            (self.decoys.pool_size >= 2, "decoys.pool_size must be >= 2"),
            (set(self.splits.ratios) == {"train", "val", "test"}
             and all(v > 0 for v in self.splits.ratios.values())
             and abs(sum(self.splits.ratios.values()) - 1.0) < 1e-6,
             "splits.ratios: positive train/val/test shares summing to 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
