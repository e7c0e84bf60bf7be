"""ImageCoDe's release files beyond the generic writers (pipelines/release/write/):

    WriteFrameSets           the video_sets table (its schema and rows: tables.py)
    PublishCompatImages      each video set's frames moved into the public layout,
                             `compat/image-sets/<set>/img<n>.jpg`
    DescriptionRows          kept descriptions as rows of the descriptions table
    WritePublicAnnotations   compat/{train,valid}_data.json, compat/test_data_unlabeled.json

The static sets' images go to the same layout from static/release.py. Why two modules for
the public layout: compat.py is its format, pure functions (what the public files hold,
tested without Beam); this module writes the files, with Beam. One module for the two
would mix a format other loaders rely on with the staging, moves and retries of a build.
"""
from __future__ import annotations

import dataclasses
import os

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from pipelines.imagecode.compat import PUBLIC_FILES, public_file
from pipelines.imagecode.names import compat_image_path
from pipelines.imagecode.records import FrameSet
from pipelines.imagecode.tables import FRAMESET_SCHEMA, description_to_row, frameset_to_row
from transforms.io.files import make_dirs
from transforms.io.release import WriteTable

VIDEO_SETS = "video_sets"  # table of FrameSets: parquet/video_sets/train-00000-of-00004.parquet


class WriteFrameSets(WriteTable):
    """FrameSets (video sets) -> the `video_sets` table."""

    def __init__(self, staging_dir: str, num_shards: int = 0):
        super().__init__(staging_dir, VIDEO_SETS, FRAMESET_SCHEMA, frameset_to_row, num_shards)


class _PublishImages(beam.DoFn):
    """Move each staged JPEG of a set to its public path; emit the set without them."""

    def __init__(self, staging_dir: str):
        self.staging_dir = staging_dir
        self.published = Metrics.counter("release", "images_published")

    def _inside_staging(self, path: str) -> str:
        # Moving deletes the source: only ever move files this run wrote into staging.
        root = self.staging_dir.rstrip("/") + "/"
        if FileSystems.get_scheme(path) is None:
            root = os.path.abspath(root) + os.sep
            # A relative path is relative to staging, unless it already spells staging
            # out (a relative release root gives relative staged paths).
            if not os.path.isabs(path) and not os.path.abspath(path).startswith(root):
                path = os.path.join(root, path)
            path = os.path.abspath(path)
        if not path.startswith(root):
            raise ValueError(f"staged image outside the staging folder: {path}")
        return path

    def process(self, fs: FrameSet):
        n = len(fs.frame_indices)
        if len(fs.staged_images) != n or len(fs.image_paths) != n:
            raise ValueError(f"{fs.set_name}: {len(fs.staged_images)} staged images, "
                             f"{len(fs.image_paths)} image paths, {n} frames")
        if len(set(fs.frame_indices)) != n:  # two frames would land on one file
            raise ValueError(f"{fs.set_name}: repeated frame indices {fs.frame_indices}")
        set_dir_made = False
        for src, frame, rel in zip(fs.staged_images, fs.frame_indices, fs.image_paths):
            expected = compat_image_path(fs.set_name, frame)
            if rel != expected:  # the row must point where the image really is
                raise ValueError(f"{fs.set_name}: image path {rel!r}, expected {expected!r}")
            src = self._inside_staging(src)
            dst = FileSystems.join(self.staging_dir, *expected.split("/"))
            if not set_dir_made:
                make_dirs(FileSystems.split(dst)[0])
                set_dir_made = True
            if FileSystems.exists(src):
                FileSystems.rename([src], [dst])
                self.published.inc()
            elif not FileSystems.exists(dst):
                raise FileNotFoundError(f"{fs.set_name}: staged image missing: {src}")
            # else: moved by an earlier attempt of this bundle (retries must not fail)
        yield dataclasses.replace(fs, staged_images=[])


class PublishCompatImages(beam.PTransform):
    """FrameSets -> the same sets, their images moved to `compat/image-sets/<set>/img<n>.jpg`.

    `staged_images[i]` is the JPEG of `frame_indices[i]`, written by an earlier stage
    somewhere inside the staging folder (absolute, or relative to it); a staged file
    must belong to one set only, since it is moved, not copied.
    """

    def __init__(self, staging_dir: str):
        super().__init__()
        self.staging_dir = staging_dir

    def expand(self, framesets):
        return framesets | "Publish" >> beam.ParDo(_PublishImages(self.staging_dir))


class DescriptionRows(beam.DoFn):
    """KeptDescription -> a DESCRIPTION_SCHEMA row, with its spaCy token count (the
    rule-based tokenizer of the §4.2 statistics, loaded once per worker, on its first
    description: a build without descriptions never imports spaCy, ~2 CPU s)."""

    def setup(self):
        self._nlp = None

    def process(self, kept):
        from transforms.text.stats import tokenizer_nlp, words
        if self._nlp is None:
            self._nlp = tokenizer_nlp()
        yield description_to_row(kept, len(words(self._nlp(kept.text))))


class WritePublicAnnotations(beam.PTransform):
    """Kept descriptions -> the three public JSON files under `<staging>/compat/`
    (compat.py's layout). A JSON file is one object, so each split is grouped onto one
    worker (a split's text is a few MB even for the full benchmark).

    Elements need description_id, set_name, target_index, text and split attributes.
    Every split's file is written, empty ({}) when the split has no description.
    """

    def __init__(self, staging_dir: str):
        super().__init__()
        self._compat = FileSystems.join(staging_dir, "compat")

    def expand(self, descriptions):
        keyed = descriptions | "Key by split" >> beam.Map(
            lambda d: (d.split, (d.description_id, d.set_name, int(d.target_index), d.text)))
        every_split = (keyed.pipeline | "Splits" >> beam.Create([(s, None) for s in PUBLIC_FILES]))
        return ((keyed, every_split)
                | "Flatten" >> beam.Flatten()
                | "Group by split" >> beam.GroupByKey()
                | "Write" >> beam.MapTuple(self._write))

    def _write(self, split: str, rows) -> str:
        path = FileSystems.join(self._compat, PUBLIC_FILES[split])
        with FileSystems.create(path, mime_type="application/json") as f:
            f.write(public_file(split, (r for r in rows if r is not None)))
        return path
