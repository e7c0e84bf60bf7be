"""Content hashes: what cache keys, model fingerprints and manifests identify files by.

Every sha256 of file bytes in the project is taken here, streamed in 1 MiB blocks
(weights and videos can be GBs)."""
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
