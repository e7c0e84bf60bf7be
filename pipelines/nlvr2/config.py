"""The NLVR2 pipeline's config schema (values live in configs/*.yaml, each citing the paper).

Two ways to examples: `inputs.public` (released JSON Lines files, PUBLIC=) or, when it is
empty, the collection stages S1-S9 (`collection:`, pipelines/nlvr2/collection/config.py).
Everything after - the paper's rules, agreement, human performance, subsets, the release -
is configured by the sections here and is the same for both.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import List

from pipelines.config import InputFile, inside, sample_dir
from pipelines.nlvr2.collection.config import CollectionConfig
from transforms.core.errors import ConfigError
from transforms.crowd.aggregation_config import CrowdConfig

SAMPLE_DIR = sample_dir("nlvr2")   # where the sample configs read, generated on first use


@dataclass
class InputsConfig:
    public: List[InputFile] = field(default_factory=list)   # released files (dev.json, test1.json, ...)


@dataclass
class RulesConfig:
    """The paper's rules, checked on every example (stage paper_rules)."""
    enforce: bool = True              # true: a breach is a reject; false: reported only
    extra_judgements: int = 4         # §3.4: 4 extra judgements per dev/test example
    min_extra_judgements: int = 4     # fewer is a breach (the public files hold 3 on 237 examples)
    remove_disagreeing: int = 2       # §3.4: removed when >= 2 extra judgements disagree
    pairs_per_set: int = 4            # §3.2: 8 images in 4 pairs
    true_pairs: int = 2               # §3.2: the writer selects 2 of the 4 pairs


@dataclass
class LeakageConfig:
    forbid_shared_images: bool = False   # true: an image (URL or aHash) in two splits fails the build


@dataclass
class AnalysisConfig:
    min_worker_judgements: int = 100  # §5, Table 6: workers with >= 100 judgements


@dataclass
class CostsConfig:
    per_sentence: float = 0.65        # App. B, Table 9: per unique sentence (writing)
    per_example: float = 0.18         # App. B, Table 9: per example (validation)


@dataclass
class Nlvr2Config:
    benchmark: str = "nlvr2"
    seed: int = 0
    inputs: InputsConfig = field(default_factory=InputsConfig)
    collection: CollectionConfig = field(default_factory=CollectionConfig)
    rules: RulesConfig = field(default_factory=RulesConfig)
    crowd: CrowdConfig = field(default_factory=CrowdConfig)
    leakage: LeakageConfig = field(default_factory=LeakageConfig)
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    costs: CostsConfig = field(default_factory=CostsConfig)

    @property
    def mode(self) -> str:
        """"public" (examples read from released files) or "collection" (S1-S9)."""
        return "public" if self.inputs.public else "collection"

    def reads_sample(self) -> bool:
        """Whether this config reads the embedded sample (SAMPLE_DIR, generated on first use)."""
        # the collection section names its inputs; any of them inside samples/nlvr2
        # means the sample config
        values = _strings(dataclasses.asdict(self.collection))
        return not self.inputs.public and any(inside(v, SAMPLE_DIR) for v in values)

    def validate(self) -> None:
        if self.benchmark != "nlvr2":
            raise ConfigError(f"benchmark: this config is for {self.benchmark!r}, not nlvr2")
        r = self.rules
        for name, value in (("rules.extra_judgements", r.extra_judgements),
                            ("rules.remove_disagreeing", r.remove_disagreeing),
                            ("rules.pairs_per_set", r.pairs_per_set),
                            ("analysis.min_worker_judgements", self.analysis.min_worker_judgements)):
            if value < 1:
                raise ConfigError(f"{name}: must be at least 1, got {value}")
        if not 1 <= r.min_extra_judgements <= r.extra_judgements:
            raise ConfigError(f"rules.min_extra_judgements: between 1 and rules.extra_judgements "
                              f"({r.extra_judgements}), got {r.min_extra_judgements}")
        if not 0 < r.true_pairs < r.pairs_per_set:
            raise ConfigError(f"rules.true_pairs: between 1 and rules.pairs_per_set - 1 "
                              f"({r.pairs_per_set - 1}), got {r.true_pairs}")
        if r.pairs_per_set > 4:
            raise ConfigError("rules.pairs_per_set: the public identifier holds pairs 0-3, "
                              f"got {r.pairs_per_set}")
        for name in ("per_sentence", "per_example"):
            if getattr(self.costs, name) < 0:
                raise ConfigError(f"costs.{name}: must not be negative")
        if not self.inputs.public:
            self.collection.validate()
            if self.collection.splits.extra_judgements != r.extra_judgements:
                # one number: how many extra judgements S9 takes, and what the rules expect
                raise ConfigError(
                    f"collection.splits.extra_judgements ({self.collection.splits.extra_judgements}) "
                    f"must equal rules.extra_judgements ({r.extra_judgements})")


def _strings(value):
    """Every string inside a (nested) config dict: the paths it may name."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
