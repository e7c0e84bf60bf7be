"""The one CSV writer of the project: every CSV file a release holds (the crowd task
files, BD2BB's review sheets and compat/ files) is written here, so that each is safe to
open in a spreadsheet.

    csv_record(values)                  one record, no line end
    csv_text(header, rows)              a header and the rows, "\n" line ends
    csv_text(header, rows, verbatim=True)

A text cell that begins like a formula (=, +, -, @, tab or carriage return, in any form
Unicode's NFKC makes one of them and behind invisible format characters:
transforms/io/free_text.py, OWASP's rule) gets a leading single quote, which a
spreadsheet shows as text and runs nothing; JSON Lines and Parquet beside the CSV keep
the text as it is. Numbers stay numbers (-3 is no formula).

`verbatim` is for a file whose original loaders read every cell as it is (BD2BB's
compat/*.csv: a quote would change the data); there the benchmark rejects such text at
ingest (`formula_text`), so a formula cell reaching the writer is a bug: ValueError.
"""
from __future__ import annotations

import csv
import io
from typing import Iterable, Sequence

from transforms.io.free_text import begins_like_formula, formula_start

NEUTRALISER = "'"


def safe_cell(value):
    """`value`, or a text that begins like a formula with a leading single quote."""
    if isinstance(value, str) and begins_like_formula(value):
        return NEUTRALISER + value
    return value


def verbatim_cell(value):
    """`value` as it is; ValueError for text a spreadsheet would run (see above)."""
    if isinstance(value, str) and begins_like_formula(value):
        raise ValueError(f"a CSV written verbatim got a cell beginning with {formula_start(value)[0]!r}: "
                         "its ingest must reject such text (formula_text)")
    return value


def csv_record(values: Iterable, verbatim: bool = False) -> str:
    """Cells as one CSV record (quoted where needed), without the line end."""
    cell = verbatim_cell if verbatim else safe_cell
    buf = io.StringIO()
    # csv quotes a cell holding a character of the line terminator: with "\r\n" a line
    # break of either kind inside a text stays inside its quoted cell
    csv.writer(buf, lineterminator="\r\n").writerow([cell(v) for v in values])
    return buf.getvalue()[:-2]


class CsvWriter:
    """A CSV written a row at a time to a text stream, the header first."""

    def __init__(self, out: io.TextIOBase, header: Sequence[str], verbatim: bool = False):
        self._out, self._verbatim = out, verbatim
        self.row(header)

    def row(self, values: Iterable) -> None:
        self._out.write(csv_record(values, self._verbatim) + "\n")


def csv_text(header: Sequence[str], rows: Iterable[Sequence], verbatim: bool = False) -> str:
    out = io.StringIO()
    writer = CsvWriter(out, header, verbatim)
    for values in rows:
        writer.row(values)
    return out.getvalue()
