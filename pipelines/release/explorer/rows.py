"""A release's tables read in batches for the release explorer, then given back in a
canonical order or looked up by key.

The explorer shows every row of a table in an order that does not depend on how the
runner sharded it (split, source, key), joins tables (FG's captions with their similar
sets) and maps image ids to files. Memory is bounded by a batch, not by the table: a
table is read BATCH_ROWS rows at a time (pyarrow's batch iteration), and the rows go
into a temporary SQLite database on disk, which sorts them (spilling to disk beyond its
page cache) and answers lookups by key through an index.

    with RowStore() as store:
        store.load("rows", batches_of_dicts, order=lambda r: (r["split"], r["key"]))
        for row in store.rows("rows"): ...        # in order; ties by the row's content
        store.get("rows", "dev-850-0-0")           # by key (load(..., key=...))
"""
from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

BATCH_ROWS = 2048          # rows per Parquet batch, at most ...
# ... and about this many bytes (uncompressed), whatever the rows weigh: a table with its
# images embedded in the rows (issue 26; ImageCoDe's sets carry ten JPEGs a row) would
# otherwise be read whole up to 2048 rows, hundreds of MB, and the Arrow allocator keeps
# what it once held, so a build's peak grew with its table.
BATCH_BYTES = 16 * 2**20
_CACHE_KIB = 16 * 1024     # SQLite's page cache; beyond it, sorting spills to disk


def parquet_files(folder: str) -> List[str]:
    """A table's Parquet files in name order (a missing folder: none)."""
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".parquet"))


def read_schema(folder: str) -> Optional[pa.Schema]:
    files = parquet_files(folder)
    return pq.read_schema(files[0]) if files else None


def read_batches(folder: str, columns: Optional[Sequence[str]] = None) -> Iterator[pa.RecordBatch]:
    """The table's rows as Arrow batches of at most BATCH_ROWS rows and about BATCH_BYTES,
    file by file; `columns` reads only those (the ones a file lacks are left out)."""
    for path in parquet_files(folder):
        # pre_buffer off: pyarrow would otherwise fetch the column chunks of row groups
        # ahead of the batches asked for, so a file's bytes are held whatever the batch
        parquet = pq.ParquetFile(path, pre_buffer=False)
        names = parquet.schema_arrow.names
        wanted = None if columns is None else [c for c in columns if c in names]
        yield from parquet.iter_batches(batch_size=_batch_rows(parquet.metadata, wanted),
                                        columns=wanted)


def _batch_rows(metadata: pq.FileMetaData, columns: Optional[Sequence[str]]) -> int:
    """Rows per batch for one file: BATCH_ROWS, fewer where its rows (of `columns`; None:
    all) weigh more than BATCH_BYTES / BATCH_ROWS on average (the footer's uncompressed
    sizes: nothing is read to know). Light tables keep BATCH_ROWS, so their batches, and
    what is summed per batch (stats.py), are as before."""
    rows = metadata.num_rows
    if not rows:
        return BATCH_ROWS
    size = 0
    for group in range(metadata.num_row_groups):
        chunks = metadata.row_group(group)
        for column in range(chunks.num_columns):
            chunk = chunks.column(column)
            if columns is None or chunk.path_in_schema.split(".")[0] in columns:
                size += chunk.total_uncompressed_size
    return max(1, min(BATCH_ROWS, BATCH_BYTES * rows // max(size, 1)))


def read_located_batches(folder: str) -> Iterator[Tuple[int, int, pa.RecordBatch]]:
    """read_batches of every column, each with where it is: (its file's number in
    parquet_files order, the number of its first row in that file)."""
    for number, path in enumerate(parquet_files(folder)):
        parquet = pq.ParquetFile(path, pre_buffer=False)   # as read_batches, for the same reason
        first = 0
        for batch in parquet.iter_batches(batch_size=_batch_rows(parquet.metadata, None)):
            yield number, first, batch
            first += batch.num_rows


def read_rows(folder: str, columns: Optional[Sequence[str]] = None) -> Iterator[List[dict]]:
    """read_batches as lists of dicts, one list per batch."""
    for batch in read_batches(folder, columns):
        yield batch.to_pylist()


class RowStore:
    """Named row sets in a temporary SQLite database (deleted on close)."""

    def __init__(self):
        self._dir = tempfile.TemporaryDirectory(prefix="explorer-rows-")
        self._db = sqlite3.connect(os.path.join(self._dir.name, "rows.sqlite"))
        for pragma in ("journal_mode=OFF", "synchronous=OFF", f"cache_size=-{_CACHE_KIB}",
                       "temp_store=FILE"):
            self._db.execute(f"PRAGMA {pragma}")
        self._orders = {}

    def __enter__(self) -> "RowStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()
        self._dir.cleanup()

    def load(self, name: str, batches: Iterable[List[dict]], *,
             order: Callable[[dict], tuple] = lambda row: (),
             key: Optional[Callable[[dict], str]] = None) -> int:
        """Store the rows of `batches` (lists of dicts) as set `name` (replacing one of the
        same name); `order` gives each row's sort tuple, `key` the key `get` finds it by.
        Returns the number of rows."""
        table = self._table(name)
        self._db.execute(f"DROP TABLE IF EXISTS {table}")
        width = None
        count = 0
        for rows in batches:
            values = []
            for row in rows:
                sort = tuple(order(row))
                if width is None:
                    width = len(sort)
                    columns = "".join(f"o{i}, " for i in range(width))
                    self._db.execute(f"CREATE TABLE {table} ({columns}k TEXT, row TEXT)")
                if len(sort) != width:
                    raise ValueError(f"row set {name}: sort tuples of different lengths")
                values.append(sort + (key(row) if key else None, _dumps(row)))
            if values:
                marks = ", ".join("?" * (width + 2))
                self._db.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
                count += len(values)
        if width is None:   # no rows: an empty set
            self._db.execute(f"CREATE TABLE {table} (k TEXT, row TEXT)")
            width = 0
        if key:
            self._db.execute(f"CREATE INDEX {table}_k ON {table} (k)")
        self._orders[name] = width
        self._db.commit()
        return count

    def rows(self, name: str) -> Iterator[dict]:
        """The rows of set `name` in order; rows with equal sort tuples by their content,
        so the order never depends on the order they were loaded in."""
        order = "".join(f"o{i}, " for i in range(self._orders[name]))
        cursor = self._db.execute(f"SELECT row FROM {self._table(name)} ORDER BY {order}row")
        while True:
            fetched = cursor.fetchmany(256)
            if not fetched:
                return
            for (text,) in fetched:
                yield json.loads(text)

    def get(self, name: str, key: str) -> Optional[dict]:
        """The row of set `name` with this key (of several, the first in order)."""
        if name not in self._orders:
            return None
        order = "".join(f"o{i}, " for i in range(self._orders[name]))
        found = self._db.execute(f"SELECT row FROM {self._table(name)} WHERE k = ? "
                                 f"ORDER BY {order}row LIMIT 1", (key,)).fetchone()
        return json.loads(found[0]) if found else None

    def get_all(self, name: str, key: str) -> List[dict]:
        """Every row of set `name` with this key, in order."""
        if name not in self._orders:
            return []
        order = "".join(f"o{i}, " for i in range(self._orders[name]))
        found = self._db.execute(f"SELECT row FROM {self._table(name)} WHERE k = ? "
                                 f"ORDER BY {order}row", (key,)).fetchall()
        return [json.loads(text) for (text,) in found]

    def __contains__(self, name: str) -> bool:
        return name in self._orders

    @staticmethod
    def _table(name: str) -> str:
        return "t_" + name.encode("utf-8").hex()


def _dumps(row: dict) -> str:
    # canonical (sorted keys): the text is also the tie-break of equal sort tuples
    return json.dumps(row, sort_keys=True, ensure_ascii=False, default=_plain)


def _plain(value):
    if isinstance(value, bytes):
        return value.hex()
    return str(value)
