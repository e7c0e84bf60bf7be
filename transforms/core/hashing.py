"""Content hashes: what cache keys and manifests identify files by."""
from __future__ import annotations

import functools
import hashlib
import os

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

_BLOCK = 1 << 20  # streamed: weights and videos can be GBs


def content_sha256(path: str) -> str:
    """sha256 of a file's bytes as stored, on any Beam filesystem (no decompression by
    file extension)."""
    digest = hashlib.sha256()
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=16)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str) -> str:
    """sha256 of a local file, computed once per (path, size, mtime) in this process."""
    st = os.stat(path)
    return _sha256_cached(os.path.realpath(path), st.st_size, st.st_mtime_ns)
