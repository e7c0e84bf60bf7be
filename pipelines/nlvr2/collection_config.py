"""Config of the collection stages S1-S9 (synsets to extra validation): the `collection:`
section of configs/paper.yaml and configs/sample.yaml. Filled in by the collection work."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CollectionConfig:
    """Placeholder until the collection stages land: an empty section."""
