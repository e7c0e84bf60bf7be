"""Small helpers over Beam's FileSystems (local paths and gs:// alike)."""
from __future__ import annotations

import os

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
