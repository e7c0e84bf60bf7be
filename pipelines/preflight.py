"""Checks that run before any work: inputs exist, tools and weights are where the config
says. Each failure names the config key or the install step that fixes it."""
from __future__ import annotations

import glob
import os
import shutil

from pipelines.errors import InputError, UserError
from pipelines.imagecode_config import ImageCodeConfig
from schemas.crowd import DESCRIPTION_COLUMNS, RETRIEVAL_COLUMNS
from transforms.answer_files import check_answer_file


class PreflightError(UserError, RuntimeError):
    """The run cannot start; the message says what to change."""


def check_imagecode(cfg: ImageCodeConfig) -> None:
    videos = cfg.inputs.videos
    if not videos:
        raise PreflightError("no video manifest: set inputs.videos (--set inputs.videos=PATH or VIDEOS=PATH)")
    if "://" not in videos and not os.path.isfile(videos):
        raise PreflightError(f"inputs.videos: no such file: {videos}")
    require_program("ffmpeg", "decoding videos")
    if cfg.quality.ocr.enabled:
        require_program("tesseract", "the OCR filter (quality.ocr.enabled)")
    images = cfg.static.images
    if images and "://" not in images and not _exists(images):
        raise PreflightError(f"static.images: no such file or folder: {images}")
    for key, path, columns in (("crowd.descriptions", cfg.crowd.descriptions, DESCRIPTION_COLUMNS),
                               ("crowd.retrievals", cfg.crowd.retrievals, RETRIEVAL_COLUMNS)):
        if path:  # paid answers: a file that cannot be read whole stops the build here
            try:
                check_answer_file(path, columns)
            except InputError as e:
                raise PreflightError(f"{key}: {e}") from None
    if cfg.stats.parser:
        from transforms.text_stats import ParserNotInstalled, check_parser
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


def _exists(path: str) -> bool:
    """A file, a folder, or a glob that matches something."""
    return os.path.exists(path) or bool(glob.glob(path))


def require_program(name: str, purpose: str) -> None:
    if shutil.which(name) is None:
        raise PreflightError(
            f"`{name}` is not installed but is needed for {purpose}; "
            f"run `make setup` (it installs the Debian package) or install it yourself")
