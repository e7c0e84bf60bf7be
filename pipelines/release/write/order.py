"""The order of a release's rows and the shards that hold them (every benchmark), so that
the same rows give the same bytes on any runner and with any number of workers.

Beam writes a table as shards whose number and row order are the runner's: one shard in
process, one per worker with two workers or on Flink, rows in the order the bundles ran.
The driver therefore rewrites what the run wrote (pipelines/release/write/split_files.py for the
tables, `rewrite_rejects` for rejects/):

- the rows of every file are in a declared order: the table's key
  (pipelines/release/write/tables.py), rejects/ by all of its columns;
- a part of n rows (a split; all of rejects/) is written as ceil(n / rows_per_shard)
  files, `rows_per_shard` being the table's declared rule (`Table.rows_per_shard`,
  default ROWS_PER_SHARD, IMAGE_ROWS_PER_SHARD for a table that embeds images): a count
  that follows the rows, never the runner;
- a row's file is chosen by a hash of its key (`shard_of`), not by the worker it came from.

On the way the rows are spilled into one bucket file per (part, shard) and each bucket is
then read back whole and sorted (`Buckets`): memory holds one shard, never the table.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from typing import Dict, Hashable, Iterable, List, Mapping, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas.layout import REJECTS_DIR
from transforms.io.files import open_parquet

ROWS_PER_SHARD = 100_000        # rows of a plain table per file
IMAGE_ROWS_PER_SHARD = 1_000    # ... of a table whose rows embed images (a few MB each)
BATCH_ROWS = 4096               # rows read from the run's shards at a time
REJECTS_PREFIX = "rejects"      # rejects/rejects-00000-of-00001.parquet
BUCKETS_DIR = "_buckets"        # "_": no Parquet reader takes it; gone when the rewrite ends


def shard_count(rows: int, rows_per_shard: int) -> int:
    """Files for `rows` rows: at least one (a part without rows has none to write)."""
    if rows_per_shard < 1:
        raise ValueError(f"rows_per_shard must be >= 1, got {rows_per_shard}")
    return max(1, -(-rows // rows_per_shard))


def shard_of(key: Sequence, shards: int) -> int:
    """The shard of the row whose key values are `key`: the same on every machine and run
    (sha256 of the values as JSON, not Python's salted hash())."""
    if shards == 1:
        return 0
    text = json.dumps([_plain(v) for v in key], ensure_ascii=False, default=str)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % shards


def _plain(value):
    return value.hex() if isinstance(value, bytes) else value


def sortable_columns(schema: pa.Schema) -> Tuple[str, ...]:
    """The columns a row can be ordered by when no key is declared: all but lists, maps and
    structs, in schema order."""
    return tuple(f.name for f in schema
                 if not (pa.types.is_nested(f.type) or pa.types.is_dictionary(f.type)))


def in_order(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """`table`'s rows ordered by the columns of `key` (nulls last; Arrow's sort is stable),
    in one chunk, so that slicing it gives the same batches whatever shards it came from."""
    if table.num_rows == 0:
        return table.combine_chunks()
    indices = pc.sort_indices(table, sort_keys=[(c, "ascending") for c in key])  # nulls last
    return table.take(indices).combine_chunks()


class Buckets:
    """Rows spilled into one Parquet file per (part, shard) below `folder`, then each
    bucket read back whole, in key order (`ordered`).

        buckets = Buckets(folder, schema, key, {part: shards, ...})
        buckets.add(part, batch)          # rows of one part; each goes to shard_of(its key)
        buckets.close()
        table = buckets.ordered(part, 0)  # that bucket's rows, sorted; its file removed
        buckets.remove()
    """

    def __init__(self, folder: str, schema: pa.Schema, key: Sequence[str],
                 shards: Mapping[Hashable, int]):
        self.folder, self.schema, self.key = folder, schema, tuple(key)
        self.shards = dict(shards)
        self._index = {part: i for i, part in enumerate(self.shards)}
        self._writers: Dict[Tuple[int, int], Tuple[object, pq.ParquetWriter]] = {}

    def _path(self, part, shard: int) -> str:
        return FileSystems.join(self.folder, f"{self._index[part]}-{shard}.parquet")

    def add(self, part, batch: pa.RecordBatch) -> None:
        shards = self.shards[part]
        if batch.num_rows == 0:
            return
        if shards == 1:
            self._write(part, 0, batch)
            return
        keys = zip(*(batch.column(c).to_pylist() for c in self.key))
        targets = pa.array([shard_of(k, shards) for k in keys], pa.int32())
        for shard in sorted(set(targets.to_pylist())):
            self._write(part, shard, batch.filter(pc.equal(targets, shard)))

    def _write(self, part, shard: int, batch: pa.RecordBatch) -> None:
        slot = (self._index[part], shard)
        if slot not in self._writers:
            out = FileSystems.create(self._path(part, shard), mime_type="application/octet-stream")
            self._writers[slot] = (out, pq.ParquetWriter(out, self.schema))
        self._writers[slot][1].write_batch(batch)

    def close(self) -> None:
        """Finish the bucket files (once; again does nothing)."""
        for out, writer in self._writers.values():
            if not out.closed:
                writer.close()
                out.close()

    def ordered(self, part, shard: int) -> pa.Table:
        """The rows of one bucket in key order (an empty table when no row went there)."""
        if (self._index[part], shard) not in self._writers:
            return self.schema.empty_table()
        path = self._path(part, shard)
        with open_parquet(path) as parquet:
            rows = parquet.read()
        FileSystems.delete([path])
        return in_order(rows, self.key)

    def remove(self) -> None:
        """Delete what is left of the buckets (all of them after a failure)."""
        self.close()
        if FileSystems.get_scheme(self.folder) is None:
            shutil.rmtree(self.folder, ignore_errors=True)
        elif self._writers:   # an object store: every object under the prefix
            FileSystems.delete([self.folder.rstrip("/") + "/"])


def parquet_files(folder: str) -> List[str]:
    """The `*.parquet` files directly in `folder`, sorted."""
    return sorted(m.path for m in FileSystems.match(
        [FileSystems.join(folder, "*.parquet")])[0].metadata_list)


def codec_of(path: str) -> str:
    """The compression of a Parquet file's first column chunk, as ParquetWriter names it:
    the rewrite keeps what the run chose."""
    with open_parquet(path) as parquet:
        codec = (parquet.metadata.row_group(0).column(0).compression
                 if parquet.metadata.num_row_groups else "UNCOMPRESSED")
    return "NONE" if codec == "UNCOMPRESSED" else codec


def rewrite_rejects(staging: str, rows_per_shard: int = ROWS_PER_SHARD) -> List[str]:
    """Rewrite `<staging>/rejects/*.parquet` (after relocate_rejects: paths relative, so
    the order is the same on every machine) as `rejects-0000j-of-0000n.parquet`, rows
    ordered by all their columns and each in the shard of its row's hash. Returns the
    names written."""
    folder = FileSystems.join(staging, REJECTS_DIR)
    sources = parquet_files(folder)
    if not sources:
        return []
    with open_parquet(sources[0]) as parquet:
        schema = parquet.schema_arrow
    compression = codec_of(sources[0])
    rows = sum(_num_rows(path) for path in sources)
    shards = shard_count(rows, rows_per_shard)
    buckets = Buckets(FileSystems.join(folder, BUCKETS_DIR), schema, sortable_columns(schema),
                      {REJECTS_PREFIX: shards})
    try:
        for batch in _batches(sources):
            buckets.add(REJECTS_PREFIX, batch)
        buckets.close()
        FileSystems.delete(sources)
        names = []
        for shard in range(shards):
            name = f"{REJECTS_PREFIX}-{shard:05d}-of-{shards:05d}.parquet"
            with FileSystems.create(FileSystems.join(folder, name),
                                    mime_type="application/octet-stream") as out, \
                    pq.ParquetWriter(out, schema, compression=compression) as writer:
                for batch in buckets.ordered(REJECTS_PREFIX, shard).to_batches(BATCH_ROWS):
                    writer.write_batch(batch)
            names.append(name)
    finally:
        buckets.remove()
    return names


def _num_rows(path: str) -> int:
    with open_parquet(path) as parquet:
        return parquet.metadata.num_rows


def _batches(sources: Iterable[str]):
    for path in sources:
        with open_parquet(path) as parquet:
            yield from parquet.iter_batches(batch_size=BATCH_ROWS)
