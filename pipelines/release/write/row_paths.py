"""What the release makes of the paths in its tables and rejects (every benchmark), batch
by batch, as the driver writes each table's files per split (pipelines/release/write/split_files.py):

- a column of the build's input paths (schemas.columns `input_paths`: FG's pool images,
  NLVR2's image files, ImageCoDe's static-set sources) is written relative to the input
  root recorded in MANIFEST.json (pipelines/release/write/locations.py), never as the
  building machine's absolute paths;
- a column of images inside the release (schemas.columns `images`: ImageCoDe's
  `image_paths`, relative to the release folder) gets a column beside it holding those
  images as Hugging Face `Image` values: {"bytes": the file's bytes, "path": its path in
  the release}. `datasets` resolves an image path against the working directory, never
  against the dataset's folder, so a path alone decodes only when the user runs from the
  release folder; with the bytes inline, `load_dataset(<release>)` decodes the images
  from anywhere, and so does pandas or any Parquet reader. The JPEG files stay in
  compat/ for the original loaders: a release holds each image there and once more per
  table row that shows it (docs/loading.md: the images embedded in the rows);
- a reject's `file` is written relative to the input root, and its `item_id` and
  `detail` with every path in the release or the input root made relative
  (`relocate_rejects`): a reject names its file and line, never the building machine.
"""
from __future__ import annotations

import json
import os
import re
from typing import Dict, List, Optional

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from pipelines.release.write.locations import Relocate
from schemas.columns import DESCRIPTION, images_column, is_input_path
from schemas.layout import PARQUET_DIR, REJECTS_DIR
from transforms.io.files import open_parquet

BATCH_ROWS = 4096

# The storage of a Hugging Face `Image` (datasets.features.Image.pa_type).
IMAGE_TYPE = pa.struct([pa.field("bytes", pa.binary()), pa.field("path", pa.string())])


class MissingImage(RuntimeError):
    """A table names an image the release does not hold (a bug of the stage that wrote it)."""


class RowPaths:
    """Rewrites a table's record batches (see the module docstring). `schema` is the
    table as the pipeline declared it; `released_schema` what the release holds."""

    def __init__(self, schema: pa.Schema, release_dir: str, relocate: Relocate):
        self.schema = schema
        self.release_dir = release_dir
        self.relocate = relocate
        self.inputs = [f.name for f in schema if is_input_path(f)]
        self.images: Dict[str, str] = {f.name: images_column(f) for f in schema
                                       if images_column(f)}
        self.released_schema = self._released_schema()

    @property
    def changes_rows(self) -> bool:
        return bool(self.inputs or self.images)

    def _released_schema(self) -> pa.Schema:
        fields = []
        for field in self.schema:
            fields.append(field)
            if field.name in self.images:
                embedded = IMAGE_TYPE if not pa.types.is_list(field.type) else pa.list_(IMAGE_TYPE)
                fields.append(pa.field(self.images[field.name], embedded, nullable=False, metadata={
                    DESCRIPTION: (f"the images of `{field.name}`, in its order, as Hugging Face "
                                     "Image values: the file's bytes and its path in the release "
                                     "(they decode from any folder)").encode("utf-8"),
                    b"embeds": field.name.encode("utf-8")}))
        return pa.schema(fields, metadata=self.schema.metadata)

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if not self.changes_rows:
            return batch
        columns = {}
        for name in self.schema.names:
            column = batch.column(name)
            if name in self.inputs:
                column = pa.array(_map(column.to_pylist(), self.relocate.path),
                                  type=self.schema.field(name).type)
            columns[name] = column
            if name in self.images:
                embedded = self.released_schema.field(self.images[name]).type
                columns[self.images[name]] = pa.array(
                    _map(column.to_pylist(), self._image), type=embedded)
        return pa.RecordBatch.from_arrays([columns[n] for n in self.released_schema.names],
                                          schema=self.released_schema)

    def _image(self, path: str) -> dict:
        full = FileSystems.join(self.release_dir, path)
        try:
            with FileSystems.open(full, compression_type="uncompressed") as f:
                data = f.read()
        except (IOError, OSError) as e:
            raise MissingImage(f"a table names {path}, which the release does not hold: {e}") from None
        return {"bytes": data, "path": path}


def _map(values: List, fn):
    """`fn` over each value of a column of scalars or lists (None stays None)."""
    out: List[Optional[object]] = []
    for value in values:
        if value is None:
            out.append(None)
        elif isinstance(value, list):
            out.append([None if v is None else fn(v) for v in value])
        else:
            out.append(fn(value))
    return out


# --- what the input root must hold ----------------------------------------------------

def input_path_values(staging: str, table: str) -> List[str]:
    """Every value of the input-path columns of a table as the pipeline wrote it."""
    files = _parquet_files(FileSystems.join(staging, PARQUET_DIR, table))
    if not files:
        return []
    columns = [f.name for f in _schema(files[0]) if is_input_path(f)]
    return _values(files, columns)


def reject_paths(staging: str) -> List[str]:
    """The distinct input files the rejects name: their `file` column, and an `item_id`
    that is a path (an unreadable image, a video)."""
    files = _parquet_files(FileSystems.join(staging, REJECTS_DIR))
    named = {re.sub(r"(#.*|:\d+)$", "", v) for v in _values(files, ["item_id"]) if v.startswith("/")}
    return sorted(set(_values(files, ["file"])) | {p for p in named if os.path.exists(p)})


def _values(files: List[str], columns: List[str]) -> List[str]:
    out: List[str] = []
    if not columns:
        return out
    for path in files:
        with open_parquet(path) as parquet:
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns):
                for column in batch.columns:
                    for value in column.to_pylist():
                        if isinstance(value, list):
                            out.extend(v for v in value if v)
                        elif value:
                            out.append(value)
    return out


# --- reports ---------------------------------------------------------------------------

def relocate_reports(staging: str, relocate: Relocate) -> None:
    """Rewrite each `stats/*.json` report (transforms/io/release.py WriteReport) with the
    paths in its texts relative: a leakage example names its input line."""
    for path in sorted(m.path for match in FileSystems.match(
            [FileSystems.join(staging, "stats", "*.json")]) for m in match.metadata_list):
        with FileSystems.open(path, compression_type="uncompressed") as f:
            report = json.loads(f.read().decode("utf-8"))
        moved = relocate.texts(report)
        if moved != report:   # written as WriteReport writes it
            with FileSystems.create(path, mime_type="application/json") as f:
                f.write(json.dumps(moved, sort_keys=True, indent=1, default=str).encode("utf-8"))


# --- rejects ---------------------------------------------------------------------------

def relocate_rejects(staging: str, relocate: Relocate) -> None:
    """Rewrite each rejects/ shard with its paths relative (see the module docstring),
    batch by batch into a file beside it that then takes its name."""
    for path in _parquet_files(FileSystems.join(staging, REJECTS_DIR)):
        folder, name = FileSystems.split(path)
        moved = FileSystems.join(folder, f"_relocating-{name}")   # "_": no reader takes it
        with open_parquet(path) as parquet:
            codec = (parquet.metadata.row_group(0).column(0).compression
                     if parquet.metadata.num_row_groups else "UNCOMPRESSED")
            with FileSystems.create(moved, mime_type="application/octet-stream") as out, \
                    pq.ParquetWriter(out, parquet.schema_arrow,
                                     compression="NONE" if codec == "UNCOMPRESSED" else codec) as w:
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
                    w.write_batch(_relocated_rejects(batch, relocate))
        FileSystems.delete([path])
        FileSystems.rename([moved], [path])


def _relocated_rejects(batch: pa.RecordBatch, relocate: Relocate) -> pa.RecordBatch:
    """The batch with its item_id, detail and file relocated."""
    columns = []
    for name in batch.schema.names:
        column = batch.column(name)
        fn = relocate.path if name == "file" else relocate.text if name in ("item_id", "detail") else None
        if fn is not None:
            column = pa.array([fn(v) if v else v for v in column.to_pylist()], type=column.type)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _parquet_files(folder: str) -> List[str]:
    return sorted(m.path for m in FileSystems.match(
        [FileSystems.join(folder, "*.parquet")])[0].metadata_list)


def _schema(path: str) -> pa.Schema:
    with open_parquet(path) as parquet:
        return parquet.schema_arrow
