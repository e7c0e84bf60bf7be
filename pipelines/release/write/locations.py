"""Paths of the building machine, as a release writes them (every benchmark).

A release is read on other machines, so it holds no absolute path of the one that built
it. A path the build used is written

- relative to the release folder, when it lies inside it (the staging folder a stage
  wrote into, e.g. `compat/image-sets/<set>/img3.jpg`);
- relative to the build's input root, when it names an input (a reject's file, FG's pool
  image, NLVR2's image file, the config's input paths). The input root is the deepest
  folder holding every input the build read and is recorded once, in the build's record
  BUILD.json (`input_root`; where the inputs were is the build's, not the release's):
  `os.path.join(record["input_root"], path)` finds the file again on the building machine;
- the cache (an output of builds, `cache.dir`, `<output>/.cache` by default) relative to
  the release folder (`../../.cache`).

Paths with a scheme (gs://, https://) are no machine's own and stay as they are.

    roots = input_root([config paths..., table paths..., reject files...], release_dirs)
    relocate = Relocate(roots, release_dirs=[staging, final])
    relocate.path("/data/coco/val2014/x.jpg") -> "val2014/x.jpg"   (input root /data/coco)
    relocate.text("cannot read /data/coco/x.json: truncated") -> "cannot read x.json: truncated"
"""
from __future__ import annotations

import dataclasses
import glob
import os
import re
import typing
from typing import Any, Dict, Iterable, List, Optional, Sequence

from apache_beam.io.filesystems import FileSystems

from pipelines.config import PATH_TYPES

CACHE_KEY = ("cache", "dir")   # the config key of the cache folder: an output, not an input


def is_local(path) -> bool:
    return isinstance(path, str) and bool(path) and FileSystems.get_scheme(path) is None \
        and os.path.isabs(path)


def _inside(path: str, folder: str) -> bool:
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder if folder == "/" else folder + "/")


def input_root(paths: Iterable[str], release_dirs: Sequence[str] = ()) -> Optional[str]:
    """The deepest folder holding every local absolute path of `paths` (a file's folder,
    a folder itself, a pattern's folder before its first wildcard), leaving out paths in
    the release; None when there is none."""
    folders = []
    for path in paths:
        if not is_local(path) or any(_inside(os.path.normpath(path), d) for d in release_dirs):
            continue
        path = os.path.normpath(path)
        if glob.has_magic(path):
            path = os.path.dirname(path[:re.search(r"[*?\[]", path).start()] + "x")
        elif not os.path.isdir(path):
            path = os.path.dirname(path)
        folders.append(path)
    if not folders:
        return None
    return os.path.commonpath(folders)


class Relocate:
    """Rewrites paths and texts as the release holds them (see the module docstring).
    Small and picklable: the same object serves the driver and a Beam step."""

    def __init__(self, root: Optional[str], release_dirs: Sequence[str] = ()):
        self.root = os.path.normpath(root) if root else None
        self.release_dirs = [os.path.normpath(d) for d in release_dirs if d and is_local(d)]
        # longest first: a release inside the input root is release-relative
        prefixes = sorted(self.release_dirs + ([self.root] if self.root else []),
                          key=len, reverse=True)
        # a prefix where a path starts: not inside a word, a longer path or a URL
        self._text = [re.compile(r"(?<![\w./:~-])" + re.escape(p.rstrip("/") + "/") + r"(?!/)")
                      for p in prefixes]

    def path(self, value: str) -> str:
        """A path as the release writes it: relative to the release folder or to the
        input root when it lies in one, else as given (a URL, a relative path)."""
        if not is_local(value):
            return value
        value = os.path.normpath(value)
        for folder in self.release_dirs:
            if _inside(value, folder):
                return os.path.relpath(value, folder).replace(os.sep, "/")
        if self.root and _inside(value, self.root):
            return os.path.relpath(value, self.root).replace(os.sep, "/")
        return value

    def text(self, value: str) -> str:
        """A free text (a reject's detail) with each path in the release folder or the
        input root written relative to it."""
        if not isinstance(value, str) or "/" not in value:
            return value
        for pattern in self._text:
            value = pattern.sub("", value)
        return value

    def texts(self, value):
        """`text` over every string of a JSON-like value (a manifest's figures: a
        leakage example names its input line)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.texts(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.texts(v) for v in value]
        return value

    def paths_in(self, value):
        """`path` over every string of a JSON-like value that is a local absolute path
        (the manifest's `models`: a checkpoint, a model folder), the rest as it is."""
        if isinstance(value, str):
            return self.path(value) if is_local(value) else value
        if isinstance(value, dict):
            return {k: self.paths_in(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.paths_in(v) for v in value]
        return value

    def from_release(self, value: str, release_dir: str) -> str:
        """An output path (the cache) relative to the release folder `release_dir`."""
        if not is_local(value):
            return value
        return os.path.relpath(os.path.normpath(value), release_dir).replace(os.sep, "/")


def local_paths_in(value) -> List[str]:
    """Every local absolute path among the strings of a JSON-like value (the models' own
    paths: they belong to the input root like the config's inputs)."""
    if isinstance(value, str):
        return [value] if is_local(value) else []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in local_paths_in(v)]
    return []


# --- the config's paths ---------------------------------------------------------------

def config_paths(config) -> List[str]:
    """Every InputPath value of a config dataclass but the cache folder."""
    found: List[str] = []
    _walk(config, (), lambda key, value: found.append(value) if key != CACHE_KEY else value)
    return found


def relocated_config(config, relocate: Relocate, release_dir: str) -> Dict[str, Any]:
    """The config as plain data (what the manifest records) with every InputPath value
    relative to the input root (the cache folder: to the release folder)."""
    def move(key, value):
        return relocate.from_release(value, release_dir) if key == CACHE_KEY else relocate.path(value)
    return _walk(config, (), move)


def resolved_config(raw: Dict[str, Any], config_type: type, input_root: Optional[str],
                    release_dir: str) -> Dict[str, Any]:
    """The inverse of relocated_config: a manifest's config with its paths absolute again
    (for commands that rebuild from a release, like ImageCoDe's calibrate)."""
    def back(key, value):
        if not isinstance(value, str) or not value or FileSystems.get_scheme(value) or os.path.isabs(value):
            return value
        base = release_dir if key == CACHE_KEY else input_root
        return os.path.normpath(os.path.join(base, value)) if base else value
    return _walk_raw(raw, config_type, (), back)


def _path_hint(hint) -> bool:
    """Whether a type hint is a path a build reads (InputPath, InputFile, ImageSource),
    possibly inside Optional/List/Dict."""
    if hint in PATH_TYPES:
        return True
    return any(_path_hint(a) for a in typing.get_args(hint))


def _walk(config, key: tuple, visit):
    """to_dict of a config dataclass, with `visit(key, path)` applied to each InputPath."""
    if dataclasses.is_dataclass(config):
        hints = typing.get_type_hints(type(config))
        out = {}
        for field in dataclasses.fields(config):
            value = getattr(config, field.name)
            if dataclasses.is_dataclass(value):
                out[field.name] = _walk(value, key + (field.name,), visit)
            elif _path_hint(hints[field.name]):
                out[field.name] = _map_paths(value, key + (field.name,), visit)
            else:
                out[field.name] = _plain(value)
        return out
    return config


def _walk_raw(raw, config_type, key: tuple, visit):
    if not (dataclasses.is_dataclass(config_type) and isinstance(raw, dict)):
        return raw
    hints = typing.get_type_hints(config_type)
    out = dict(raw)
    for field in dataclasses.fields(config_type):
        if field.name not in raw:
            continue
        hint = hints[field.name]
        inner = _dataclass_in(hint)
        if inner is not None:
            out[field.name] = _walk_raw(raw[field.name], inner, key + (field.name,), visit)
        elif _path_hint(hint):
            out[field.name] = _map_paths(raw[field.name], key + (field.name,), visit)
    return out


def _dataclass_in(hint) -> Optional[type]:
    if dataclasses.is_dataclass(hint):
        return hint
    for arg in typing.get_args(hint):
        if dataclasses.is_dataclass(arg):
            return arg
    return None


def _map_paths(value, key: tuple, visit):
    if isinstance(value, str):
        return visit(key, value)
    if isinstance(value, list):
        return [_map_paths(v, key, visit) for v in value]
    if isinstance(value, dict):
        return {k: _map_paths(v, key, visit) for k, v in value.items()}
    return value


def _plain(value):
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
