"""What a path is, told without importing Beam: a URL or a local path, absolute, a
regular file or something else. The command line checks its arguments, its config and
its inputs with these before Beam (seconds to import) is loaded, so that a mistake is
answered at once (pipelines/build.py); transforms/io/files.py opens and writes files
through Beam's FileSystems."""
from __future__ import annotations

import errno
import os
import re
import stat
from typing import Optional, Tuple

from schemas import reasons

# Beam's FileSystems.get_scheme reads a scheme with this same pattern
# (apache_beam/io/filesystems.py, URI_SCHEMA_PATTERN): "gs://b/x" -> "gs", "/a/b" -> None.
_SCHEME = re.compile(r"(?P<scheme>[a-zA-Z][-a-zA-Z0-9+.]*)://")


def url_scheme(path: str) -> Optional[str]:
    """The scheme of a URL ("gs", "s3", "file"), None for a local path."""
    found = _SCHEME.match(path.strip())
    return found["scheme"] if found else None


def absolute_path(path: str) -> str:
    """A local path made absolute against the working directory the command ran in; a
    URL (gs://...) and "" (unset) as given. Beam hands paths to workers as written, and
    a worker of a distributed run (another process, another working directory) must
    find the same file; every path derived from it (staging, cache) is then absolute too."""
    if not path or url_scheme(path):
        return path
    return os.path.abspath(os.path.expanduser(path))


def special_file_kind(path: str) -> Optional[str]:
    """What a local path is when it exists but is not a regular file ("a folder",
    "a FIFO (named pipe)", "a character device", ...), found with stat (a FIFO is never
    opened); None for a regular file, a missing path and a URL (gs://...)."""
    if not path or url_scheme(path):
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


def unreachable(path: str) -> Optional[Tuple[str, str]]:
    """(reason code, detail) when a local path cannot be reached, told by what stat says
    rather than as "no such file" for every failure: a symlink loop and a name longer
    than the file system allows were both reported as missing files. None when stat
    succeeds, and for a URL (its file system answers for it).

        no such file (ENOENT, or a part of the path is a file: ENOTDIR)   path_not_found
        a symlink loop (ELOOP)                                             not_a_file
        a name or path longer than the file system allows (ENAMETOOLONG)   bad_field
        anything else (no permission ...)                                  not_a_file"""
    if not path or url_scheme(path):
        return None
    try:
        os.stat(path)
        return None
    except OSError as e:
        code = e.errno
    if code == errno.ENOENT:
        return reasons.PATH_NOT_FOUND, f"no such file: {path}"
    if code == errno.ENOTDIR:
        return reasons.PATH_NOT_FOUND, f"no such file: {path} (a part of the path is a file, not a folder)"
    if code == errno.ELOOP:
        return reasons.NOT_A_FILE, f"{path} is a symlink loop (too many levels of symbolic links)"
    if code == errno.ENAMETOOLONG:
        longest = max(len(part.encode("utf-8", "surrogatepass")) for part in path.split(os.sep))
        shown = path if len(path) <= 1000 else path[:1000] + "..."
        return reasons.BAD_FIELD, (f"{shown} is a name the file system cannot hold: its longest "
                                   f"part has {longest} bytes and the path {len(path.encode('utf-8', 'surrogatepass'))} "
                                   f"(Linux allows {_name_max(path)} per name and 4096 per path)")
    return reasons.NOT_A_FILE, f"{path} cannot be read: {os.strerror(code)}"


def _name_max(path: str) -> int:
    """The file system's longest name in bytes where the path's nearest folder tells it, else 255."""
    folder = os.path.dirname(os.path.abspath(path))
    while folder and not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    try:
        return os.pathconf(folder or "/", "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255
