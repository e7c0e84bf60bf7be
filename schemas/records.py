"""Typed records of videos and still images that flow between library stages.

Plain dataclasses: they pickle on every Beam runner. Pixel data only ever lives inside a
fused chain of stages (one shot at a time); what crosses a shuffle (sets, rejects) is
small. ShotFrames alone has a coder of its own (ShotFramesCoder, below): the same pickle,
with its size known without encoding it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np
from apache_beam import coders

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class VideoRef:
    """One line of the video manifest, validated.

    `content_sha256` (the file's bytes) is set once the manifest stage hashed the file:
    caches are keyed by it, and byte copies are caught by it before anything is decoded.
    `frames_sha256` (transforms.core.hashing.PixelDigest of every decoded frame) is set
    once the video was decoded whole: duplicates and split leakage are judged on it, so
    one video muxed two ways is one video. `file` and `line` name the manifest line
    (empty for a ref made elsewhere): of two lines with one content, the first is kept."""
    path: str
    source: str
    video_id: str
    split: str
    content_sha256: Optional[str] = None
    frames_sha256: Optional[str] = None
    file: str = ""
    line: int = 0

    @property
    def key(self) -> str:
        return f"{self.source}/{self.video_id}"

    @property
    def where(self) -> str:
        """The manifest line as file:line (the video's key for a ref made elsewhere)."""
        return f"{self.file}:{self.line}" if self.file else self.key

    @property
    def listed_order(self):
        """Which of two clashing lines is kept: the first in the manifest (by file, then
        line number: a stable key, never the order in which workers see them)."""
        return self.file, self.line, self.key


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


class ShotFramesCoder(coders.Coder):
    """Pickle, as for any record, but the size is estimated from the pixel bytes.

    Beam estimates the size of every element passed between two steps, even within a
    fused stage where nothing is encoded, and by default it does so by encoding the
    element: for a shot of 150 320x240 frames that is 35 MB copied into a pickle per
    step, twice (decoder -> batcher -> encoder), measured at a fifth of a filters-off
    build's time (bench/imagecode_video.py). Used where a PCollection is typed
    ShotFrames (transforms/video/shots.py SplitIntoShots)."""

    _PICKLE = coders.PickleCoder()
    _OVERHEAD = 512  # bytes besides the arrays: the ref, the indices, the pickle framing

    def encode(self, value: ShotFrames) -> bytes:
        return self._PICKLE.encode(value)

    def decode(self, encoded: bytes) -> ShotFrames:
        return self._PICKLE.decode(encoded)

    def estimate_size(self, value: ShotFrames) -> int:
        arrays = sum(frame.nbytes for frame in value.frames)
        if value.embeddings is not None:
            arrays += value.embeddings.nbytes
        return arrays + 8 * len(value.frame_indices) + self._OVERHEAD

    def is_deterministic(self) -> bool:
        return False  # never a key

    def to_type_hint(self):
        return ShotFrames


coders.registry.register_coder(ShotFrames, ShotFramesCoder)


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
    """An image and its encoding: (d,) float32, L2-normalised (see transforms/image/embed.py).

    `pixels_sha256` is the PixelDigest (transforms.core.hashing) of the pixels the encoder
    saw, set wherever the image was decoded (or its embedding came from a cache entry that
    kept it): duplicates are judged on it, so a JPEG saved again as PNG, or one file
    under two ids, is one image. None for a vector that is no decoded image (a text)."""
    image_id: str
    path: str
    content_sha256: str
    embedding: np.ndarray
    pixels_sha256: Optional[str] = None


