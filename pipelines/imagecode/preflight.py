"""ImageCoDe's checks before any work: inputs exist and hold something, crowd answer
files can be read whole, tools and weights are where the config says. Each failure
names the config key or the install step that fixes it."""
from __future__ import annotations

import glob
import os

from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.crowd.records import (DESCRIBE_TASKS, DESCRIPTION_COLUMNS,
                                               RETRIEVAL_COLUMNS, RETRIEVE_TASKS, WORKER)
from pipelines.config import listed
from pipelines.preflight import check_image_folder, check_not_empty, require_program
from transforms.core.errors import InputError, PreflightError
from transforms.crowd.answer_files import check_answer_file
from transforms.crowd.shown import check_evidence
from transforms.image.ocr import tessdata_dir


def check_imagecode(cfg: ImageCodeConfig) -> None:
    videos = cfg.inputs.videos
    if not videos:
        raise PreflightError("no video manifest: set inputs.videos (--set inputs.videos=PATH or VIDEOS=PATH)")
    if "://" not in videos and not os.path.isfile(videos):
        raise PreflightError(f"inputs.videos: no such file: {videos}")
    check_not_empty(videos, "inputs.videos")
    require_program("ffmpeg", "decoding videos")
    if cfg.quality.ocr.enabled and cfg.quality.ocr.backend == "pytesseract":
        require_program(cfg.quality.ocr.tesseract_cmd or "tesseract",
                        "the OCR filter (quality.ocr.backend pytesseract; "
                        "quality.ocr.tesseract_cmd names the binary)")
    elif cfg.quality.ocr.enabled:
        tessdata_dir(cfg.quality.ocr.tessdata, cfg.quality.ocr.lang)  # raises naming the key
    images = cfg.static.images
    if images and "://" not in images:
        if not _exists(images):
            raise PreflightError(f"static.images: no such file or folder: {images}")
        if os.path.isdir(images):
            check_image_folder(images, "static.images")
        else:
            check_not_empty(images, "static.images")
    for round_, columns, tasks in (("descriptions", DESCRIPTION_COLUMNS, DESCRIBE_TASKS),
                                   ("retrievals", RETRIEVAL_COLUMNS, RETRIEVE_TASKS)):
        key = f"crowd.{round_}"
        # paid answers: a file that cannot be read whole stops the build here (each of a list)
        for path in listed(getattr(cfg.crowd, round_)):
            try:
                check_answer_file(path, columns, worker=WORKER)
            except InputError as e:
                raise PreflightError(f"{key}: {e}") from None
            # and one that cannot show what its workers saw (crowd/rounds.py, stale_answer)
            try:
                check_evidence(path, key, getattr(cfg.crowd.tasks_release, round_),
                               f"crowd.tasks_release.{round_}", "imagecode",
                               [f"crowd/{tasks}.jsonl"], "task_id")
            except InputError as e:
                raise PreflightError(str(e)) from None
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


def _exists(path: str) -> bool:
    """A file, a folder, or a glob that matches something."""
    return os.path.exists(path) or bool(glob.glob(path))
