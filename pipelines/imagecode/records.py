"""ImageCoDe's records between stages: what the miner needs of a video, a mined set of
video frames, a static set (§3.1). Plain dataclasses: they pickle on every runner."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

from schemas.records import ShotFrames, VideoRef


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
    video_sha256: str = ""   # the video file's content: a frame's identity in crowd tasks (not a column)


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
