"""Crowd answer files (describer and retriever output): CSV with a header row, or JSON Lines.

Paid work sits in these files, so reading them must lose nothing quietly:

* A problem of the whole file (no such file, a required column missing, bytes that are
  not UTF-8, no rows at all) stops the build before any work: `check_answer_file`
  raises `InputError` naming the file, and the line and byte where that helps.
* A problem of one row rejects that row alone: `parse_file` yields an `AnswerRow` per
  row, with (reason, detail) set on a bad one and its file and line always known.
* A CSV quote that is opened and never closed (or closed many lines later) does not
  swallow the rows after it: that row alone is rejected as `runaway_quote`, naming the
  lines it ran over, and those lines are read again as rows of their own.
* Nothing is ever decoded with a replacement character: a line that is not UTF-8 is a
  `bad_encoding` reject, never U+FFFD in a release.

A Mechanical Turk batch results CSV, as downloaded, is read as the round's rows
(`Input.*` and `Answer.*` columns, rejected assignments rejected: transforms/crowd/mturk.py);
the header checks and the rows see the columns it offers. Label Studio's JSON export, as
downloaded (a `.json` file holding a JSON array), is read the same way: one answer row per
annotation, cancelled ones rejected (transforms/crowd/labelstudio.py). Both platforms say
who did the work: the round's worker column (`worker`) is theirs to fill, never the file's.

Both functions stream: they hold one row (at most MAX_QUOTED_LINES physical lines) at a
time, however large the file.

    check_answer_file("answers/*.csv", DESCRIPTION_COLUMNS, worker="worker")   # preflight, on the driver
    for row in parse_file(path, binary_stream, "csv", DESCRIPTION_COLUMNS, worker="worker"): ...
"""
from __future__ import annotations

import collections
import csv
import io
import itertools
import os
import re
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from transforms.core.errors import InputError
from transforms.crowd import labelstudio, mturk
from transforms.io.files import open_regular_file
from transforms.io.lines import (MISPLACED_BOM, iter_numbered_lines, parse_json_object, read_numbered_lines,
                                 without_bom)


# The longest a quoted CSV cell may run, in physical lines. A description with a line
# break or two is normal; a quote still open after this many lines is a runaway (and
# bounds what one row holds in memory).
MAX_QUOTED_LINES = 100

# The most characters a CSV answer cell may hold for Python's csv module to read it (its
# field_size_limit default): a longer cell is that row's reject, bad_field, naming its
# file and line (it was `malformed_row` "not CSV"). A cell read is held to the bound of
# every free text, MAX_TEXT_CHARS (16,384: too_long, answer_rows.py), in either format;
# the longest of the 18,896 public ImageCoDe descriptions has 710 characters.
MAX_CELL_CHARS = 131_072
_CSV_FIELD_LIMIT = "field larger than field limit"


@dataclass(frozen=True)
class AnswerRow:
    """One row of an answer file: `fields` (column -> value) or `error` (reason, detail)."""
    path: str
    line: int                                # where the row starts, 1-based
    fields: Optional[dict] = None
    error: Optional[Tuple[str, str]] = None
    rank: int = 0                            # its pattern's place in the answer key's list

    @property
    def row_id(self) -> Tuple[str, int]:
        """(file name, line): what rejects call the row."""
        return os.path.basename(self.path), self.line

    @property
    def order(self) -> Tuple[int, str, int, str]:
        """Which of two rows comes first (the one a duplicate gives way to): the file as the
        answer key lists it, then its name and the line; never arrival order."""
        return self.rank, os.path.basename(self.path), self.line, self.path


def file_format(path: str) -> str:
    """"csv" or "jsonl", by the extension of a path or a glob (".json": JSON Lines, or
    Label Studio's export, told apart by its first character when read)."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".csv":
        return "csv"
    if ext in (".jsonl", ".json"):
        return "jsonl"
    raise InputError(f"crowd output must end in .csv, .jsonl or .json: {path}")


# --- before any work: the whole file -------------------------------------------------

def check_answer_file(pattern: str, required_columns: Sequence[str], worker: str = "") -> List[str]:
    """The files that `pattern` (a path or a glob) names, once each is known to be usable;
    raises InputError naming the file otherwise. `worker`: the round's worker column, which
    a platform's file offers from its own record (MTurk's WorkerId, Label Studio's
    annotator: an export naming annotators by number only is refused).

    Usable means: UTF-8 throughout (a BOM is fine at the start, not on a later line, as
    in files joined with `cat`); a CSV's header row names every required column, once; a
    JSON Lines file has each required field on at least one line (a line that lacks it
    is that row's problem, `missing_field`, not the file's); and the pattern as a whole
    has at least one row. One streaming pass per file.
    """
    fmt = file_format(pattern)
    paths = _matching_files(pattern)
    rows = sum(_check_one_file(path, fmt, tuple(required_columns), worker) for path in paths)
    if rows == 0:
        what = paths[0] if len(paths) == 1 else f"{pattern} ({len(paths)} files)"
        raise InputError(f"{what}: no answer rows" + (" below the header" if fmt == "csv" else ""))
    return paths


def files_without_column(pattern: str, column: str) -> List[str]:
    """The files of `pattern` (checked by check_answer_file first) where no row can carry
    `column`: a CSV whose header lacks it, a JSON Lines file none of whose lines has it."""
    lacking = []
    fmt = file_format(pattern)
    for path in _matching_files(pattern):
        export = _labelstudio_export(path) if fmt == "jsonl" else None
        if export is not None:
            if column not in labelstudio.answer_columns(export):
                lacking.append(path)
            continue
        found = False
        for line in read_numbered_lines(path):
            if fmt == "csv":
                try:
                    found = column in _columns_offered([c.strip() for c in next(csv.reader([line.text]))])
                except csv.Error:
                    found = False
                break
            record = parse_json_object(line) if line.error is None else None
            if isinstance(record, dict) and column in record:
                found = True
                break
        if not found:
            lacking.append(path)
    return lacking


def _labelstudio_export(path: str) -> Optional[list]:
    """The tasks of Label Studio's JSON export at `path`, or None for JSON Lines."""
    with open_regular_file(path) as stream:
        head = stream.read(4096)
        if not labelstudio.is_export(head):
            return None
        return labelstudio.load_export(path, head + stream.read())


def _matching_files(pattern: str) -> List[str]:
    if "://" not in pattern and os.path.isdir(pattern):
        raise InputError(f"{pattern} is a folder: give a file or a glob such as {pattern}/*.csv")
    try:
        matches = FileSystems.match([pattern])[0].metadata_list
    except (BeamIOError, ValueError) as e:   # e.g. no filesystem for the scheme
        raise InputError(f"cannot list {pattern}: {e}") from None
    paths = sorted(m.path for m in matches if "://" in m.path or os.path.isfile(m.path))
    if not paths:
        glob = any(c in pattern for c in "*?[")
        raise InputError(f"no file matches {pattern}" if glob else f"no such file or folder: {pattern}")
    return paths


def _check_one_file(path: str, fmt: str, required: Tuple[str, ...], worker: str = "") -> int:
    """The number of non-blank lines holding rows (0 for a header-only CSV)."""
    export = _labelstudio_export(path) if fmt == "jsonl" else None
    if export is not None:
        missing = [c for c in required if c not in labelstudio.answer_columns(export, worker)]
        if export and missing:
            raise InputError(f"{path}: no task or result of this Label Studio export has the field(s) "
                             f"{', '.join(missing)} (required: {', '.join(required)})")
        unknown = labelstudio.annotator_problem(path, export) if worker else ""
        if unknown:
            raise InputError(unknown)
        return sum(len(labelstudio.annotations_of(t)) for t in export)
    header, rows, missing = None, 0, set(required)
    for line in read_numbered_lines(path):
        if line.error:   # answers after it would be lost: stop before work
            raise InputError(f"{line.where}: {line.error}" + ("" if line.error == MISPLACED_BOM else
                             "; answer files must be UTF-8 (re-export the file as UTF-8, e.g. "
                             "iconv -f <encoding> -t utf-8)"))
        if fmt == "csv" and header is None:
            header = _header(line.where, line.text, required, worker)
            continue
        rows += 1
        if fmt == "jsonl" and missing:   # stop parsing once every field has been seen
            record = parse_json_object(line)
            if isinstance(record, dict):
                missing -= record.keys()
    if fmt == "csv" and header is None:
        raise InputError(f"{path} is empty: it has no header row ({', '.join(required)})")
    if fmt == "jsonl" and rows and missing:
        raise InputError(f"{path}: no line has the field(s) {', '.join(sorted(missing))} "
                         f"(required: {', '.join(required)})")
    return rows


def _header(where: str, text: str, required: Tuple[str, ...], worker: str = "") -> List[str]:
    try:
        columns = [c.strip() for c in next(csv.reader([text], strict=True))]
    except csv.Error as e:
        raise InputError(f"{where}: the header row cannot be read as CSV ({e})") from None
    columns = _columns_offered(columns, worker)
    missing = [c for c in required if c not in columns]
    if missing:
        raise InputError(f"{where}: the header lacks the column(s) {', '.join(missing)} "
                         f"(required: {', '.join(required)}; the header has: {', '.join(columns)})")
    twice = sorted({c for c in required if columns.count(c) > 1})
    if twice:
        raise InputError(f"{where}: the header names the column(s) {', '.join(twice)} more than once")
    return columns


def _columns_offered(header: List[str], worker: str = "") -> List[str]:
    """The columns the rows of a CSV with this header offer: a platform's export names
    them its own way (Mechanical Turk: Input.<col>, Answer.<field>, the worker WorkerId)."""
    return mturk.answer_columns(header, worker) if mturk.is_results_header(header) else header


# --- row by row ------------------------------------------------------------------------

def parse_file(path: str, stream, fmt: str, required_columns: Sequence[str] = (),
               worker: str = "") -> Iterator[AnswerRow]:
    """An AnswerRow per row of one file read from a binary `stream`.

    `required_columns` help tell a row from prose in a runaway CSV quote (see
    `_is_whole_row`); which rows lack them is decided later, with the sets at hand.
    `worker`: the round's worker column, filled by a platform's reader from its own record
    of who did the work ("" for a round that names no worker).
    """
    if fmt == "csv":   # a platform's export becomes rows of the round's own columns
        yield from mturk.answer_rows(_CsvRows(path, stream, tuple(required_columns)).rows(), worker)
        return
    head = stream.read(4096)
    if labelstudio.is_export(head):   # one JSON document: read whole (checked by preflight)
        try:
            tasks = labelstudio.load_export(path, head + stream.read())
        except InputError as e:
            yield AnswerRow(path, 1, None, (reasons.MALFORMED_ROW, str(e)))
            return
        yield from labelstudio.answer_rows(path, tasks, AnswerRow, worker)
        return
    stream = itertools.chain(io.BytesIO(head + stream.readline()), stream)
    for line in iter_numbered_lines(path, stream):
        record = parse_json_object(line)
        if isinstance(record, dict):
            yield AnswerRow(path, line.number, record)
        else:
            yield AnswerRow(path, line.number, None, record)


# (line number, text, why the bytes are not UTF-8); text of such a line is never published
Entry = Tuple[int, str, Optional[str]]


def _physical_lines(stream) -> Iterator[Entry]:
    """Every line, blank ones too (they may sit inside a quoted cell), strictly decoded."""
    for number, raw in enumerate(stream, start=1):
        raw, bom = without_bom(number, raw)
        try:
            yield number, raw.decode("utf-8"), bom
        except UnicodeDecodeError as e:
            # Read as Latin-1 only so that the CSV parser still sees this line's quotes and
            # commas (ASCII in any encoding) where they are; a record holding this line is
            # rejected, so the text goes nowhere.
            yield (number, raw.decode("latin-1"),
                   bom or f"byte 0x{raw[e.start]:02x} at column {e.start + 1} is not UTF-8")


class _LineFeeder:
    """The lines csv.reader asks for, one record at a time.

    It remembers the lines of the record being read (`record`), can put lines back to be
    read again (after a runaway quote), stops a record that runs past MAX_QUOTED_LINES,
    and keeps an undecodable line that starts a record out of the CSV parser
    (`unreadable`). csv.reader asks for a line when a record starts and, within a
    record, only while a quoted cell is open, so a request while `record` is non-empty
    means "the quote is still open".
    """

    def __init__(self, entries: Iterator[Entry]):
        self._source = entries
        self._pending = collections.deque()
        self.record: List[Entry] = []
        self.unreadable: List[Entry] = []
        self.cut: Optional[str] = None   # "eof" / "limit": the record ended inside its quote

    def start_record(self) -> None:
        self.record, self.cut = [], None

    def put_back(self, entries: Sequence[Entry]) -> None:
        self._pending.extendleft(reversed(entries))

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if len(self.record) >= MAX_QUOTED_LINES:
            self.cut = "limit"
            raise StopIteration
        while True:
            try:
                entry = self._pending.popleft() if self._pending else next(self._source)
            except StopIteration:
                if self.record:
                    self.cut = "eof"
                raise
            if entry[2] is not None and not self.record:
                self.unreadable.append(entry)   # a row of its own: the caller rejects it
                continue
            self.record.append(entry)   # (undecodable inside an open quote: the caller rejects
            return entry[1]             # the record, or reads the line again after a runaway)


def _undecodable(lines: Sequence[Entry]) -> Optional[Entry]:
    return next((entry for entry in lines if entry[2] is not None), None)


# One physical line that is a complete, strictly quoted CSV record: each cell either
# unquoted without quotes, commas or line breaks, or quoted with quotes doubled.
_STRICT_RECORD = re.compile(r'(?:"(?:[^"]|"")*"|[^",\r\n]*)(?:,(?:"(?:[^"]|"")*"|[^",\r\n]*))*')


class _CsvRows:
    def __init__(self, path: str, stream, required: Tuple[str, ...]):
        self._path = path
        self._feeder = _LineFeeder(_physical_lines(stream))
        self._required = required
        self._header: Optional[List[str]] = None
        self._header_error: Optional[Tuple[str, str]] = None

    def _row(self, line: int, fields=None, error=None) -> AnswerRow:
        return AnswerRow(self._path, line, fields, error)

    def rows(self) -> Iterator[AnswerRow]:
        feeder = self._feeder
        reader = csv.reader(feeder)
        while True:
            feeder.start_record()
            parse_error = None
            try:
                record = next(reader)
            except StopIteration:
                record = None
            except csv.Error as e:
                record, parse_error = [], str(e)
                reader = csv.reader(feeder)   # a reader is not reused after an error
            yield from self._unreadable_lines()
            if record is None:
                return
            yield from self._record(record, feeder.record, parse_error)

    def _unreadable_lines(self) -> Iterator[AnswerRow]:
        for number, _, error in self._feeder.unreadable:
            if self._header is None and self._header_error is None:
                self._header_error = (reasons.BAD_ENCODING, f"the header (line {number}) is not "
                                      f"UTF-8 ({error}), so no row of this file can be read")
            else:
                yield self._row(number, error=(reasons.BAD_ENCODING, error))
        self._feeder.unreadable = []

    def _record(self, record: List[str], lines: List[Entry], parse_error: Optional[str]):
        if not lines:
            return
        start, end = lines[0][0], lines[-1][0]
        if parse_error is None and not any(cell.strip() for cell in record):
            return                                     # a blank line
        if self._header_error is not None:
            yield self._row(start, error=self._header_error)
            return
        if self._header is None:                       # preflight checked it; this is a fallback
            if parse_error is not None or self._feeder.cut is not None or _undecodable(lines):
                self._header_error = (reasons.MALFORMED_ROW, f"the header (line {start}) is not "
                                      f"UTF-8 CSV, so no row of this file can be read")
                self._feeder.put_back(lines[1:])       # each of them is rejected for that
            self._header = [cell.strip() for cell in record]
            return
        runaway = self._runaway(lines, parse_error)
        if runaway:
            self._feeder.put_back(lines[1:])           # read them again, as rows of their own
            yield self._row(start, error=(reasons.RUNAWAY_QUOTE, runaway))
            return
        where = f" (lines {start}-{end})" if end > start else ""
        bad = _undecodable(lines)
        if bad is not None:
            yield self._row(start, error=(reasons.BAD_ENCODING, f"line {bad[0]}: {bad[2]}"))
        elif self._feeder.cut is not None:             # the last line, its quote left open
            yield self._row(start, error=(reasons.MALFORMED_ROW,
                                          f"quote opened on line {start} is never closed"))
        elif parse_error is not None and parse_error.startswith(_CSV_FIELD_LIMIT):
            yield self._row(start, error=(reasons.BAD_FIELD, f"a cell of more than {MAX_CELL_CHARS:,} "
                                          f"characters{where}: the most an answer cell may hold"))
        elif parse_error is not None:
            yield self._row(start, error=(reasons.MALFORMED_ROW, f"not CSV: {parse_error}{where}"))
        elif len(record) != len(self._header):
            yield self._row(start, error=(reasons.MALFORMED_ROW,
                                          f"{len(record)} fields, header has {len(self._header)}{where}"))
        else:
            yield self._row(start, dict(zip(self._header, record)))

    def _runaway(self, lines: List[Entry], parse_error: Optional[str]) -> Optional[str]:
        """The reject detail when a record's opening quote ran over later rows, else None.

        The rule: a record that spans several physical lines is a runaway when its quote
        never closed (end of file, or still open after MAX_QUOTED_LINES), when the CSV
        parser gave up on it, or when any line it swallowed is on its own a whole row of
        this file (`_is_whole_row`). A legitimate multi-line cell passes: its inner lines
        are prose, and its last line carries the closing quote mid-cell (`...end.",w1`),
        which no strictly quoted row has. A prose line inside a quoted cell that happens
        to be a strictly quoted row with every required cell filled (say "a, b, c, d" in a
        four-column file) is read as a runaway; the detail names the lines to check.
        """
        if len(lines) < 2:
            return None
        start, end, cut = lines[0][0], lines[-1][0], self._feeder.cut
        swallowed = f"line {end}" if end == start + 1 else f"lines {start + 1}-{end}"
        then = f"swallowing {swallowed} (read again as rows of their own)"
        if cut == "eof":
            return f"quote opened on line {start} is never closed, {then}"
        if cut == "limit":
            return f"quote opened on line {start} is still open after {MAX_QUOTED_LINES} lines, {then}"
        if parse_error is not None:
            return f"quote opened on line {start} runs to line {end} ({parse_error}), {then}"
        if any(error is None and self._is_whole_row(text) for _, text, error in lines[1:]):
            return f"quote opened on line {start} runs to line {end}, {then}"
        return None

    def _is_whole_row(self, text: str) -> bool:
        """One physical line that is a complete row of this file: strictly quoted, with the
        header's number of fields and every required column filled."""
        text = text.rstrip("\r\n")
        if not _STRICT_RECORD.fullmatch(text):
            return False
        cells = next(csv.reader([text]))
        if len(cells) != len(self._header):
            return False
        columns = dict(zip(self._header, cells))
        return all(columns.get(c, "").strip() for c in self._required if c in columns)
