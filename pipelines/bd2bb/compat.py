"""The public BD2BB layout (github.com/sandropezzelle/bd2bb, data/*.csv): SWAG-style CSVs.

    id,sent1,sent2,ending0,...,ending4,end0type,...,end4type,label

`sent1` is the intention (the text after "If I"), `sent2` is empty, `ending<k>` the
candidate actions (after "I will") in shown order, `end<k>type` one of targ / lan / vis,
and `label` the position of the target. Files: BD2BB.csv (all samples), train.csv,
val.csv, test.csv and hard_unseen_test.csv; ids count from 1 over BD2BB.csv.
"""
from __future__ import annotations

import csv
import io
from typing import Dict, Iterable, List, TextIO

from pipelines.bd2bb.records import CANDIDATES, LANGUAGE, TARGET, VISION, Sample
from transforms.core.errors import InputError
from transforms.io.csv_out import CsvWriter as RowWriter

HEADER = (["id", "sent1", "sent2"] + [f"ending{k}" for k in range(CANDIDATES)]
          + [f"end{k}type" for k in range(CANDIDATES)] + ["label"])
FILES = {"all": "BD2BB.csv", "train": "train.csv", "val": "val.csv", "test": "test.csv",
         "hard": "hard_unseen_test.csv"}
TYPE_COUNTS = {TARGET: 1, LANGUAGE: 2, VISION: 2}


def to_row(compat_id: int, sample: Sample) -> Dict[str, object]:
    row = {"id": compat_id, "sent1": sample.datapoint.tuple.intention, "sent2": "",
           "label": sample.label}
    for k in range(CANDIDATES):
        row[f"ending{k}"] = sample.endings[k]
        row[f"end{k}type"] = sample.ending_types[k]
    return row


class CsvWriter:
    """A public-layout CSV written a row at a time (the header first), cells verbatim for
    the original loaders: an intention or action that a spreadsheet would run as a
    formula never gets here (inputs.py rejects it as formula_text; transforms/io/csv_out.py)."""

    def __init__(self, out: TextIO):
        self._writer = RowWriter(out, HEADER, verbatim=True)

    def write(self, row: Dict[str, object]) -> None:
        self._writer.row([row[c] for c in HEADER])


def csv_text(rows: Iterable[Dict[str, object]]) -> str:
    out = io.StringIO()
    writer = CsvWriter(out)
    for row in rows:
        writer.write(row)
    return out.getvalue()


def read_rows(text: str, name: str = "text") -> List[Dict[str, str]]:
    """The rows of a public-layout CSV; an InputError naming `name` when its header is
    not the public one."""
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames != HEADER:
        raise InputError(f"{name}: not a BD2BB CSV: header {reader.fieldnames}, "
                         f"expected {','.join(HEADER)}")
    return list(reader)


def read_file(path: str) -> List[Dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return read_rows(f.read(), path)


def problems(row: Dict[str, str]) -> List[str]:
    """What breaks the format's invariants: one targ, two lan, two vis, label = targ's
    position, five non-empty endings."""
    out = []
    types = [row[f"end{k}type"] for k in range(CANDIDATES)]
    for kind, n in TYPE_COUNTS.items():
        if types.count(kind) != n:
            out.append(f"id {row['id']}: {types.count(kind)} {kind} endings, expected {n}")
    if set(types) - set(TYPE_COUNTS):
        out.append(f"id {row['id']}: unknown ending types {sorted(set(types) - set(TYPE_COUNTS))}")
    try:
        label = int(row["label"])
    except ValueError:
        return out + [f"id {row['id']}: label {row['label']!r} is not an integer"]
    if not 0 <= label < CANDIDATES or types[label] != TARGET:
        out.append(f"id {row['id']}: label {label} is not the targ position")
    if any(not row[f"ending{k}"].strip() for k in range(CANDIDATES)):
        out.append(f"id {row['id']}: empty ending")
    return out
