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
one image per distinct content.

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
from schemas.rejects import Reject
from transforms.core.hashing import content_sha256
from transforms.core.stage import MAIN, REJECTS, StageCounts
from transforms.image.decode import DEFAULT_MAX_PIXELS, ImageProblem, describe_error, read_header
from transforms.io.lines import ReadNumberedLines, SourceLine, parse_json_object

STAGE = "images"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
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
                      | "Parse lines" >> beam.ParDo(_ParseLine(base_dir)).with_outputs(REJECTS, main=MAIN))
        else:
            pattern = FileSystems.join(self._source.rstrip("/"), "**")
            parsed = (pbegin
                      | "Match files" >> fileio.MatchFiles(
                          pattern, empty_match_treatment=fileio.EmptyMatchTreatment.ALLOW)
                      | "Images only" >> beam.Filter(lambda m: m.path.lower().endswith(IMAGE_SUFFIXES))
                      | "Name files" >> beam.ParDo(_NameFile()).with_outputs(REJECTS, main=MAIN))
        # Two files can give one id ("x.jpg", "x.png"; a line repeating an id): one id, one image.
        unique = (parsed[MAIN]
                  | "Key by id" >> beam.Map(lambda ref: (ref.image_id, ref))
                  | "Group ids" >> beam.GroupByKey()
                  | "Smallest path per id" >> beam.ParDo(_KeepSmallestPath()).with_outputs(REJECTS, main=MAIN))
        rejects = (parsed[REJECTS], unique[REJECTS]) | "Entry rejects" >> beam.Flatten()
        return {MAIN: unique[MAIN], REJECTS: rejects}


def _entry_reject(reason: str, item_id: str, detail: str, line: Optional[SourceLine] = None) -> Reject:
    where = {"file": line.path, "line": line.number} if line is not None else {}
    return Reject(stage=STAGE, level="entry", reason=reason, item_id=item_id[:200], detail=detail,
                  **where)


def _not_a_regular_file(path: str) -> Optional[str]:
    """What a local path is when it exists but is not a regular file ("a folder", "not a
    regular file"); None for a regular file, a missing one, or a remote object."""
    if FileSystems.get_scheme(path) or not os.path.exists(path) or os.path.isfile(path):
        return None
    return "a folder" if os.path.isdir(path) else "not a regular file (a pipe, socket or device)"


class _NameFile(beam.DoFn):
    def __init__(self):
        self._counts = StageCounts(STAGE)

    def process(self, metadata):
        self._counts.seen(level="entry")
        what = _not_a_regular_file(metadata.path)
        if what:
            return [self._counts.rejected(_entry_reject(reasons.NOT_A_FILE, metadata.path,
                                                        f"{metadata.path} is {what}"))]
        stem = posixpath.splitext(posixpath.basename(metadata.path.replace("\\", "/")))[0]
        try:
            image_id = safe_name(stem)
        except ValueError as e:
            return [self._counts.rejected(_entry_reject(reasons.BAD_FIELD, metadata.path, f"file name: {e}"))]
        return [self._counts.passed(ImageRef(path=metadata.path, image_id=image_id), level="entry")]


class _ParseLine(beam.DoFn):
    def __init__(self, base_dir: str):
        self._base_dir = base_dir
        self._counts = StageCounts(STAGE)

    def process(self, line: SourceLine):
        self._counts.seen(level="entry")   # ReadNumberedLines gives no blank lines
        parsed = parse_image_line(line, self._base_dir)
        if isinstance(parsed, ImageRef):
            return [self._counts.passed(parsed, level="entry")]
        reason, detail = parsed
        return [self._counts.rejected(_entry_reject(reason, line.text.strip() or line.where,
                                                    detail, line))]


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
    if not FileSystems.exists(path):
        return reasons.PATH_NOT_FOUND, f"no such file: {path}"
    what = _not_a_regular_file(path)
    if what:
        return reasons.NOT_A_FILE, f"{path} is {what}"
    return ImageRef(path=path, image_id=image_id)


class _KeepSmallestPath(beam.DoFn):
    def __init__(self):
        self._counts = StageCounts(STAGE)

    def process(self, keyed):
        image_id, refs = keyed
        first, *clashes = sorted(refs, key=lambda r: r.path)
        yield first
        for ref in clashes:
            # The entry was counted out when it parsed; it leaves as a clash instead.
            self._counts.count_out(-1, level="entry")
            yield self._counts.rejected(_entry_reject(
                reasons.DUPLICATE_IMAGE_ID, ref.path, f"image id {image_id!r} already names {first.path}"))


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
        hashed = refs | "Hash" >> beam.ParDo(_Hash(self._max_pixels)).with_outputs(REJECTS, main=MAIN)
        kept = (hashed[MAIN]
                | "Key by content" >> beam.Map(lambda ref: (ref.content_sha256, ref))
                | "Group contents" >> beam.GroupByKey()
                | "Smallest id per content" >> beam.ParDo(_KeepSmallestId()).with_outputs(REJECTS, main=MAIN))
        rejects = (hashed[REJECTS], kept[REJECTS]) | "Image rejects" >> beam.Flatten()
        return {MAIN: kept[MAIN], REJECTS: rejects}


class _Hash(beam.DoFn):
    def __init__(self, max_pixels: int):
        self._max_pixels = max_pixels
        self._counts = StageCounts(STAGE)

    def process(self, ref: ImageRef):
        self._counts.seen(level="image")
        try:
            sha = content_sha256(ref.path)
            check_pixel_limit(ref.path, self._max_pixels)
        except ImageProblem as e:
            return [self._reject(ref, e.reason, e.detail)]
        except Exception as e:  # noqa: BLE001 - vanished file, permission, I/O error ...
            return [self._reject(ref, reasons.UNREADABLE_IMAGE, f"{ref.path}: {describe_error(e)}")]
        return [dataclasses.replace(ref, content_sha256=sha)]

    def _reject(self, ref: ImageRef, reason: str, detail: str) -> Reject:
        return self._counts.rejected(Reject(stage=STAGE, level="image", reason=reason,
                                            item_id=ref.image_id, detail=detail))


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


class _KeepSmallestId(beam.DoFn):
    def __init__(self):
        self._counts = StageCounts(STAGE)

    def process(self, keyed):
        sha, refs = keyed
        first, *duplicates = sorted(refs, key=lambda r: (r.image_id, r.path))
        yield self._counts.passed(first, level="image")
        for ref in duplicates:
            yield self._counts.rejected(Reject(
                stage=STAGE, level="image", reason=reasons.DUPLICATE_IMAGE, item_id=ref.image_id,
                detail=f"same bytes (sha256 {sha[:16]}...) as kept image {first.image_id}"))
