"""The VSR pipeline's config schema (values live in configs/paper.yaml and configs/sample.yaml)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Literal

from pipelines.config import InputFile, InputPath, inside, listed, sample_dir
from pipelines.vsr.relations import RELATIONS
from schemas.coco import ID_BY_NAME
from transforms.core.errors import ConfigError
from transforms.crowd.aggregation_config import CrowdConfig

SAMPLE_DIR = sample_dir("vsr")   # where the sample configs read, generated on first use

VoteRule = Literal["count", "drop"]


@dataclass
class InputsConfig:
    coco: List[InputFile] = field(default_factory=list)          # COCO instances_*.json (§3.1)
    annotations: List[InputFile] = field(default_factory=list)   # public raw layout (JSON Lines)
    captions: List[InputFile] = field(default_factory=list)      # writer output for this build's pairs
    votes: List[InputFile] = field(default_factory=list)         # validator votes
    extra_labels: List[InputFile] = field(default_factory=list)  # §3.5 extra labels (Fleiss' kappa)
    # ours: a folder of COCO's images (train2017/, val2017/ in it), read by nothing but the
    # worker pages' previews, which then show the pictures from disk ("": COCO's links)
    coco_images: InputPath = ""


@dataclass
class SamplingConfig:
    pairs: int = 6405                 # image pairs to sample
    min_area: float = 30000.0         # pixels; smaller instances are dropped (§3.1)
    max_instances: int = 1            # instances of a concept an image may hold (§3.1)
    max_draws: int = 1000000          # stop drawing concept pairs after this many tries


@dataclass
class CaptionsConfig:
    extra_relations: Dict[str, str] = field(default_factory=dict)   # relation -> category
    aliases: Dict[str, str] = field(default_factory=dict)           # spelling -> COCO name


@dataclass
class ValidationConfig:
    min_agreeing: int = 2             # §3.2
    min_agreement: str = "2/3"        # §4.1, an exact fraction
    writer_votes: VoteRule = "count"
    duplicate_votes: VoteRule = "count"
    conflicting_votes: VoteRule = "count"

    def share(self) -> Fraction:
        """min_agreement as an exact fraction in (0, 1] (the threshold stays exact: 0.6667
        would drop 2 of 3); a ConfigError naming validation.min_agreement otherwise."""
        try:
            share = Fraction(self.min_agreement)
        except (TypeError, ValueError, ZeroDivisionError):
            raise ConfigError(f"validation.min_agreement: not a fraction: {self.min_agreement!r}") from None
        if not 0 < share <= 1:
            raise ConfigError(f"validation.min_agreement: must be in (0, 1], got {self.min_agreement!r}")
        return share


@dataclass
class SplitsConfig:
    random: Dict[str, float] = field(default_factory=lambda: {"train": 0.7, "dev": 0.1, "test": 0.2})
    zeroshot: Dict[str, float] = field(default_factory=lambda: {"train": 0.5, "dev": 0.2, "test": 0.3})


@dataclass
class ReleaseConfig:
    stringify_votes: bool = False     # write vote lists as the public v2 strings


@dataclass
class VsrConfig:
    benchmark: str = "vsr"
    seed: int = 0
    inputs: InputsConfig = field(default_factory=InputsConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    captions: CaptionsConfig = field(default_factory=CaptionsConfig)
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    crowd: CrowdConfig = field(default_factory=CrowdConfig)
    splits: SplitsConfig = field(default_factory=SplitsConfig)
    release: ReleaseConfig = field(default_factory=ReleaseConfig)

    def relations(self) -> frozenset:
        return frozenset(RELATIONS) | frozenset(self.captions.extra_relations)

    def reads_sample(self) -> bool:
        """Whether this config reads the embedded sample (SAMPLE_DIR, generated on first use):
        its data, not the previews' pictures alone (inputs.coco_images)."""
        return any(inside(path, SAMPLE_DIR) for f in dataclasses.fields(self.inputs) if f.name != "coco_images"
                   for path in listed(getattr(self.inputs, f.name)))

    def validate(self) -> None:
        if self.benchmark != "vsr":
            raise ConfigError(f"benchmark: this config is for {self.benchmark!r}, not vsr")
        if not (self.inputs.coco or self.inputs.annotations):
            raise ConfigError("give inputs.coco (COCO=) and/or inputs.annotations (ANNOTATIONS=)")
        if self.inputs.captions and not self.inputs.coco:
            raise ConfigError("inputs.captions answers this build's pairs: it needs inputs.coco")
        for name, value in (("sampling.pairs", self.sampling.pairs),
                            ("sampling.max_instances", self.sampling.max_instances),
                            ("sampling.max_draws", self.sampling.max_draws),
                            ("validation.min_agreeing", self.validation.min_agreeing)):
            if value < 1:
                raise ConfigError(f"{name}: must be at least 1, got {value}")
        if self.sampling.min_area < 0:
            raise ConfigError("sampling.min_area: must not be negative")
        self.validation.share()   # a ConfigError naming a bad share
        for scheme in ("random", "zeroshot"):
            ratios = getattr(self.splits, scheme)
            if not ratios or any(v <= 0 for v in ratios.values()) or abs(sum(ratios.values()) - 1) > 1e-9:
                raise ConfigError(f"splits.{scheme}: positive shares summing to 1, got {ratios}")
        for relation in self.captions.extra_relations:
            if relation in RELATIONS:
                raise ConfigError(f"captions.extra_relations: {relation!r} is already in Table 1")
        for variant, name in self.captions.aliases.items():
            if name not in ID_BY_NAME:
                raise ConfigError(f"captions.aliases.{variant}: {name!r} is not a COCO category")
