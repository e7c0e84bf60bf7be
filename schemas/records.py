"""Typed records that flow between the stages of a pipeline.

Plain dataclasses: they pickle on every Beam runner and need no coder registration.
Pixel data only ever lives inside a fused chain of stages (one shot at a time); what
crosses a shuffle (sets, rejects) is small.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

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


@dataclass
class VideoPlan:
    """What the miner needs of one video: its shots with embeddings (pixels optional:
    the miner decodes the frames it needs) and the quality scores already known."""
    video: VideoRef
    shots: List[ShotFrames]
    # {"brisque": {frame number: BRISQUE/100}, "ocr": {frame number: text chars}}
    known_scores: Dict[str, Dict[int, float]] = field(default_factory=dict)
    # where new scores are stored: {"brisque": cache key, "ocr": cache key}; empty: nowhere
    score_keys: Dict[str, str] = field(default_factory=dict)


@dataclass
class FrameSet:
    """A mined set of `set_size` frames from one shot (one release row)."""
    set_name: str            # public grammar: <source>-video<video_id>-shot<k>_<j>
    source: str
    video_id: str
    split: str
    shot_index: int
    set_index: int
    frame_indices: List[int]
    image_paths: List[str]   # relative to the release root: compat/image-sets/<set>/img<n>.jpg
    brisque_scores: List[float]
    text_chars: List[int]
    distance_min: float
    distance_mean: float
    distance_max: float
    staged_images: List[str] = field(default_factory=list)  # where the JPEGs wait before release


@dataclass(frozen=True)
class Reject:
    """Something that did not make it into the release, and why."""
    stage: str        # "manifest", "decode", "shots", "mining", "sampling"
    level: str        # "video", "shot", "frame", "set", "line"
    reason: str       # one of schemas.reasons
    item_id: str      # e.g. "msr-vtt/video12/shot3/frame120"
    source: str = ""
    video_id: str = ""
    split: str = ""
    detail: str = ""
    file: str = ""    # the input file, for problems found in one line of it
    line: int = 0     # 1-based line number in `file`; 0: not a line-level reject


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


@dataclass
class StaticSet:
    """A query image and its nearest neighbours (one release row of a static set).

    Lists run query first, then neighbours nearest first; `distances` are Euclidean to
    the query (the query's own is 0.0) and `image_paths` are the source paths.
    """
    set_name: str            # public grammar: open-images-<n>_<query image id>
    query_id: str
    image_ids: List[str]
    image_paths: List[str]
    distances: List[float]
    split: str
