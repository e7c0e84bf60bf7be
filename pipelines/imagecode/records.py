"""ImageCoDe's records between stages: what the miner needs of a video, a mined set of
video frames, a static set (§3.1). Plain dataclasses: they pickle on every runner."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np
from apache_beam.io.filesystems import FileSystems

from schemas.records import ShotFrames, VideoRef
from transforms.cache.store import EntryRef, decode_array, read_entry


@dataclass(frozen=True)
class EmbeddingsAt:
    """Where a video's frame embeddings wait for the miner: one (n, d) float32 array, its
    shots' frames in shot order ((0, 0) when it has no shot). Either a cache entry
    (`entry`, found by the lookup) or a file this build wrote in its work folder (`spill`,
    the video embedded now). Only this reference crosses the steps between the encoder
    and the miner, so no step holds the embeddings of every video at once."""
    spill: str = ""
    entry: Optional[EntryRef] = None

    def load(self) -> np.ndarray:
        if self.entry is not None:
            return decode_array(read_entry(self.entry))
        with FileSystems.open(self.spill) as f:
            return decode_array(f.read())


@dataclass
class VideoPlan:
    """What the miner needs of one video: its shots (frame numbers, no pixels), where
    their embeddings are, and the quality scores already known."""
    video: VideoRef
    shots: List[ShotFrames]
    # {"brisque": {frame number: BRISQUE/100}, "ocr": {frame number: text chars}}
    known_scores: Dict[str, Dict[int, float]] = field(default_factory=dict)
    # where new scores are stored: {"brisque": cache key, "ocr": cache key}; empty: nowhere
    score_keys: Dict[str, str] = field(default_factory=dict)
    embeddings: Optional[EmbeddingsAt] = None  # None: the shots carry their own
    # the cached bundles of its frames' JPEGs (transforms/video/frame_images.py), by
    # reference, and the key new ones are stored under ("": nowhere)
    frame_images: Tuple[EntryRef, ...] = ()
    frame_key: str = ""

    def embedded_shots(self) -> List[ShotFrames]:
        """The shots with their embeddings, read from where they wait (a matrix whose
        rows are not the shots' frames fails loudly: a key collision would be a bug)."""
        if self.embeddings is None or not self.shots:
            return self.shots
        matrix = self.embeddings.load()
        sizes = [len(shot.frame_indices) for shot in self.shots]
        if sum(sizes) != len(matrix):
            raise ValueError(f"{self.video.key}: its embeddings hold {len(matrix)} rows but "
                             f"its shot list keeps {sum(sizes)} frames")
        parts = np.split(matrix, np.cumsum(sizes)[:-1])
        return [dataclasses.replace(shot, embeddings=part) for shot, part in zip(self.shots, parts)]


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
