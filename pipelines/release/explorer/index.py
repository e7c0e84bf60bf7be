"""The search index of one release explorer view: a few columns of every row, in chunks.

The page searches, filters and sorts a table without loading its cards: it loads the
columns a question needs, each as scripts of CHUNK_ROWS rows,

    data/<view>/index/<column number>/<chunk>.js    EXPLORER.data(id, values)

row i of the view being the i-th value over the chunks in order (the cards' order). A
column is text (searched; a facet when it has at most FACET_MAX distinct values, each
on two rows or more on average, and is no prose or key) or a number (ranges and sorting;
also a facet when it holds at most INT_FACET_MAX distinct integers: a label, a count of
agreeing votes). Rows without a value hold null; a chunk
where a column has no value at all is not written (`chunks` lists those that are). Text
repeated within a chunk is written once: {"v": [distinct values], "c": [code per row]}.
What the page needs before loading any column (names, kinds, each facet's values with
their counts, each number's range) is the meta that `close()` returns.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Callable, Dict, List, Optional

CHUNK_ROWS = 20_000
FACET_MAX = 100          # distinct texts for a facet (VSR's 71 relations, COCO's 80 categories)
INT_FACET_MAX = 20       # distinct integers for a facet


class ColumnIndex:
    """Collects the index columns row by row and writes each chunk when it is full, so
    memory holds one chunk. `write(rel_id, values)` writes one data script."""

    def __init__(self, write: Callable[[str, object], None], path: str, *,
                 no_facet=(), chunk_rows: Optional[int] = None):
        self._write, self._path = write, path
        self._chunk_rows = chunk_rows or CHUNK_ROWS
        self._no_facet = set(no_facet)
        self._columns: Dict[str, "_Column"] = {}
        self._chunk: Dict[str, list] = {}
        self._rows_in_chunk = 0
        self._chunks_written = 0
        self.rows = 0

    def add(self, values: Dict[str, object]) -> None:
        """One row's values (a missing name is null for this row)."""
        present = {}
        for name, value in values.items():
            value = _index_value(value)
            if value is None:
                continue
            present[name] = value
            column = self._columns.get(name)
            if column is None:
                column = self._columns[name] = _Column(name, len(self._columns),
                                                       name in self._no_facet)
            column.see(value)
            if name not in self._chunk:   # first seen in this chunk: null for the rows before
                self._chunk[name] = [None] * self._rows_in_chunk
        for name, cells in self._chunk.items():
            cells.append(present.get(name))
        self._rows_in_chunk += 1
        self.rows += 1
        if self._rows_in_chunk == self._chunk_rows:
            self._flush()

    def close(self) -> dict:
        if self._rows_in_chunk:
            self._flush()
        return {"rows": self.rows, "chunk_rows": self._chunk_rows,
                "columns": [c.meta(self.rows) for c in sorted(self._columns.values(),
                                                              key=lambda c: c.number)]}

    def _flush(self) -> None:
        chunk = self._chunks_written
        for name, cells in sorted(self._chunk.items()):
            column = self._columns[name]
            column.chunks.append(chunk)
            self._write(f"{self._path}/{column.number}/{chunk}", _encode(cells))
        self._chunk = {}
        self._rows_in_chunk = 0
        self._chunks_written += 1


class _Column:
    def __init__(self, name: str, number: int, no_facet: bool):
        self.name, self.number = name, number
        self.kind: Optional[str] = None
        self.facet: Optional[Counter] = None if no_facet else Counter()
        self.low = self.high = None
        self.integers = True
        self.chunks: List[int] = []

    def see(self, value) -> None:
        kind = "number" if isinstance(value, (int, float)) else "text"
        if self.kind is None:
            self.kind = kind
        elif self.kind != kind:   # a column of mixed types (a reject figure): text
            self.kind = "text"
        if kind == "number":
            self.low = value if self.low is None else min(self.low, value)
            self.high = value if self.high is None else max(self.high, value)
            self.integers = self.integers and isinstance(value, int)
        if self.facet is not None:
            self.facet[value] += 1
            if len(self.facet) > FACET_MAX:
                self.facet = None

    def meta(self, rows: int) -> dict:
        out = {"name": self.name, "n": self.number, "kind": self.kind, "chunks": self.chunks}
        if self.kind == "number" and isinstance(self.low, (int, float)):
            out["min"], out["max"] = self.low, self.high
        facet = self.facet
        if facet and self.kind == "number" and not (self.integers and len(facet) <= INT_FACET_MAX):
            facet = None
        if facet and self.kind == "text" and len(facet) * 2 > rows:   # mostly one row a value
            facet = None
        if facet and len(facet) > 1:
            values = sorted(facet, key=lambda v: (isinstance(v, str), v))
            out["facet"] = [[str(v), facet[v]] for v in values]
        return out


def _index_value(value):
    """A cell as the index holds it: text, a finite number rounded to six significant
    digits (enough to filter and sort by), or None."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(f"{value:.6g}") if value else 0.0
    return str(value)


def _encode(cells: list):
    """Text repeated within a chunk once: {"v": values, "c": codes}; else the plain list."""
    texts = [c for c in cells if isinstance(c, str)]
    if len(texts) != len(cells) - cells.count(None):
        return cells
    distinct = sorted(set(texts))
    if not texts or len(distinct) * 2 > len(cells):
        return cells
    code = {v: i for i, v in enumerate(distinct)}
    return {"v": distinct, "c": [None if c is None else code[c] for c in cells]}
