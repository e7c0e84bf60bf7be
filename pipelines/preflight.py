"""Checks that run before any work: inputs exist, tools and weights are where the config
says. Each failure names the config key or the install step that fixes it."""
from __future__ import annotations

import glob
import os
import shutil
import uuid
from typing import Optional

from pipelines.errors import InputError, UserError
from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.rounds_schema import DESCRIPTION_COLUMNS, RETRIEVAL_COLUMNS
from transforms.crowd.answer_files import check_answer_file


class PreflightError(UserError, RuntimeError):
    """The run cannot start; the message says what to change."""


def check_imagecode(cfg: ImageCodeConfig) -> None:
    videos = cfg.inputs.videos
    if not videos:
        raise PreflightError("no video manifest: set inputs.videos (--set inputs.videos=PATH or VIDEOS=PATH)")
    if "://" not in videos and not os.path.isfile(videos):
        raise PreflightError(f"inputs.videos: no such file: {videos}")
    check_not_empty(videos, "inputs.videos")
    require_program("ffmpeg", "decoding videos")
    if cfg.quality.ocr.enabled:
        require_program("tesseract", "the OCR filter (quality.ocr.enabled)")
    images = cfg.static.images
    if images and "://" not in images:
        if not _exists(images):
            raise PreflightError(f"static.images: no such file or folder: {images}")
        if os.path.isdir(images):
            _check_folder_has_images(images, "static.images")
        else:
            check_not_empty(images, "static.images")
    for key, path, columns in (("crowd.descriptions", cfg.crowd.descriptions, DESCRIPTION_COLUMNS),
                               ("crowd.retrievals", cfg.crowd.retrievals, RETRIEVAL_COLUMNS)):
        if path:  # paid answers: a file that cannot be read whole stops the build here
            try:
                check_answer_file(path, columns)
            except InputError as e:
                raise PreflightError(f"{key}: {e}") from None
    if cfg.stats.parser:
        from transforms.text.stats import ParserNotInstalled, check_parser
        try:
            check_parser(cfg.stats.parser)
        except ParserNotInstalled as e:
            raise PreflightError(str(e)) from None
    if cfg.embed.kind == "open_clip":
        checkpoint = cfg.embed.checkpoint
        if not checkpoint:
            raise PreflightError(
                "embed.checkpoint is not set: give the local path of the "
                f"{cfg.embed.model_name} ({cfg.embed.pretrained}) weights; nothing is downloaded")
        if "://" not in checkpoint and not os.path.exists(checkpoint):
            raise PreflightError(f"embed.checkpoint: no such file or folder: {checkpoint}")


def _check_folder_has_images(folder: str, key: str) -> None:
    from transforms.image.collection import IMAGE_SUFFIXES
    for _, _, files in os.walk(folder):
        if any(name.lower().endswith(IMAGE_SUFFIXES) for name in files):
            return
    raise PreflightError(f"{key}: {folder} holds no {'/'.join(IMAGE_SUFFIXES)} file: nothing to build")


def _exists(path: str) -> bool:
    """A file, a folder, or a glob that matches something."""
    return os.path.exists(path) or bool(glob.glob(path))


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

    from schemas.manifest import make_dirs
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
