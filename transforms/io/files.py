"""Small helpers over Beam's FileSystems (local paths and gs:// alike)."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.io.paths import special_file_kind


def make_dirs(path: str) -> None:
    """mkdir -p through FileSystems (no error if it exists)."""
    try:
        FileSystems.mkdirs(path)
    except IOError:
        if not FileSystems.exists(path):  # local mkdirs also fails when it already exists
            raise


class NotARegularFile(OSError):
    """A local path that exists but is no regular file: reading a FIFO waits forever,
    /dev/zero never ends, a folder is no content."""


def open_regular_file(path: str):
    """A path's bytes as stored (never decompressed), opened only when it is a regular
    file or a URL; raises NotARegularFile (an OSError) before opening anything else."""
    kind = special_file_kind(path)
    if kind:
        raise NotARegularFile(f"{path} is {kind}, not a regular file")
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def open_parquet(path: str) -> pq.ParquetFile:
    """A Parquet file opened so that Arrow owns every buffer it reads.

    Arrow reads a Python file object (and Python bytes) on its own I/O threads and frees
    what it read there; a buffer freed after the interpreter began to exit cannot take
    the GIL, and the process aborts ("terminate called without an active exception",
    exit 134: the diff command did so about one run in two). So a local path is opened
    by Arrow itself, and a URL (gs://...) is read through Beam's FileSystems and copied
    into Arrow's memory, one file at a time."""
    if not FileSystems.get_scheme(path):
        return pq.ParquetFile(path)
    copy = pa.BufferOutputStream()
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            copy.write(chunk)
    return pq.ParquetFile(pa.BufferReader(copy.getvalue()))
