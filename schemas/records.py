"""Typed records that flow between the stages of a pipeline.

Plain dataclasses: they pickle on every Beam runner and need no coder registration.
Pixel data only ever lives inside a fused chain of stages (one shot at a time); what
crosses a shuffle (sets, rejects) is small.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class VideoRef:
    """One line of the video manifest, validated."""
    path: str
    source: str
    video_id: str
    split: str

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
