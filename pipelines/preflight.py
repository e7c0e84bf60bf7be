"""Checks that run before any work: inputs exist, tools and weights are where the config
says. Each failure names the config key or the install step that fixes it."""
from __future__ import annotations

import os
import shutil
import stat
import uuid
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from pipelines.config import ImageSource, InputFile, input_paths
from schemas import reasons
from transforms.core.errors import PreflightError
from transforms.image.formats import IMAGE_SUFFIXES
from transforms.io.paths import special_file_kind, unreachable, url_scheme


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


def check_outputs_outside_inputs(config, output: str, cache_root: Optional[str]) -> None:
    """The release root and the cache are in no folder the build reads: one line naming
    both keys otherwise, before any work, for every benchmark.

    A folder an input reads as a whole takes in whatever is under it, so a release
    written there is read back by the next build: an output folder inside FG's pool
    folder put the previous release's explorer thumbnails into the rebuild's pool (48 ->
    57 images, every similar set got one). The folders read as a whole are an image
    folder (ImageSource), any folder a path names (InputPath: a model or release folder)
    and the fixed part of a glob that can reach into subfolders (`**`, or a wildcard in
    a folder's name). Local folders are compared by what they are, (st_dev, st_ino), not
    by how they are named: the output's folder and every folder above it, symlinks
    followed, against each input folder, so a second name of an input folder (a symlink,
    a bind mount: Linux gives folders no hard links) is caught as the folder itself. An
    input that is the cache folder itself (`cache.dir`) is not an input folder. A few
    stat calls: the runner makes this check before Beam or a model is imported
    (pipelines/build.py)."""
    writes = [("--output", output)] + ([("cache.dir", cache_root)] if cache_root else [])
    for key, kind, paths in input_paths(config):
        for path in paths:
            folder = _folder_read_whole(path, kind)
            if folder is None or (cache_root and _same_place(folder, cache_root)):
                continue
            for write_key, written in writes:
                if _inside(written, folder):
                    raise PreflightError(
                        f"{write_key}: {written} is inside {key} ({folder}), which the build reads "
                        "as a whole: a release or cache written there would be read back as input "
                        "by the next build; write it outside every input folder")


def _folder_read_whole(path: str, kind) -> Optional[str]:
    """The folder whose whole content an input path reads, or None (a single file)."""
    if _is_glob(path):
        parts = path.replace("\\", "/").split("/")
        fixed = []
        for part in parts:
            if _is_glob(part):
                break
            fixed.append(part)
        reaches_subfolders = "**" in path or len(fixed) < len(parts) - 1 or any(c in parts[-1] for c in "?[")
        return ("/".join(fixed) or "/") if reaches_subfolders else None
    if kind is InputFile:
        return None
    if url_scheme(path):
        return path if path.endswith("/") else None
    return path if os.path.isdir(path) else None


def _resolved(path: str) -> str:
    """A local path with symlinks resolved (its missing tail as written), a URL with
    one trailing slash."""
    if url_scheme(path):
        return path.rstrip("/") + "/"
    return os.path.join(os.path.realpath(os.path.abspath(os.path.expanduser(path))), "")


def _folder_identity(path: str) -> Optional[Tuple[int, int]]:
    """(st_dev, st_ino) of an existing local folder, symlinks followed; None otherwise."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _folders_from(path: str) -> Iterator[str]:
    """`path` with symlinks resolved, then every folder above it, up to the root."""
    current = _resolved(path).rstrip(os.sep) or os.sep
    while True:
        yield current
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent


def _inside(path: str, folder: str) -> bool:
    """`path` is `folder` or under it: a URL by its text, a local path by identity (is
    `folder` the folder it is in, or one above?), whatever names either goes by."""
    if url_scheme(path) or url_scheme(folder):
        return _resolved(path).startswith(_resolved(folder))
    target = _folder_identity(folder)
    if target is None:   # nothing there to read back yet
        return _resolved(path).startswith(_resolved(folder))
    return any(_folder_identity(above) == target for above in _folders_from(path))


def _same_place(a: str, b: str) -> bool:
    if not (url_scheme(a) or url_scheme(b)) and _folder_identity(a) is not None:
        return _folder_identity(a) == _folder_identity(b)
    return _resolved(a) == _resolved(b)


# --- the inputs a config names (every benchmark, before its own preflight) ---------------

def check_inputs(config) -> None:
    """Every path the config names, by its type (pipelines/config.py), before any work
    and before any file is opened: one PreflightError line naming the key and the path.

    InputFile     input_files(): exists, regular files, stored as plain UTF-8, not empty,
                  each named once
    ImageSource   a folder holding an image, or a manifest file checked as an InputFile
    InputPath     never a FIFO, device or socket (stat only: opening a FIFO waits forever);
                  it may not exist yet (a cache folder), or the benchmark says what it is for
    every path    a symlink loop or a name longer than the file system allows is said to
                  be one (transforms/io/paths.py unreachable), never "no such file" for them"""
    for key, kind, paths in input_paths(config):
        if kind is InputFile:
            input_files(key, paths)
            continue
        for path in paths:
            if kind is ImageSource and special_file_kind(path) == "a folder":
                check_image_folder(path, key)
            elif kind is ImageSource:
                input_files(key, [path])
            else:
                _refuse_unreachable(key, path)
                _refuse_special(key, path, allow_folder=True)


def _refuse_unreachable(key: str, path: str) -> None:
    """A path that exists but cannot be reached (a symlink loop, a name too long): one
    line saying so. A missing path is the caller's to judge (a cache folder is made)."""
    problem = unreachable(path)
    if problem and problem[0] != reasons.PATH_NOT_FOUND:
        raise PreflightError(f"{key}: {problem[1]}")


def check_image_folder(folder: str, key: str) -> None:
    """A local folder of images holds at least one (an empty one builds an empty release,
    or one without its main input)."""
    for _, _, files in os.walk(folder):
        if any(name.lower().endswith(IMAGE_SUFFIXES) for name in files):
            return
    raise PreflightError(f"{key}: {folder} holds no {'/'.join(IMAGE_SUFFIXES)} file: nothing to build")


def input_files(key: str, patterns: Sequence[str]) -> List[str]:
    """The files that `patterns` (paths or globs, local or any Beam file system) name,
    in pattern order then name order, once each is known to be usable; PreflightError
    naming `key` and the file otherwise:

    - a regular file (stat, never open): a folder, FIFO, device or socket is refused
      (a glob skips the folders it matches);
    - as stored, plain text: a gzip, bzip2, xz, zstd or zip file is refused, not read (a
      reject's line number must be a line of the file the user has; `gunzip` first), and
      so is UTF-16 or UTF-32 text (a byte order mark: inputs are UTF-8);
    - not empty (an empty input builds an empty release);
    - named once: the same file twice in one key (two spellings, a glob and a path, a
      symlink) is refused, where it used to be read once without a word;
    - there at all: a path or a pattern that names nothing is refused."""
    files: List[str] = []
    seen: Dict[object, Tuple[str, str]] = {}   # file identity -> (path, the pattern naming it)
    for pattern in patterns:
        matched = _match(key, pattern)
        if not matched:
            raise PreflightError(f"{key}: no such file: {pattern}"
                                 + (" (the pattern matches nothing)" if _is_glob(pattern) else ""))
        for path in matched:
            identity = _identity(path)
            if identity in seen:
                first_path, first_pattern = seen[identity]
                how = ("listed twice" if first_pattern == pattern == path == first_path
                       else f"named twice, by {first_pattern} and by {pattern}")
                raise PreflightError(f"{key}: {path} is {how}: each input file is read once, "
                                     "so name it once")
            seen[identity] = (path, pattern)
            check_stored_text(path, key)
            files.append(path)
    return files


def _match(key: str, pattern: str) -> List[str]:
    """The files a path or glob names: a local path by stat (no Beam: a missing input is
    told before Beam is imported), a glob or URL by FileSystems.match. A named folder,
    FIFO, device or socket is refused."""
    if not _is_glob(pattern) and not url_scheme(pattern):
        _refuse_unreachable(key, pattern)
        if not os.path.lexists(pattern):
            return []
        _refuse_special(key, pattern, allow_folder=False)
        return [pattern]
    from apache_beam.io.filesystems import FileSystems
    try:
        matched = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    except Exception as e:   # noqa: BLE001 - an unknown scheme, no credentials
        raise PreflightError(f"{key}: cannot list {pattern}: {str(e).splitlines()[0][:200]}") from None
    files = []
    for path in matched:
        kind = special_file_kind(path)
        if kind == "a folder":
            continue
        if kind:
            raise PreflightError(f"{key}: {path} (matched by {pattern}) is {kind}, not a regular file")
        files.append(path)
    return files


def _refuse_special(key: str, path: str, allow_folder: bool) -> None:
    kind = special_file_kind(path)
    if kind and not (allow_folder and kind == "a folder"):
        raise PreflightError(f"{key}: {path} is {kind}, not a regular file"
                             + ("" if kind == "a folder" else ": an input is read from a file"))


def _identity(path: str):
    """What makes two spellings one file: (device, inode) for a local file (symlinks,
    hard links, `a/../b`), the URL otherwise."""
    if url_scheme(path):
        return path
    try:
        st = os.stat(path)
    except OSError:
        return os.path.abspath(path)
    return st.st_dev, st.st_ino


# First bytes of the stored forms an input must not have (compressed archives, UTF-16/32
# text): what they are and how to get the plain UTF-8 file.
_COMPRESSED = ((b"\x1f\x8b", "gzip-compressed", "gunzip -k"),
               (b"BZh", "bzip2-compressed", "bunzip2 -k"),
               (b"\xfd7zXZ\x00", "xz-compressed", "unxz -k"),
               (b"\x28\xb5\x2f\xfd", "zstd-compressed", "unzstd"),
               (b"PK\x03\x04", "a zip archive", "unzip"))
_WIDE_TEXT = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
              (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def check_stored_text(path: str, key: str) -> None:
    """An input text file as stored holds something and is plain UTF-8 text, not a
    compressed file or UTF-16/32 text (read from its first bytes, up to the first
    non-blank one): PreflightError naming `key` otherwise. Opens only a regular file."""
    _refuse_special(key, path, allow_folder=False)
    try:
        with _open_as_stored(path) as f:
            head = f.read(8)
            if head.startswith(b"\xef\xbb\xbf"):   # a UTF-8 BOM is fine, but it is not content
                head = head[3:]
            for magic, what, command in _COMPRESSED:
                if head.startswith(magic):
                    raise PreflightError(
                        f"{key}: {path} is {what}: inputs are read as stored, so a reject's line "
                        f"is a line of your file; decompress it first ({command} {path})")
            for bom, encoding in _WIDE_TEXT:
                if head.startswith(bom):
                    raise PreflightError(
                        f"{key}: {path} is {encoding} text (it starts with a byte order mark): "
                        f"inputs must be UTF-8 (iconv -f {encoding} -t UTF-8 {path})")
            block = head + f.read(_SNIFF_BYTES)
            _refuse_nul_bytes(key, path, block)
            while block:
                if block.strip():
                    return
                block = f.read(1 << 16)
    except OSError as e:
        raise PreflightError(f"{key}: cannot read {path}: {e.strerror or e}") from None
    raise PreflightError(f"{key}: {path} is empty: nothing to build")


# How much of a text input's start is looked at for NUL bytes: UTF-16 text written without
# a byte order mark holds one in every other byte of ASCII, so a few KB tell it.
_SNIFF_BYTES = 1 << 12


def _refuse_nul_bytes(key: str, path: str, start: bytes) -> None:
    """UTF-16 or UTF-32 text written without a byte order mark: ASCII text in it holds a
    NUL byte in every other (or three of four) bytes, which UTF-8 text never does.
    Without this it passed preflight, every line became a reject, and the build failed
    at its end ("yields nothing"). A stray NUL in UTF-8 text is left to the readers:
    that line or row is a reject (bad_json, control_character), the others go on."""
    if b"\x00" not in start:
        return
    even, odd = start[0::2].count(0), start[1::2].count(0)
    if start[:4].count(0) == 3:
        encoding = "UTF-32LE" if start[0] else "UTF-32BE"
    elif odd > len(start) // 4 and not even:
        encoding = "UTF-16LE"
    elif even > len(start) // 4 and not odd:
        encoding = "UTF-16BE"
    else:
        return
    raise PreflightError(f"{key}: {path} holds NUL bytes ({encoding[:6]} without a byte order mark?): "
                         f"inputs must be UTF-8 (iconv -f {encoding} -t UTF-8 {path})")


def _open_as_stored(path: str):
    """A file's bytes as stored: a local one with open() (Beam is not imported to check
    a local input), a URL through Beam's FileSystems."""
    if not url_scheme(path):
        return open(path, "rb")
    from apache_beam.io.filesystems import FileSystems
    return FileSystems.open(path, compression_type="uncompressed")


def check_not_empty(path: Optional[str], key: str) -> None:
    """An input file a config names must hold something: an empty one would build an
    empty release and use up the version (check_stored_text, for one path)."""
    if path and not _is_glob(path):
        check_stored_text(path, key)


def _is_glob(path: str) -> bool:
    return any(c in path for c in "*?[")
