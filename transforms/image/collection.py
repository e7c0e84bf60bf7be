"""Reading a collection of still images (a folder, or a manifest of paths and ids).

`ReadImageCollection(source)` takes either
  a folder     every *.jpg / *.jpeg / *.png file below it (any depth, any letter case);
               image_id = the file's stem made safe (schemas.names.safe_name)
  a manifest   JSON Lines, one image per line: {"path": "...", "image_id": "..."};
               a relative path is taken relative to the manifest's folder
and gives ImageRefs. A bad manifest line is a reject naming the file and line (bytes that
are not UTF-8: bad_encoding); a listed path that exists but is not a regular file (a
folder, a pipe) is not_a_file, and so is such a thing found in a folder (reading a pipe
would never end). `HashAndDedupe(max_pixels)` then hashes each file's bytes (sha256,
streamed through Beam's FileSystems, so gs:// works too), rejects an image whose header
says it has more than `max_pixels` pixels (too_many_pixels, nothing decoded) and keeps
one image per distinct bytes: a cheap first pass, before anything is decoded or
embedded. Files whose bytes differ and whose pixels do not are found once the encoder
has decoded them (transforms/image/content.py: one rule for every collection).

Both choices that drop something are by a stable key, never by arrival order: of the
entries that map to the same safe id, the smallest path stays; of byte-identical files,
the smallest image_id stays. Counters: stage "images", level "entry" (files found or
manifest lines) and level "image" (hashing and de-duplication).
"""
from __future__ import annotations

import dataclasses
import os
import posixpath
from typing import Optional, Union

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from schemas.names import safe_name
from schemas.records import ImageRef
from transforms.core.hashing import content_sha256
from transforms.core.stage import MAIN, REJECTS, KeepFirst, StageFn, stage_pardo
from transforms.image.decode import ImageProblem, describe_error, read_header
from transforms.image.formats import DEFAULT_MAX_PIXELS, IMAGE_SUFFIXES
from transforms.io.lines import ReadNumberedLines, SourceLine, parse_json_object
from transforms.io.paths import unreachable

STAGE = "images"
MANIFEST_SUFFIXES = (".jsonl", ".json")
REQUIRED_FIELDS = ("path", "image_id")


def is_manifest(source: str) -> bool:
    """A local file, or a remote object named like a manifest; anything else is a folder."""
    if not FileSystems.get_scheme(source):
        return os.path.isfile(source)
    return source.lower().endswith(MANIFEST_SUFFIXES)


class ReadImageCollection(beam.PTransform):
    """folder or JSON Lines manifest -> ImageRef (main) and entry-level Rejects."""

    def __init__(self, source: str):
        super().__init__()
        self._source = source

    def expand(self, pbegin):
        if is_manifest(self._source):
            base_dir = posixpath.dirname(self._source) if FileSystems.get_scheme(self._source) \
                else os.path.dirname(os.path.abspath(self._source))
            parsed = (pbegin
                      | "Read lines" >> ReadNumberedLines(self._source)
                      | "Parse lines" >> stage_pardo(_ParseLine(base_dir)))
        else:
            pattern = FileSystems.join(self._source.rstrip("/"), "**")
            parsed = (pbegin
                      | "Match files" >> fileio.MatchFiles(
                          pattern, empty_match_treatment=fileio.EmptyMatchTreatment.ALLOW)
                      | "Images only" >> beam.Filter(lambda m: m.path.lower().endswith(IMAGE_SUFFIXES))
                      | "Name files" >> stage_pardo(_NameFile()))
        # Two files can give one id ("x.jpg", "x.png"; a line repeating an id): one id, one image.
        unique = parsed[MAIN] | "Smallest path per id" >> KeepFirst(
            STAGE, "entry", key=lambda ref: ref.image_id, order=lambda ref: ref.path,
            why=_same_image_id)
        rejects = (parsed[REJECTS], unique[REJECTS]) | "Entry rejects" >> beam.Flatten()
        return {MAIN: unique[MAIN], REJECTS: rejects}


def _not_a_regular_file(path: str) -> Optional[str]:
    """What a local path is when it exists but is not a regular file ("a folder", "not a
    regular file"); None for a regular file, a missing one, or a remote object."""
    if FileSystems.get_scheme(path) or not os.path.exists(path) or os.path.isfile(path):
        return None
    return "a folder" if os.path.isdir(path) else "not a regular file (a pipe, socket or device)"


class _NameFile(StageFn):
    stage, level = STAGE, "entry"
    counts_out = False  # out once its id is its own (the KeepFirst by id)

    def judge(self, metadata):
        problem = unreachable(metadata.path)   # a symlink loop in the folder
        if problem:
            reason, detail = problem
            yield self.reject(reason, metadata.path, detail=detail)
            return
        what = _not_a_regular_file(metadata.path)
        if what:
            yield self.reject(reasons.NOT_A_FILE, metadata.path, detail=f"{metadata.path} is {what}")
            return
        stem = posixpath.splitext(posixpath.basename(metadata.path.replace("\\", "/")))[0]
        try:
            image_id = safe_name(stem)
        except ValueError as e:
            yield self.reject(reasons.BAD_FIELD, metadata.path, detail=f"file name: {e}")
            return
        yield ImageRef(path=metadata.path, image_id=image_id)


class _ParseLine(StageFn):
    stage, level = STAGE, "entry"   # ReadNumberedLines gives no blank lines
    counts_out = False  # out once its id is its own (the KeepFirst by id)

    def __init__(self, base_dir: str):
        self._base_dir = base_dir

    def judge(self, line: SourceLine):
        parsed = parse_image_line(line, self._base_dir)
        if isinstance(parsed, ImageRef):
            yield parsed
            return
        reason, detail = parsed
        yield self.reject(reason, line.text.strip() or line.where, detail=detail,
                          file=line.path, line=line.number)


def parse_image_line(line: Union[SourceLine, str], base_dir: str):
    """An ImageRef, or (reason code, detail) saying what is wrong with the line."""
    record = parse_json_object(line, REQUIRED_FIELDS)
    if isinstance(record, tuple):
        return record
    try:
        image_id = safe_name(record["image_id"])
    except ValueError as e:
        return reasons.BAD_FIELD, f"image_id: {e}"
    path = record["path"]
    if not FileSystems.get_scheme(path) and not os.path.isabs(path):
        path = FileSystems.join(base_dir, path) if FileSystems.get_scheme(base_dir) \
            else os.path.normpath(os.path.join(base_dir, path))  # one spelling per file
    problem = unreachable(path)   # a symlink loop or a name too long is said to be one
    if problem:
        return problem
    if not FileSystems.exists(path):
        return reasons.PATH_NOT_FOUND, f"no such file: {path}"
    what = _not_a_regular_file(path)
    if what:
        return reasons.NOT_A_FILE, f"{path} is {what}"
    return ImageRef(path=path, image_id=image_id)


def _same_image_id(ref: ImageRef, kept: ImageRef) -> dict:
    return dict(reason=reasons.DUPLICATE_IMAGE_ID, item_id=ref.path,
                detail=f"image id {kept.image_id!r} already names {kept.path}")


# ---------------------------------------------------------------------------- hashing

class HashAndDedupe(beam.PTransform):
    """ImageRef -> ImageRef with content_sha256 set, one per distinct content (main),
    and image-level Rejects (unreadable_image: the bytes cannot be read; too_many_pixels:
    the header says width x height > `max_pixels`; duplicate_image).

    Whether an image decodes is decided by the decoder (transforms/image/decode.py, run
    by the encoder); here only its header is read, so the limit holds before any stage
    decodes, cached embeddings included."""

    def __init__(self, max_pixels: int = DEFAULT_MAX_PIXELS):
        super().__init__()
        self._max_pixels = max_pixels

    def expand(self, refs):
        hashed = refs | "Hash" >> stage_pardo(_Hash(self._max_pixels))
        kept = hashed[MAIN] | "Smallest id per content" >> KeepFirst(
            STAGE, "image", key=lambda ref: ref.content_sha256,
            order=lambda ref: (ref.image_id, ref.path), why=_same_content)
        rejects = (hashed[REJECTS], kept[REJECTS]) | "Image rejects" >> beam.Flatten()
        return {MAIN: kept[MAIN], REJECTS: rejects}


class _Hash(StageFn):
    stage, level = STAGE, "image"
    counts_out = False  # out once its content is its own (the KeepFirst by content)

    def __init__(self, max_pixels: int):
        self._max_pixels = max_pixels

    def judge(self, ref: ImageRef):
        try:
            sha = content_sha256(ref.path)
            check_pixel_limit(ref.path, self._max_pixels)
        except ImageProblem as e:
            yield self.reject(e.reason, ref.image_id, detail=e.detail)
            return
        except Exception as e:  # noqa: BLE001 - vanished file, permission, I/O error ...
            yield self.reject(reasons.UNREADABLE_IMAGE, ref.image_id,
                              detail=f"{ref.path}: {describe_error(e)}")
            return
        yield dataclasses.replace(ref, content_sha256=sha)


def check_pixel_limit(path: str, max_pixels: int) -> None:
    """Raises ImageProblem(too_many_pixels) when the image's header gives more than
    `max_pixels` pixels; reads the header only. A header that cannot be read is left to
    the decoder, which rejects the file as unreadable_image with its own detail."""
    with FileSystems.open(path, compression_type="uncompressed") as f:
        try:
            read_header(f, path, max_pixels)
        except ImageProblem as e:
            if e.reason == reasons.TOO_MANY_PIXELS:
                raise


def _same_content(ref: ImageRef, kept: ImageRef) -> dict:
    return dict(reason=reasons.DUPLICATE_IMAGE, item_id=ref.image_id,
                detail=f"same bytes (sha256 {kept.content_sha256[:16]}...) as kept image "
                       f"{kept.image_id}")
