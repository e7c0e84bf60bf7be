"""Config of the collection stages S1-S9 (synsets to extra validation): the `collection:`
section of configs/paper.yaml and configs/sample.yaml. Every value there cites the paper
or says "ours"; an unknown key fails when the config is loaded (pipelines/config.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Literal, Optional

from pipelines.config import AnswerFiles, Device, ImageSource, InputFile, InputPath, KnnConfig, Precision
from transforms.core.errors import ConfigError


@dataclass
class CollectionInputs:
    """What people and the search engine return, one file (or glob) per round, or for a
    crowd round a list of them (its answers from several batches or exports). A round left
    "" ends the collection there: the build exports that round's tasks (tasks/) and hands
    on no examples yet."""
    search_results: InputFile = ""        # S2: {query, rank, seed, similar: [15]} JSON Lines
    pruning_answers: AnswerFiles = ""     # S4: crowd pruning round 1 (CSV, JSON Lines, an export)
    interest_answers: AnswerFiles = ""    # S5: crowd pruning round 2
    sentences: AnswerFiles = ""           # S7: writing round
    validations: AnswerFiles = ""         # S8: validation round
    extra_validations: AnswerFiles = ""   # S9: the 4 extra judgements of dev and test


@dataclass
class TasksRelease:
    """Per crowd round, the release folder whose tasks/ file the round's answers were
    collected against: what shows what a worker saw when an answer row carries no
    task_fingerprint (pipelines/imagecode/README.md, "Answers are bound to what the worker saw"). "" = none."""
    pruning_answers: InputPath = ""     # its tasks/pruning.jsonl
    interest_answers: InputPath = ""    # its tasks/interest.jsonl
    sentences: InputPath = ""           # its tasks/writing.jsonl
    validations: InputPath = ""         # its tasks/validation.jsonl
    extra_validations: InputPath = ""   # its tasks/extra_validation.jsonl


@dataclass
class SynsetsConfig:
    names: List[str] = field(default_factory=list)   # [] = the 124 of the release


@dataclass
class SimilarWordsConfig:
    """Table 1 "similar words", with a sentence-embedding stand-in for word2vec."""
    enabled: bool = True
    vocabulary: List[str] = field(default_factory=list)   # [] = the lemmas of ILSVRC-1k
    threshold: float = 0.31     # calibrated (scripts/nlvr2_calibrate_similar.py)
    max_words: int = 3          # per synonym
    model: InputPath = ""       # sentence-transformers folder; "" = the bundled MiniLM
    device: Device = "cpu"      # cpu keeps the calibrated cosines exactly as scripts/ computed them


@dataclass
class QueriesConfig:
    """Table 1's heuristics over every synonym of a synset."""
    quantity_words: List[str] = field(default_factory=list)            # "two <plural>"
    collective_nouns_animal: List[str] = field(default_factory=list)   # "herd of <plural>"
    collective_nouns_object: List[str] = field(default_factory=list)   # "stack of <plural>"
    activities: List[str] = field(default_factory=list)                # "<plural> eating" (animals)
    hypernyms: bool = True                                             # "<synonym> <hypernym>" (objects)
    similar_words: SimilarWordsConfig = field(default_factory=SimilarWordsConfig)


@dataclass
class LocalSimilarConfig:
    """A local stand-in for the similar-images tool (App. B): a search-result line without
    `similar` gets its seed's nearest images (exact kNN) in `collection`, embedded with
    the project's image encoder (transforms/image/encoders.py)."""
    collection: ImageSource = ""        # a folder of images or a manifest; "" = off
    kind: Literal["open_clip", "thumbnail"] = "open_clip"
    model_name: str = "ViT-B-16"
    pretrained: str = "openai"
    checkpoint: Optional[InputPath] = None
    batch_size: int = 64
    device: Device = "auto"
    precision: Precision = "auto"   # fp16 on a GPU, fp32 on a CPU; int8 (CPU): transforms/image/encoders.py
    thumbnail_size: int = 16
    shards: int = 1
    knn: KnnConfig = field(default_factory=KnnConfig)


@dataclass
class SearchConfig:
    """App. B: how far down one query's results go."""
    set_size: int = 16                 # a result and its 15 most similar images
    max_results: int = 60
    max_sets: int = 30
    max_misses_in_a_row: int = 5       # results in a row without similar images
    wide_max_results: int = 100        # collective nouns and "two <synset>" (fn 12)
    wide_max_sets: int = 60
    wide_quantity_words: List[str] = field(default_factory=lambda: ["two"])
    local_similar: LocalSimilarConfig = field(default_factory=LocalSimilarConfig)


@dataclass
class PruningConfig:
    min_width: int = 200
    min_height: int = 200
    min_set_images: int = 8            # S3 and S4: sets with fewer are discarded
    min_interesting: int = 3           # S5
    set_images: int = 8                # S5: the top 8 are kept


@dataclass
class SplitsConfig:
    held_out: float = 0.2              # dev + test, grouped by set (§3.4)
    extra_judgements: int = 4          # §3.4
    directories: int = 100             # train rows' `directory` buckets (ours; rule unpublished)


@dataclass
class CollectionConfig:
    inputs: CollectionInputs = field(default_factory=CollectionInputs)
    tasks_release: TasksRelease = field(default_factory=TasksRelease)
    synsets: SynsetsConfig = field(default_factory=SynsetsConfig)
    queries: QueriesConfig = field(default_factory=QueriesConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    pruning: PruningConfig = field(default_factory=PruningConfig)
    splits: SplitsConfig = field(default_factory=SplitsConfig)

    def validate(self) -> None:
        s, p = self.search, self.pruning
        if s.set_size < 1 or min(s.max_results, s.max_sets, s.max_misses_in_a_row,
                                 s.wide_max_results, s.wide_max_sets) < 1:
            raise ConfigError("collection.search: set_size and every cap must be at least 1")
        if p.set_images < 2 or p.set_images % 2:
            raise ConfigError("collection.pruning.set_images: an even number (pairs), at least 2")
        if p.min_set_images < p.set_images:
            raise ConfigError("collection.pruning.min_set_images must be >= set_images")
        if not 0.0 <= self.splits.held_out < 1.0:
            raise ConfigError("collection.splits.held_out: a fraction in [0, 1)")
        if self.splits.directories < 1 or self.splits.extra_judgements < 1:
            raise ConfigError("collection.splits.directories and extra_judgements: at least 1")

    def round_inputs(self) -> Dict[str, str]:
        return {k: getattr(self.inputs, k) for k in CollectionInputs.__dataclass_fields__}
