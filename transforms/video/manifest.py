"""Reading the video manifest: JSON Lines, one video per line.

    {"path": "...", "source": "msr-vtt", "video_id": "...", "split": "train|valid|test"}

Every line becomes a VideoRef (naming its file and line) or a Reject that names them:

    lines -> parse (bad_encoding, bad_json, missing_field, bad_field, path_not_found,
                    not_a_file)
          -> content sha256 of the video (unreadable_video when the bytes cannot be read)
          -> one line per byte content: the same bytes twice are one video, whatever the
             ids (same_content_other_split across splits, duplicate_video_content within one)
          -> one line per set-name prefix (duplicate_video: same source and video_id)

Split leakage is judged on content, not on the ids: one file listed under two ids, or
one path listed in two splits, can only land in one split. Here the content is the
bytes, which costs a read and catches copies before anything is decoded; the same frames
in other bytes (one video muxed two ways) are found once the videos are decoded, on
their frames' digest (VideoRef.frames_sha256), with the same rule and reasons:
`same_content_reject` below. Of lines that clash, the one that comes first in the
manifest (by file, then line number: a stable key, never the order in which workers see
them) is kept, the same on every runner. A relative path is taken relative to the
manifest's folder.
"""
from __future__ import annotations

import dataclasses
import os
import posixpath
from typing import Union

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from schemas.names import safe_name
from schemas.records import SPLITS, VideoRef
from transforms.core.hashing import content_sha256
from transforms.core.stage import MAIN, REJECTS, KeepFirst, StageFn, stage_pardo
from transforms.io.lines import ReadNumberedLines, SourceLine, parse_json_object
from transforms.io.paths import unreachable

STAGE = "manifest"
REQUIRED_FIELDS = ("path", "source", "video_id", "split")


class ReadVideoManifest(beam.PTransform):
    """manifest path (or glob) -> {MAIN: VideoRef with content_sha256, file and line,
    REJECTS: Rejects}.

    Counters (stage "manifest", level "line"): every non-blank line in; out once it
    survived every check; rejected by reason."""

    def __init__(self, manifest_path: str):
        super().__init__()
        self._path = manifest_path

    def expand(self, pbegin):
        lines = pbegin | "Read lines" >> ReadNumberedLines(self._path)
        parsed = lines | "Parse lines" >> stage_pardo(_ParseLine())
        hashed = parsed[MAIN] | "Hash videos" >> stage_pardo(_HashVideo())
        by_content = hashed[MAIN] | "One line per content" >> KeepFirst(
            STAGE, "line", key=lambda video: video.content_sha256,
            order=lambda video: video.listed_order, counts_out=False,
            why=lambda later, kept: same_content_reject(later, kept, by_frames=False))
        videos = by_content[MAIN] | "One line per name" >> KeepFirst(
            STAGE, "line", order=lambda video: video.listed_order, why=_same_name,
            key=lambda video: (safe_name(video.source), safe_name(video.video_id)))
        rejects = ((parsed[REJECTS], hashed[REJECTS], by_content[REJECTS], videos[REJECTS])
                   | "Manifest rejects" >> beam.Flatten())
        return {MAIN: videos[MAIN], REJECTS: rejects}


def parse_manifest_line(line: Union[SourceLine, str], base_dir: str):
    """A VideoRef (without its content hash), or (reason code, detail) saying what is
    wrong with the line."""
    record = parse_json_object(line, REQUIRED_FIELDS)
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
        path = (FileSystems.join(base_dir, path) if FileSystems.get_scheme(base_dir)
                else os.path.join(base_dir, path))
    problem = unreachable(path)   # a symlink loop or a name too long is said to be one
    if problem:
        return problem
    if not FileSystems.exists(path):
        return reasons.PATH_NOT_FOUND, f"no such file: {path}"
    if not FileSystems.get_scheme(path) and not os.path.isfile(path):
        # a folder (or a device, a pipe) would fail deep inside hashing or decoding
        kind = "a directory" if os.path.isdir(path) else "not a regular file"
        return reasons.NOT_A_FILE, f"{path} is {kind}"
    return VideoRef(path=path, source=record["source"], video_id=record["video_id"],
                    split=record["split"])


def _base_dir(manifest: str) -> str:
    if FileSystems.get_scheme(manifest):
        return posixpath.dirname(manifest)
    return os.path.dirname(manifest)


def video_reject(video: VideoRef, reason: str, detail: str) -> dict:
    """The fields of a Reject of the manifest line that lists this video."""
    return dict(reason=reason, item_id=video.path, source=video.source,
                video_id=video.video_id, split=video.split, detail=detail,
                file=video.file, line=video.line)


class _ParseLine(StageFn):
    stage, level = STAGE, "line"
    counts_out = False  # out once the line survived every check (the last KeepFirst)

    def judge(self, line: SourceLine):
        parsed = parse_manifest_line(line, _base_dir(line.path))
        if isinstance(parsed, VideoRef):
            yield dataclasses.replace(parsed, file=line.path, line=line.number)
            return
        reason, detail = parsed
        yield self.reject(reason, line.text.strip() or line.where, detail=detail,
                          file=line.path, line=line.number)


class _HashVideo(StageFn):
    """The video's content sha256: what byte copies are caught by, and what keys its
    cached shot lists (a benchmark's cache reuses it instead of hashing again)."""
    stage, level = STAGE, "line"
    counts_in = counts_out = False

    def judge(self, video: VideoRef):
        try:
            sha = content_sha256(video.path)
        except OSError as e:  # permissions, a file removed since the line was parsed
            yield self.reject(**video_reject(
                video, reasons.UNREADABLE_VIDEO,
                f"cannot read {video.path}: {e.strerror or type(e).__name__}"))
            return
        yield dataclasses.replace(video, content_sha256=sha)


def same_content_reject(later: VideoRef, kept: VideoRef, by_frames: bool) -> dict:
    """The reject of a manifest line whose video has the content of an earlier line's
    (`kept`): in another split it would put the same frames in two splits
    (same_content_other_split); in the same split it would publish them twice
    (duplicate_video_content). `by_frames`: found on the decoded frames' digest (the
    bytes differ), else on the bytes."""
    if by_frames:
        same = (f"same content by decoded frames (frames sha256 {kept.frames_sha256[:16]}; "
                f"the bytes differ) as {kept.where} ({kept.key}, {kept.split})")
    else:
        same = (f"same content (sha256 {kept.content_sha256[:16]}) as {kept.where} "
                f"({kept.key}, {kept.split})")
    if later.split != kept.split:
        return video_reject(later, reasons.SAME_CONTENT_OTHER_SPLIT,
                            f"{same}: one video in two splits would leak")
    return video_reject(later, reasons.DUPLICATE_VIDEO_CONTENT, same)


def _same_name(other: VideoRef, kept: VideoRef) -> dict:
    """Lines whose (source, video_id) give the same set names: the first is kept."""
    if (other.source, other.video_id) == (kept.source, kept.video_id):
        detail = f"same source and video_id as {kept.where}"
    else:  # a hash collision in safe_name, or an id spelling another's safe form
        detail = f"its set names would be those of {kept.where} ({kept.key})"
    return video_reject(other, reasons.DUPLICATE_VIDEO, detail)
