"""Per-column statistics of a release table for the release explorer, read in batches.

For every column: its Arrow type, rows and missing values (null, and NaN for floats);
then by kind
    number   min, mean, max and a histogram (HISTOGRAM_BINS equal bins; one bin per value
             for integers over a narrow range)
    bool     how many true and false
    string   distinct values, the most frequent ones, empty strings, lengths
    list     lengths, and the statistics of its elements (numbers or strings)
Distinct values are counted exactly up to DISTINCT_CAP; beyond it the count says "more"
and no frequent values are given (they could not be exact). Memory is bounded by the
cap, not by the table. A histogram needs the range first: `TableStats.add` takes every
batch once, `add_second_pass` the batches of `second_pass_columns` again.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

HISTOGRAM_BINS = 20
DISTINCT_CAP = 10_000
TOP_VALUES = 8


class TableStats:
    def __init__(self, schema: pa.Schema):
        self._columns = {f.name: _accumulator(f.type) for f in schema}
        self._types = {f.name: str(f.type) for f in schema}
        self.rows = 0

    def add(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        for name, acc in self._columns.items():
            if name in batch.schema.names:
                acc.add(batch.column(name))

    @property
    def second_pass_columns(self) -> List[str]:
        return [n for n, acc in self._columns.items() if acc.needs_second_pass]

    def add_second_pass(self, batch: pa.RecordBatch) -> None:
        for name in self.second_pass_columns:
            if name in batch.schema.names:
                self._columns[name].add_histogram(batch.column(name))

    def result(self) -> List[dict]:
        return [dict({"name": name, "type": self._types[name], "rows": self.rows},
                     **acc.result()) for name, acc in self._columns.items()]


def _accumulator(kind: pa.DataType) -> "_Column":
    if pa.types.is_boolean(kind):
        return _Bools()
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return _Numbers(pa.types.is_integer(kind))
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _Strings()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _Lists(_accumulator(kind.value_type))
    return _Column()


class _Column:
    """Any type: only missing values are counted."""
    needs_second_pass = False

    def __init__(self):
        self.missing = 0

    def add(self, values: pa.Array) -> None:
        self.missing += values.null_count

    def add_histogram(self, values: pa.Array) -> None:
        pass

    def result(self) -> dict:
        return {"kind": "other", "missing": self.missing}


class _Numbers(_Column):
    def __init__(self, integer: bool):
        super().__init__()
        self.integer = integer
        self.count, self.total = 0, 0.0
        self.low: Optional[float] = None
        self.high: Optional[float] = None
        self.bins: Optional[np.ndarray] = None

    def _finite(self, values: pa.Array) -> np.ndarray:
        array = values.drop_null().to_numpy(zero_copy_only=False).astype(np.float64)
        return array[np.isfinite(array)]

    def add(self, values: pa.Array) -> None:
        finite = self._finite(values)
        self.missing += len(values) - len(finite)     # null, NaN (and infinity)
        if len(finite):
            self.count += len(finite)
            self.total += float(finite.sum())
            low, high = float(finite.min()), float(finite.max())
            self.low = low if self.low is None else min(self.low, low)
            self.high = high if self.high is None else max(self.high, high)

    @property
    def needs_second_pass(self) -> bool:
        return self.count > 0

    def edges(self) -> np.ndarray:
        if self.integer and self.high - self.low < HISTOGRAM_BINS:   # one bin per value
            return np.arange(self.low, self.high + 2) - 0.5
        if self.high == self.low:
            return np.array([self.low - 0.5, self.high + 0.5])
        return np.linspace(self.low, self.high, HISTOGRAM_BINS + 1)

    def add_histogram(self, values: pa.Array) -> None:
        counts, _ = np.histogram(self._finite(values), bins=self.edges())
        self.bins = counts if self.bins is None else self.bins + counts

    def result(self) -> dict:
        out = {"kind": "number", "missing": self.missing, "count": self.count}
        if self.count:
            out.update(min=_round(self.low), max=_round(self.high),
                       mean=_round(self.total / self.count))
            if self.bins is not None:
                edges = self.edges()
                out["histogram"] = {"edges": [_round(e) for e in edges],
                                    "counts": [int(c) for c in self.bins]}
        return out


class _Bools(_Column):
    def __init__(self):
        super().__init__()
        self.true = self.false = 0

    def add(self, values: pa.Array) -> None:
        super().add(values)
        true = pc.sum(values.cast(pa.int64())).as_py() or 0
        self.true += true
        self.false += len(values) - values.null_count - true

    def result(self) -> dict:
        return {"kind": "bool", "missing": self.missing, "true": self.true, "false": self.false}


class _Lengths:
    """min, max and mean of the lengths of a column's values (strings or lists), batch by
    batch."""

    def __init__(self):
        self.count = self.total = 0
        self.shortest: Optional[int] = None
        self.longest: Optional[int] = None

    def add(self, lengths: pa.Array) -> None:
        self.count += len(lengths)
        self.total += pc.sum(lengths).as_py() or 0
        low, high = (v.as_py() for v in pc.min_max(lengths).values())
        self.shortest = low if self.shortest is None else min(self.shortest, low)
        self.longest = high if self.longest is None else max(self.longest, high)

    def result(self) -> dict:
        return {"min": self.shortest, "max": self.longest, "mean": _round(self.total / self.count)}


class _Strings(_Column):
    def __init__(self):
        super().__init__()
        self.counts: Optional[Counter] = Counter()   # None once past DISTINCT_CAP
        self.empty = self.count = 0
        self.lengths = _Lengths()

    def add(self, values: pa.Array) -> None:
        super().add(values)
        present = values.drop_null()
        if not len(present):
            return
        self.count += len(present)
        lengths = pc.utf8_length(present)
        self.lengths.add(lengths)
        self.empty += pc.sum(pc.equal(lengths, 0).cast(pa.int64())).as_py()
        if self.counts is not None:
            counted = pc.value_counts(present)
            self.counts.update(dict(zip(counted.field("values").to_pylist(),
                                        counted.field("counts").to_pylist())))
            if len(self.counts) > DISTINCT_CAP:
                self.counts = None

    def result(self) -> dict:
        out = {"kind": "string", "missing": self.missing, "count": self.count, "empty": self.empty}
        if self.count:
            out["length"] = self.lengths.result()
        if self.counts is None:
            out["distinct"] = f"more than {DISTINCT_CAP:,}"
        else:
            out["distinct"] = len(self.counts)
            top = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_VALUES]
            if top and top[0][1] > 1:   # all unique: no value is more frequent
                out["top"] = [[value, count] for value, count in top]
        return out


class _Lists(_Column):
    def __init__(self, elements: _Column):
        super().__init__()
        self.elements = elements
        self.count = 0
        self.lengths = _Lengths()

    def add(self, values: pa.Array) -> None:
        super().add(values)
        present = values.drop_null()
        if not len(present):
            return
        self.count += len(present)
        self.lengths.add(pc.list_value_length(present))
        self.elements.add(pc.list_flatten(present))

    @property
    def needs_second_pass(self) -> bool:
        return self.elements.needs_second_pass

    def add_histogram(self, values: pa.Array) -> None:
        self.elements.add_histogram(pc.list_flatten(values.drop_null()))

    def result(self) -> dict:
        out = {"kind": "list", "missing": self.missing, "count": self.count,
               "elements": self.elements.result()}
        if self.count:
            out["length"] = self.lengths.result()
        return out


def _round(value: float) -> float:
    """Six significant digits: enough to read, and the same on every machine."""
    if value == 0 or not math.isfinite(value):
        return value
    return float(f"{value:.6g}")

