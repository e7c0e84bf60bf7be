"""Content hashes: what cache keys, model fingerprints and manifests identify files by,
and what duplicates are judged on.

Every sha256 of file bytes in the project is taken here, streamed in 1 MiB blocks
(weights and videos can be GBs); so is every digest of decoded pixels (PixelDigest),
the one definition of "the same content" for videos and still images alike."""
from __future__ import annotations

import functools
import hashlib
import os
from typing import BinaryIO, Tuple

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

_BLOCK = 1 << 20


def _update(digest, f: BinaryIO) -> int:
    """Feed a file's remaining bytes into `digest`; returns how many there were."""
    size = 0
    for block in iter(lambda: f.read(_BLOCK), b""):
        digest.update(block)
        size += len(block)
    return size


def content_sha256_and_size(path: str) -> Tuple[str, int]:
    """(sha256 hex, byte count) of a file's bytes as stored, on any Beam filesystem (no
    decompression by file extension)."""
    digest = hashlib.sha256()
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        size = _update(digest, f)
    return digest.hexdigest(), size


def content_sha256(path: str) -> str:
    """sha256 of a file's bytes as stored, on any Beam filesystem."""
    return content_sha256_and_size(path)[0]


@functools.lru_cache(maxsize=16)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        _update(digest, f)
    return digest.hexdigest()


def file_sha256(path: str) -> str:
    """sha256 of a local file, computed once per (path, size, mtime) in this process."""
    st = os.stat(path)
    return _sha256_cached(os.path.realpath(path), st.st_size, st.st_mtime_ns)


def folder_sha256(folder: str) -> str:
    """One sha256 over every file below a local folder (a model's weights): each file's
    path relative to the folder, then its bytes, in sorted order."""
    digest = hashlib.sha256()
    for root, _, files in sorted(os.walk(folder)):  # the whole walk, sorted by folder
        for name in sorted(files):
            path = os.path.join(root, name)
            digest.update(os.path.relpath(path, folder).encode())
            with open(path, "rb") as f:
                _update(digest, f)
    return digest.hexdigest()


class PixelDigest:
    """sha256 over decoded pixels, one frame or image after another: what two files hold
    when their bytes differ and their pixels do not (one video muxed two ways, a JPEG
    saved again as PNG, one file under two names). Exact: one pixel changed is another
    digest, so a re-encode (new pixels) is a different content.

    Each frame enters as its height, width and channel count, then its bytes in C
    order, so frames that only differ in shape never give the same stream. Frames are
    8-bit RGB (the project's decoders give nothing else)."""

    VERSION = b"pixels/v1 rgb8"  # part of every digest: another rule must give other digests

    def __init__(self):
        self._sha = hashlib.sha256(self.VERSION)
        self.frames = 0

    def add(self, pixels) -> None:
        """One (H, W, 3) uint8 frame or image (a numpy array)."""
        if pixels.dtype.itemsize != 1:
            raise ValueError(f"pixel digests take 8-bit frames, not {pixels.dtype}")
        shape = tuple(pixels.shape) + (1,) * (3 - pixels.ndim)
        self._sha.update(b"%d,%d,%d;" % shape[:3])
        self._sha.update(pixels.tobytes() if not pixels.flags.c_contiguous else pixels.data)
        self.frames += 1

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def pixels_sha256(pixels) -> str:
    """The PixelDigest of one decoded image."""
    digest = PixelDigest()
    digest.add(pixels)
    return digest.hexdigest()
