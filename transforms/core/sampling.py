"""Seeded choices that never depend on arrival order.

Every random choice of every benchmark is a hash of (seed, item key): the same config
gives the same choice on any runner and any number of workers.
"""
from __future__ import annotations

import hashlib


def priority(seed: int, key: str) -> int:
    """A uniform 64-bit priority for `key`, stable across processes and machines."""
    digest = hashlib.sha256(f"{seed}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


