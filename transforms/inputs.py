"""Reading the video manifest: JSON Lines, one video per line.

    {"path": "...", "source": "msr-vtt", "video_id": "...", "split": "train|valid|test"}

Every line becomes a VideoRef or a Reject with a reason; a relative path is taken
relative to the manifest's folder. Two lines whose (source, video_id) give the same safe
names would produce the same set names, so only the one with the smallest path is kept.
"""
from __future__ import annotations

import os

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from schemas.names import safe_name
from schemas.records import SPLITS, Reject, VideoRef
from transforms.lines import parse_json_object
from transforms.stage import MAIN, REJECTS, StageCounts

REQUIRED_FIELDS = ("path", "source", "video_id", "split")


class ReadVideoManifest(beam.PTransform):
    """manifest path -> VideoRef (main) and line-level Rejects."""

    def __init__(self, manifest_path: str):
        super().__init__()
        self._path = manifest_path

    def expand(self, pbegin):
        base_dir = os.path.dirname(self._path)
        parsed = (
            pbegin
            | "Read lines" >> beam.io.ReadFromText(self._path)
            | "Parse lines" >> beam.ParDo(_ParseLine(base_dir)).with_outputs(REJECTS, main=MAIN))
        unique = (
            parsed[MAIN]
            | "Key by set-name prefix" >> beam.Map(
                lambda v: ((safe_name(v.source), safe_name(v.video_id)), v))
            | "Group duplicates" >> beam.GroupByKey()
            | "Keep first" >> beam.ParDo(_KeepFirst()).with_outputs(REJECTS, main=MAIN))
        rejects = (parsed[REJECTS], unique[REJECTS]) | "Manifest rejects" >> beam.Flatten()
        return {MAIN: unique[MAIN], REJECTS: rejects}


class _ParseLine(beam.DoFn):
    def __init__(self, base_dir: str):
        self._base_dir = base_dir
        self._counts = StageCounts("manifest")

    def process(self, line: str):
        if line.strip():  # blank lines are layout, not items
            yield self._judge(line)

    def _judge(self, line: str):
        self._counts.seen(level="line")
        parsed = parse_manifest_line(line, self._base_dir)
        if isinstance(parsed, VideoRef):
            return self._counts.passed(parsed, level="line")
        reason, detail = parsed
        return self._counts.rejected(Reject(stage="manifest", level="line", reason=reason,
                                            item_id=line.strip()[:200], detail=detail))


def parse_record(line: str, required_fields):
    """One JSON Lines manifest line as a dict whose `required_fields` are non-empty
    strings, or (reason code, detail) saying what is wrong with it (transforms.lines)."""
    return parse_json_object(line, required_fields)


def parse_manifest_line(line: str, base_dir: str):
    """A VideoRef, or (reason code, detail) saying what is wrong with the line."""
    record = parse_record(line, REQUIRED_FIELDS)
    if isinstance(record, tuple):
        return record
    if record["split"] not in SPLITS:
        return reasons.BAD_FIELD, f"split {record['split']!r} is not one of {', '.join(SPLITS)}"
    for name in ("source", "video_id"):
        try:
            safe_name(record[name])
        except ValueError as e:
            return reasons.BAD_FIELD, f"{name}: {e}"
    path = record["path"]
    if not FileSystems.get_scheme(path) and not os.path.isabs(path):
        path = os.path.join(base_dir, path)
    if not FileSystems.exists(path):
        return reasons.PATH_NOT_FOUND, f"no such file: {path}"
    return VideoRef(path=path, source=record["source"], video_id=record["video_id"],
                    split=record["split"])


class _KeepFirst(beam.DoFn):
    def __init__(self):
        self._counts = StageCounts("manifest")

    def process(self, keyed):
        _, videos = keyed
        first, *duplicates = sorted(videos, key=lambda v: v.path)
        yield first
        for video in duplicates:
            # The line passed parsing, so it leaves the line level as a duplicate.
            self._counts.count_out(-1, level="line")
            yield self._counts.rejected(Reject(
                stage="manifest", level="line", reason=reasons.DUPLICATE_VIDEO,
                item_id=video.path, source=video.source, video_id=video.video_id,
                split=video.split, detail=f"same source and video_id as {first.path}"))
