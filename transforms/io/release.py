"""Beam side of a release (every benchmark): tables, rejects and small reports.

Everything is written under a staging folder; the driver then counts, writes the
manifest and renames the folder into place (pipelines/release/):

    rows | WriteTable(staging, name, schema, to_row)   # parquet/<name>/
    rejects | WriteRejects(staging)                   # rejects/
    reports | WriteReport(staging, name)              # stats/<name>.json
"""
from __future__ import annotations

import json
import math
from typing import Tuple

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from schemas.layout import PARQUET_DIR, REJECTS_DIR
from schemas.rejects import REJECT_SCHEMA, reject_to_row

REJECTS_PREFIX = "rejects"


class WriteTable(beam.PTransform):
    """Records -> `<staging>/parquet/<table>/*.parquet`, one row per record.

    num_shards=0 lets the runner choose: the number of shards and the order of their
    rows are the runner's, and no release keeps them. The release's driver rewrites the
    shards one set per split, rows in the table's key order, a split's file count and
    each row's file set by the rows, never by the runner
    (`<split>-00000-of-00001.parquet`, pipelines/release/write/order.py and split_files.py), and
    writes the same rows as tf.train.Examples beside them
    (`tfrecord/<table>/<split>-00000-of-00001.tfrecord`). `schema`'s field metadata (descriptions, path and image
    columns: schemas/columns.py) travels with the files.

    A float a record does not have is written as its readers give it back, so that the
    records a Croissant reader (mlcroissant) gives equal the Parquet rows, NaN included
    (tests/release/cards/croissant_records.py): in a float column the schema declares nullable
    (a reference frame the public file leaves out) it is null, which mlcroissant, pandas'
    `to_dict` and Hugging Face give as None (a NaN there comes back None: not the row); a
    missing item of a float list (a score a search did not give, a frame no filter
    scored) is NaN, which is what every reader gives for one (mlcroissant and pandas read
    a float list as numbers: a null item comes back NaN). A column declared not nullable
    is written as given. A TFRecord float holds no null: a missing one is NaN there
    (schemas/tfexample.py).
    """

    def __init__(self, staging_dir: str, table: str, schema, to_row, num_shards: int = 0):
        super().__init__()
        self.staging_dir = staging_dir
        self.table = table
        self.schema, self._floats = schema, float_columns(schema)
        self.to_row = to_row
        self.num_shards = num_shards

    def expand(self, records):
        floats = self._floats
        rows = records | "ToRow" >> beam.Map(self.to_row)
        if floats[0] or floats[1]:
            rows = rows | "Missing floats" >> beam.Map(missing_floats, *floats)
        return rows | "Parquet" >> beam.io.WriteToParquet(
            FileSystems.join(self.staging_dir, PARQUET_DIR, self.table, self.table),
            self.schema, file_name_suffix=".parquet", num_shards=self.num_shards)


def float_columns(schema: pa.Schema) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(the nullable float columns, the float list columns) of a schema (WriteTable)."""
    scalars, lists = [], []
    for field in schema:
        kind = field.type.value_type if pa.types.is_list(field.type) or pa.types.is_large_list(field.type) else None
        if pa.types.is_floating(field.type) and field.nullable:
            scalars.append(field.name)
        elif kind is not None and pa.types.is_floating(kind):
            lists.append(field.name)
    return tuple(scalars), tuple(lists)


def missing_floats(row: dict, scalars: Tuple[str, ...], lists: Tuple[str, ...]) -> dict:
    """The row with a NaN of its float columns as None, and a None item of its float
    lists as NaN (WriteTable: as each is read back)."""
    out = dict(row)
    for name in scalars:
        value = out.get(name)
        out[name] = None if isinstance(value, float) and math.isnan(value) else value
    for name in lists:
        items = out.get(name)
        if items is not None:
            out[name] = [math.nan if v is None else v for v in items]
    return out


class WriteRejects(beam.PTransform):
    """Rejects -> `<staging>/rejects/*.parquet` (counts per reason: manifest.release_counts;
    rewritten in order by the driver, pipelines/release/write/order.py `rewrite_rejects`)."""

    def __init__(self, staging_dir: str, num_shards: int = 0):
        super().__init__()
        self.staging_dir = staging_dir
        self.num_shards = num_shards

    def expand(self, rejects):
        return (rejects
                | "ToRow" >> beam.Map(reject_to_row)
                | "Parquet" >> beam.io.WriteToParquet(
                    FileSystems.join(self.staging_dir, REJECTS_DIR, REJECTS_PREFIX),
                    REJECT_SCHEMA, file_name_suffix=".parquet", num_shards=self.num_shards))


class WriteReport(beam.PTransform):
    """A small PCollection (a few dicts) -> one JSON file `<staging>/stats/<name>.json`.

    For the figures a data card shows (agreement, language statistics, leakage): all
    elements are gathered into one list, so use it only for summaries, never for rows.
    An empty PCollection writes `[]`.
    """

    def __init__(self, staging_dir: str, name: str):
        super().__init__()
        self._path = FileSystems.join(staging_dir, "stats", f"{name}.json")

    def expand(self, reports):
        path = self._path

        def write(_, items):
            items = sorted(items, key=lambda x: json.dumps(x, sort_keys=True, default=str))
            with FileSystems.create(path, mime_type="application/json") as f:
                f.write(json.dumps(items, sort_keys=True, indent=1, default=str).encode("utf-8"))
            return path

        # One element (the impulse) reading the reports as a list: the file is written
        # exactly once, also for no reports. Cheaper than a global combine, which Beam
        # expands into 15 transforms and three fused stages per report.
        return (reports.pipeline | "Once" >> beam.Impulse()
                | "Write" >> beam.Map(write, beam.pvalue.AsList(reports)))
