"""Typed YAML configs with `--set a.b=value` overrides.

Each benchmark declares its config as nested dataclasses. Loading checks every key and
type against them before any work starts: an unknown key or a value of the wrong type
is a `ConfigError` naming the dotted key. The resolved config (a plain dict) and its
hash go into the release manifest.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import typing
from typing import Any, Dict, Iterable, Iterator, List, NewType, Tuple, Type, TypeVar

import yaml

from transforms.core.errors import ConfigError
from transforms.io.paths import absolute_path, url_scheme

T = TypeVar("T")

# The paths a build reads. A relative local path is made absolute when the config is
# loaded: the workers of a distributed run are other processes in another working
# directory, and Beam hands them the path as written. Paths with a scheme (gs://, s3://)
# and "" (unset) are kept as they are. Which of the three a key is decides what the
# runner checks before any work (pipelines/preflight.py check_inputs):
#   InputPath    a file, folder or glob of any kind (weights, a model folder, a cache
#                folder it writes): never a FIFO, device or socket
#   InputFile    a text input (JSON, JSON Lines, CSV, CoNLL-U, a word list) or a glob of
#                them: every file a regular file, as stored (not compressed), UTF-8, not
#                empty, and named once per key
#   ImageSource  a folder of images, or a JSON Lines manifest of them (an InputFile then)
InputPath = NewType("InputPath", str)
InputFile = NewType("InputFile", str)
ImageSource = NewType("ImageSource", str)
PATH_TYPES = (InputPath, InputFile, ImageSource)

Device = typing.Literal["auto", "cpu", "cuda"]   # a model stage's device (transforms/core/devices.py)
# an image encoder's precision (transforms/image/encoders.py PRECISIONS)
Precision = typing.Literal["auto", "fp32", "fp16", "bf16", "int8"]

# The checkout this code runs from. The configs it ships (pipelines/<benchmark>/configs/)
# name their paths relative to it (the embedded samples under samples/), so a build
# finds them from any working folder, where a path of one's own config file or of
# `--set` is relative to the working folder, as a shell's is.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED_CONFIGS = os.path.join(CHECKOUT, "pipelines")


def sample_dir(benchmark: str) -> str:
    """Where a benchmark's embedded sample is generated on first use: samples/<benchmark>
    of the checkout, wherever the command runs from."""
    return os.path.join(CHECKOUT, "samples", benchmark)


@contextlib.contextmanager
def generating_sample(benchmark: str):
    """Held while a benchmark's sample is generated (or found complete): two builds started
    together (two terminals, two test workers) would write the same files; the second
    waits for the first, then finds the sample complete."""
    import fcntl
    folder = os.path.dirname(sample_dir(benchmark))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f".{benchmark}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclasses.dataclass
class KnnConfig:
    """An exact kNN's candidate search (transforms/vectors/knn.py KnnSpec): FAISS or torch,
    on the CPU or a GPU. The neighbour lists are the same for every choice (the float64
    re-rank decides them), so it is not part of any identity; the manifest records it."""
    backend: typing.Literal["auto", "faiss", "torch"] = "auto"   # auto: a GPU wherever one is usable
    device: Device = "auto"

    def spec(self):
        from transforms.vectors.knn import KnnSpec   # Beam and FAISS: not at config import
        return KnnSpec(self.backend, self.device)


def load_config(path: str, overrides: Iterable[str], schema: Type[T]) -> T:
    """Read `path`, apply `KEY=VALUE` overrides, and validate against `schema`."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    if inside(path, SHIPPED_CONFIGS):
        _anchor_paths(raw, schema, CHECKOUT)
    for override in overrides:
        apply_override(raw, override)
    return from_dict(schema, raw)


def _anchor_paths(raw: Dict[str, Any], schema: type, base: str) -> None:
    """Make the relative local paths of `raw` (a config's YAML, before `--set`) relative
    to `base`: every InputPath, InputFile and ImageSource value, alone or in a list."""
    for key, _, _ in input_fields(schema):
        *sections, name = key.split(".")
        node = raw
        for section in sections:
            node = node.get(section) if isinstance(node, dict) else None
        if not isinstance(node, dict) or name not in node:
            continue
        value = node[name]
        node[name] = ([_anchored(v, base) for v in value] if isinstance(value, list)
                      else _anchored(value, base))


def _anchored(value, base: str):
    """A relative local path joined to `base`; anything else (a URL, ~, an absolute path,
    a value of the wrong type, which from_dict names) as it is."""
    if not isinstance(value, str) or not value or os.path.isabs(value) or url_scheme(value) \
            or value.startswith("~"):
        return value
    return os.path.join(base, value)


def config_names(folder: str) -> List[str]:
    """The named configs in a benchmark's configs/ folder ("paper", "sample", ...)."""
    return sorted(n[:-len(".yaml")] for n in os.listdir(folder) if n.endswith(".yaml"))


def config_path(folder: str, name_or_path: str) -> str:
    """A named config's YAML in `folder`, or the path itself when it names a file; a
    ConfigError listing the names when it is neither (a mistyped name is not a path)."""
    names = config_names(folder)
    if name_or_path in names:
        return os.path.join(folder, f"{name_or_path}.yaml")
    if not os.path.isfile(name_or_path):
        raise ConfigError(f"--config {name_or_path}: no config of that name ({', '.join(names)}) "
                          "and no such file")
    return name_or_path


def apply_override(raw: Dict[str, Any], override: str) -> None:
    """Apply one `a.b.c=value`; the value is parsed as YAML (so 0.3, true, [1, 2] work)."""
    key, sep, text = override.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set expects KEY=VALUE, got {override!r}")
    parts = key.strip().split(".")
    node = raw
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {key}: {part!r} is not a section")
        node = child
    try:
        node[parts[-1]] = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"--set {key}: cannot parse value {text!r}: {e}") from None


def from_dict(schema: Type[T], raw: Dict[str, Any], prefix: str = "") -> T:
    """Build the dataclass `schema` from `raw`, checking keys and types recursively."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{prefix.rstrip('.') or 'config'}: expected a mapping, got {raw!r}")
    hints = typing.get_type_hints(schema)
    fields = {f.name: f for f in dataclasses.fields(schema)}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ConfigError(
            f"unknown config key(s): {', '.join(prefix + k for k in unknown)} "
            f"(known under {prefix.rstrip('.') or 'top level'}: {', '.join(sorted(fields))})")
    values = {}
    for name, field in fields.items():
        key = prefix + name
        if name not in raw:
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                raise ConfigError(f"missing config key: {key}")
            continue
        values[name] = _coerce(hints[name], raw[name], key)
    obj = schema(**values)
    validate = getattr(obj, "validate", None)
    if validate:
        validate()
    return obj


def _coerce(hint, value, key: str):
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, value, key + ".")
    if origin is typing.Union:  # Optional[X] and friends
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(arg, value, key)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(f"{key}: {value!r} matches none of {_type_name(hint)}")
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(map(repr, args))}")
        return value
    if origin in (dict, Dict):
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        k_hint, v_hint = args
        return {_coerce(k_hint, k, f"{key}.{k}"): _coerce(v_hint, v, f"{key}.{k}") for k, v in value.items()}
    if origin in (list, typing.List):
        if not isinstance(value, list):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        return [_coerce(args[0], v, f"{key}[{i}]") for i, v in enumerate(value)]
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {value!r}")
        return value
    if hint is str or hint in PATH_TYPES:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return absolute_path(value) if hint in PATH_TYPES else value
    raise ConfigError(f"{key}: unsupported type {_type_name(hint)}")


def input_fields(schema: type, prefix: str = "") -> Iterator[Tuple[str, Any, bool]]:
    """(dotted key, path type, whether it holds a list) for every InputPath, InputFile and
    ImageSource field of a config schema, alone, Optional or in a list: every input a
    benchmark can read, found from its config type."""
    hints = typing.get_type_hints(schema)
    for field in dataclasses.fields(schema):
        hint, key = hints[field.name], prefix + field.name
        if dataclasses.is_dataclass(hint):
            yield from input_fields(hint, key + ".")
            continue
        kind = _path_type(hint)
        if kind is not None:
            yield key, kind, typing.get_origin(hint) in (list, typing.List)


def input_paths(config) -> Iterator[Tuple[str, Any, List[str]]]:
    """(dotted key, path type, the paths it holds) for every set path of a loaded config."""
    for key, kind, _ in input_fields(type(config)):
        value = config
        for part in key.split("."):
            value = getattr(value, part)
        paths = [v for v in (value if isinstance(value, list) else [value]) if v]
        if paths:
            yield key, kind, paths


def _path_type(hint):
    """The path type inside a hint (InputFile, Optional[InputFile], List[InputFile]), or None."""
    if hint in PATH_TYPES:
        return hint
    for arg in typing.get_args(hint):
        found = _path_type(arg)
        if found is not None:
            return found
    return None


def _type_name(hint) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


# An answer key of a crowd round: one file (or glob), or a list of them, when a round's
# answers come from several exports (two MTurk batches, two Label Studio projects).
AnswerFiles = typing.Union[InputFile, List[InputFile]]


def listed(value) -> List[str]:
    """The paths of a key that takes one path or a list of them ("" and None: none)."""
    return [v for v in (value if isinstance(value, list) else [value]) if v]


def inside(path: str, folder: str) -> bool:
    """Whether a config's path (absolute once loaded: InputPath) lies in `folder`
    (relative to the working directory, as the sample configs are)."""
    return os.path.abspath(path or "").startswith(os.path.abspath(folder) + os.sep)


def reads_sample(config) -> bool:
    """Whether a loaded config reads its benchmark's embedded sample (samples/<benchmark>/,
    generated on first use): its type says, with a `reads_sample()` method (a config type
    without one never does). Asked before the benchmark is loaded: the runner checks the
    inputs of any other config before it imports Beam (pipelines/build.py)."""
    method = getattr(config, "reads_sample", None)
    return bool(method and method())


def to_dict(config) -> Dict[str, Any]:
    """The resolved config as plain data (what the manifest records)."""
    return dataclasses.asdict(config)


def config_hash(config) -> str:
    """A stable hash of the resolved config: same values, same hash."""
    return dict_hash(to_dict(config))


def dict_hash(data: Dict[str, Any]) -> str:
    """The sha256 of a config as plain data (e.g. as a release's manifest records it)."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()
