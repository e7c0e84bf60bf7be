"""Reading a collection of still images (ImageCoDe §3.1 "Static Pictures": Open Images).

`ReadImageCollection(source)` takes either
  a folder     every *.jpg / *.jpeg / *.png below it (any depth, any letter case);
               image_id = the file's stem made safe (schemas.names.safe_name)
  a manifest   JSON Lines, one image per line: {"path": "...", "image_id": "..."};
               a relative path is taken relative to the manifest's folder
and gives ImageRefs. `HashAndDedupe()` then hashes each file's bytes (sha256, streamed
through Beam's FileSystems, so gs:// works too) and keeps one image per distinct content.

Both choices that drop something are by a stable key, never by arrival order: of the
entries that map to the same safe id, the smallest path stays; of byte-identical files,
the smallest image_id stays. Counters: stage "images", level "entry" (files found or
manifest lines) and level "image" (hashing and de-duplication).
"""
from __future__ import annotations

import dataclasses
import os
import posixpath

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from schemas.names import safe_name
from schemas.records import ImageRef, Reject
from transforms.hashing import content_sha256
from transforms.inputs import parse_record
from transforms.stage import MAIN, REJECTS, StageCounts

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
                      | "Read lines" >> beam.io.ReadFromText(self._source)
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


def _entry_reject(reason: str, item_id: str, detail: str) -> Reject:
    return Reject(stage=STAGE, level="entry", reason=reason, item_id=item_id[:200], detail=detail)


class _NameFile(beam.DoFn):
    def __init__(self):
        self._counts = StageCounts(STAGE)

    def process(self, metadata):
        self._counts.seen(level="entry")
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

    def process(self, line: str):
        if not line.strip():
            return []  # blank lines are layout, not items
        self._counts.seen(level="entry")
        parsed = parse_image_line(line, self._base_dir)
        if isinstance(parsed, ImageRef):
            return [self._counts.passed(parsed, level="entry")]
        reason, detail = parsed
        return [self._counts.rejected(_entry_reject(reason, line.strip(), detail))]


def parse_image_line(line: str, base_dir: str):
    """An ImageRef, or (reason code, detail) saying what is wrong with the line."""
    record = parse_record(line, REQUIRED_FIELDS)
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
    and image-level Rejects (unreadable_image, duplicate_image)."""

    def expand(self, refs):
        hashed = refs | "Hash" >> beam.ParDo(_Hash()).with_outputs(REJECTS, main=MAIN)
        kept = (hashed[MAIN]
                | "Key by content" >> beam.Map(lambda ref: (ref.content_sha256, ref))
                | "Group contents" >> beam.GroupByKey()
                | "Smallest id per content" >> beam.ParDo(_KeepSmallestId()).with_outputs(REJECTS, main=MAIN))
        rejects = (hashed[REJECTS], kept[REJECTS]) | "Image rejects" >> beam.Flatten()
        return {MAIN: kept[MAIN], REJECTS: rejects}


class _Hash(beam.DoFn):
    def __init__(self):
        self._counts = StageCounts(STAGE)

    def process(self, ref: ImageRef):
        self._counts.seen(level="image")
        try:
            sha = content_sha256(ref.path)
        except Exception as e:  # noqa: BLE001 - vanished file, permission, I/O error ...
            return [self._counts.rejected(Reject(stage=STAGE, level="image", reason=reasons.UNREADABLE_IMAGE,
                                                 item_id=ref.image_id, detail=f"{ref.path}: {str(e)[:200]}"))]
        return [dataclasses.replace(ref, content_sha256=sha)]


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
