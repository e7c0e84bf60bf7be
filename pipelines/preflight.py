"""Checks that run before any work: inputs exist, tools and weights are where the config
says. Each failure names the config key or the install step that fixes it."""
from __future__ import annotations

import shutil
import uuid
from typing import Optional

from transforms.core.errors import PreflightError


def require_program(name: str, purpose: str) -> None:
    if shutil.which(name) is None:
        raise PreflightError(
            f"`{name}` is not installed but is needed for {purpose}; "
            f"run `make setup` (it installs the Debian package) or install it yourself")


# --- checks every benchmark makes ------------------------------------------------------

def check_writable(folder: str, key: str) -> None:
    """`folder` exists (or can be made) and takes a new file: one line naming the folder
    when not, before any work. A probe file is written and removed, since permission
    bits alone mislead (root ignores them; a read-only mount or a full quota does not)."""
    from apache_beam.io.filesystems import FileSystems

    from transforms.io.files import make_dirs
    probe = FileSystems.join(folder, f".write-probe-{uuid.uuid4().hex}")
    try:
        make_dirs(folder)
        with FileSystems.create(probe) as f:
            f.write(b"probe")
        FileSystems.delete([probe])
    except Exception as e:  # noqa: BLE001 - any file system's way of saying no
        reason = getattr(e, "strerror", None) or str(e).splitlines()[0][:200]
        raise PreflightError(f"{key}: cannot write to {folder}: {reason}") from None


def check_outputs(output: str, cache_root: Optional[str]) -> None:
    """The release root and the cache can be written (checked before any work)."""
    check_writable(output, "--output")
    if cache_root:
        check_writable(cache_root, "cache.dir")


def check_not_empty(path: Optional[str], key: str) -> None:
    """An input file a config names must hold something: an empty one would build an
    empty release and use up the version. Reads up to the first non-blank byte only."""
    if not path or _is_glob(path):
        return
    from apache_beam.io.filesystems import FileSystems
    try:
        with FileSystems.open(path, compression_type="uncompressed") as f:
            for block in iter(lambda: f.read(1 << 16), b""):
                if block.strip():
                    return
    except OSError as e:
        raise PreflightError(f"{key}: cannot read {path}: {e.strerror or e}") from None
    raise PreflightError(f"{key}: {path} is empty: nothing to build")


def _is_glob(path: str) -> bool:
    return any(c in path for c in "*?[")
