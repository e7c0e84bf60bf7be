"""The `crowd:` section of VSR's and NLVR2's configs, apart from the aggregation itself
(transforms/crowd/aggregation.py imports Beam and numpy): config modules are read
before any of those is imported, so that `--help` and a config mistake answer at once
(tests/test_cli_imports.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MAJORITY, DAWID_SKENE = "majority", "dawid_skene"
METHODS = (MAJORITY, DAWID_SKENE)
Aggregation = Literal["majority", "dawid_skene"]


@dataclass
class CrowdConfig:
    """A benchmark config's `crowd:` section."""
    aggregation: Aggregation = MAJORITY   # majority: the papers' own count
