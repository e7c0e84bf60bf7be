"""Small helpers over Beam's FileSystems (local paths and gs:// alike)."""
from __future__ import annotations

from apache_beam.io.filesystems import FileSystems


def make_dirs(path: str) -> None:
    """mkdir -p through FileSystems (no error if it exists)."""
    try:
        FileSystems.mkdirs(path)
    except IOError:
        if not FileSystems.exists(path):  # local mkdirs also fails when it already exists
            raise
