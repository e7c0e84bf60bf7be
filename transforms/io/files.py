"""Small helpers over Beam's FileSystems (local paths and gs:// alike)."""
from __future__ import annotations

import os
import stat
from typing import Optional

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems


def absolute_path(path: str) -> str:
    """A local path made absolute against the working directory the command ran in; a
    URL (gs://...) and "" (unset) as given. Beam hands paths to workers as written, and
    a worker of a distributed run (another process, another working directory) must
    find the same file; every path derived from it (staging, cache) is then absolute too."""
    if not path or FileSystems.get_scheme(path):
        return path
    return os.path.abspath(os.path.expanduser(path))


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


def special_file_kind(path: str) -> Optional[str]:
    """What a local path is when it exists but is not a regular file ("a folder",
    "a FIFO (named pipe)", "a character device", ...), found with stat (a FIFO is never
    opened); None for a regular file, a missing path and a URL (gs://...)."""
    if not path or FileSystems.get_scheme(path):
        return None
    try:
        mode = os.stat(path).st_mode
    except OSError:   # missing, or a symlink loop: the reader's own error says so
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


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
