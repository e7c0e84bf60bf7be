"""Typed records of videos and still images that flow between library stages.

Plain dataclasses: they pickle on every Beam runner and need no coder registration.
Pixel data only ever lives inside a fused chain of stages (one shot at a time); what
crosses a shuffle (sets, rejects) is small.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class VideoRef:
    """One line of the video manifest, validated. `content_sha256` is set once the
    manifest stage hashed the file: leakage is judged on it and caches are keyed by it."""
    path: str
    source: str
    video_id: str
    split: str
    content_sha256: Optional[str] = None

    @property
    def key(self) -> str:
        return f"{self.source}/{self.video_id}"


@dataclass
class ShotFrames:
    """The decoded frames of one shot, in temporal order.

    `frame_indices[i]` is the video frame number of `frames[i]` (RGB, uint8, HxWx3).
    With a frame stride above 1 the indices step by the stride.
    """
    video: VideoRef
    shot_index: int
    start_frame: int
    end_frame: int  # exclusive
    fps: float
    frame_indices: List[int]
    frames: List[np.ndarray]
    embeddings: Optional[np.ndarray] = None  # (n, d) float32, L2-normalised, set by the embed stage

    @property
    def key(self) -> str:
        return f"{self.video.key}/shot{self.shot_index}"


# ---------------------------------------------------------------- static pictures (§3.1)

@dataclass(frozen=True)
class ImageRef:
    """One still image of a collection (a found file or a manifest line), validated.

    `image_id` is a safe path component (schemas.names.safe_name); `content_sha256` is
    set once the bytes were hashed (HashAndDedupe) and keys caches of per-image results.
    """
    path: str
    image_id: str
    content_sha256: Optional[str] = None


@dataclass
class ImageEmbedding:
    """An image and its encoding: (d,) float32, L2-normalised (see transforms/image/embed.py)."""
    image_id: str
    path: str
    content_sha256: str
    embedding: np.ndarray


