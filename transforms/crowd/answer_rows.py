"""Crowd answer files as a Beam stage: every row becomes a record or a line-level Reject
that names its file and line, and of the rows that share a key only the earliest stays.

    rows = p | ReadAnswerRows(paths, stage, columns, check, duplicate_reason, worker="worker", context=...)
    rows[MAIN]      # the records `check` built
    rows[REJECTS]   # bad rows (reason from parse_file, missing_field, or `check`'s),
                    # and duplicates (`duplicate_reason`)

Reading the files (whole-file checks, bad rows, runaway quotes) is answer_files.py; here
is what every crowd round does with the rows: counts each in (stage `stage`, level
"line"), rejects a row with an empty required column (missing_field) or a cell holding a
control character (control_character: transforms/io/free_text.py), hands the others to
the benchmark's `check`, and keeps the earliest row (file, line: never arrival order) of
each key (its pattern's place in `paths`, a file or glob or a list of them, then file
name and line: never arrival order). What a row means is the benchmark's: `check(row, context)` returns
(key, record) or a RowProblem. `context` is an optional side input (e.g. the sets in the
round, AsDict), `problem_fields(row, context)` the extra fields of a bad row's Reject
(split, source, ...), `duplicate_fields(record)` those of a duplicate's.

`placed(record, path, line)`, when given, puts where a record was read into it (a later
stage that judges it names that row in its rejects, so a requester's approvals can
find the assignment).

`worker` names the round's worker column: a platform's file (MTurk's results, Label
Studio's export) fills it from the platform's own record of who did the work, and a row
whose posted fields say otherwise is rejected (answer_files.py); a file of the project's
own columns gives it as written.

With `shown` (a Shown), a row is used only where its worker saw what this build shows
for its task (transforms/crowd/shown.py): the others are stale_answer rejects, checked
before duplicates are dropped (so a fresh second row stands in for a stale first one).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, NamedTuple, Optional, Sequence, Tuple, Union

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from schemas.tfexample import INT64_MAX, INT64_MIN
from transforms.core.stage import MAIN, REJECTS, KeepFirst, StageFn, stage_pardo
from transforms.crowd.answer_files import AnswerRow, file_format, parse_file
from transforms.crowd.shown import Answer, CheckShown, Evidence, carried
from transforms.io.free_text import text_problem
from transforms.io.strict_json import printable


_INTEGER = re.compile(r"-?[0-9]{1,19}")   # 19 digits: the widest an int64 can be


class RowProblem(NamedTuple):
    """Why a row is rejected: a reason code of the benchmark's vocabulary and a detail."""
    reason: str
    detail: str


def cell_text(row: dict, column: str) -> str:
    """A cell as stripped text ("" when absent): CSV and JSON Lines rows read alike."""
    value = row.get(column)
    return value.strip() if isinstance(value, str) else ("" if value is None else str(value).strip())


def whole_number(value) -> Optional[int]:
    """A cell (CSV text) or JSON value as an integer a release can hold, or None: an int,
    or ASCII digits with an optional "-". Never int() on what str.isdigit() alone lets
    through: "²" is a digit to it and a crash to int(), and 5,000 digits are refused by
    Python (over 4,300) and by every int64 column."""
    if isinstance(value, str):
        text = value.strip()
        if not _INTEGER.fullmatch(text):
            return None
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or not INT64_MIN <= value <= INT64_MAX:
        return None
    return value


def not_text(row: dict) -> Optional[RowProblem]:
    """control_character or too_long for the first text cell holding NUL or another
    control character, or more than MAX_TEXT_CHARS characters (transforms/io/free_text.py):
    whatever a column means, the row is no one's typing. A JSON Lines row was checked as
    it was decoded (strict_json); a CSV cell is here."""
    for column, value in row.items():
        if isinstance(value, str):
            problem = text_problem(f"column {printable(str(column), 60)!r}", value)
            if problem:
                return RowProblem(*problem)
    return None


def _no_fields(*_) -> dict:
    return {}


class Shown(NamedTuple):
    """What ReadAnswerRows needs to check what each row's worker saw.

    `now`: (task id, TaskView) of this build's tasks; `task_of(record)`: the task a
    checked record answers; `then`: the same views read from the release the tasks were
    exported in (ReadTaskViews; None: not named); `labels_of(row)`: the labels of a task
    row, read from answer rows that carry the task's columns too; `evidence_of(row)`:
    what a row says its worker saw, when it is more than the carried fingerprint (e.g.
    the text a correction names); `missing_reason`: an answer naming a task this build
    does not show, with no evidence that one was shown; `route`: route 2's config key."""
    now: Any
    task_of: Callable[[Any], str]
    then: Any = None
    labels_of: Optional[Callable[[dict], dict]] = None
    evidence_of: Optional[Callable[[dict], Evidence]] = None
    missing_reason: str = reasons.STALE_ANSWER
    route: str = ""


class ReadAnswerRows(beam.PTransform):
    """Answer file (CSV or JSON Lines by extension; a glob is fine) -> {MAIN: records,
    REJECTS: line-level Rejects}. Counters: stage `stage`, level "line"."""

    def __init__(self, paths: Union[str, Sequence[str]], stage: str, columns: Sequence[str],
                 check: Callable[[dict, Any], Any], duplicate_reason: str, context=None,
                 problem_fields: Callable[[Optional[dict], Any], dict] = _no_fields,
                 duplicate_fields: Callable[[Any], dict] = _no_fields,
                 shown: Optional[Shown] = None, worker: str = "",
                 placed: Optional[Callable[[Any, str, int], Any]] = None):
        super().__init__()
        self._paths = answer_patterns(paths)
        self._stage, self._columns, self._worker = stage, tuple(columns), worker
        self._check, self._dup, self._context = check, duplicate_reason, context
        self._problem_fields, self._duplicate_fields = problem_fields, duplicate_fields
        self._shown, self._placed = shown, placed

    def expand(self, p):
        side = () if self._context is None else (self._context,)
        evidence = (None if self._shown is None
                    else _EvidenceOf(self._shown.evidence_of, self._shown.labels_of))
        checked = (p | "Read" >> _ReadRows(self._paths, self._columns, self._worker)
                   | "Validate" >> stage_pardo(_CheckRowFn(self._stage, self._columns, self._check,
                                                           self._problem_fields, evidence, self._placed), *side))
        rows, rejects = checked[MAIN], [checked[REJECTS]]
        if self._shown is not None:
            shown, fields = self._shown, _RowFields(self._duplicate_fields)
            task_of = shown.task_of   # not `shown`: it holds PCollections, never pickled into a step
            answers = rows | "As answers" >> beam.Map(
                lambda row: Answer(task_of(row.record), row.evidence, fields(row), row))
            seen = answers | "What the worker saw" >> CheckShown(
                self._stage, "line", shown.now, shown.then, shown.missing_reason, shown.route)
            rows = seen[MAIN]
            rejects.append(seen[REJECTS])
        unique = rows | "Drop duplicates" >> KeepFirst(
            self._stage, "line", key=lambda row: row.key, order=lambda row: row.order,
            why=_DuplicateOf(self._dup, self._duplicate_fields))
        records = unique[MAIN] | "Records" >> beam.Map(lambda row: row.record)
        rejects = (*rejects, unique[REJECTS]) | "All rejects" >> beam.Flatten()
        return {MAIN: records, REJECTS: rejects}


def answer_patterns(paths: Union[str, Sequence[str]]) -> list:
    """An answer key's files as a list (a file or glob, or a list of them), each of a
    format the readers know: an unknown extension fails now, not on a worker."""
    patterns = [paths] if isinstance(paths, str) else list(paths)
    for pattern in patterns:
        file_format(pattern)
    return patterns


class _ReadRows(beam.PTransform):
    """File patterns -> AnswerRow per row (answer_files.parse_file), each knowing its
    pattern's place in the list (`rank`); one file per worker."""

    def __init__(self, paths: Sequence[str], required_columns, worker: str = ""):
        super().__init__()
        self._paths = list(paths)
        self._required, self._worker = tuple(required_columns), worker

    def expand(self, p):
        required, worker = self._required, self._worker

        def files(ranked):
            rank, pattern = ranked
            return [(rank, pattern, m.path) for m in FileSystems.match([pattern])[0].metadata_list]

        def rows(ranked_file):
            rank, pattern, path = ranked_file
            # bytes as stored (a compressed file is refused in preflight, not read here):
            # parse_file decodes each line strictly
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
                for row in parse_file(path, raw, file_format(pattern), required, worker):
                    yield dataclasses.replace(row, rank=rank)

        return (p | "Patterns" >> beam.Create(list(enumerate(self._paths))) | "Match" >> beam.FlatMap(files)
                | "One file a worker" >> beam.Reshuffle() | "Parse" >> beam.FlatMap(rows))


class _CheckedRow(NamedTuple):
    """A valid row's record, the key that makes two rows duplicates, where it is, and
    what it says its worker saw."""
    key: Any
    row_id: Tuple[str, int]   # (file name, line)
    path: str
    record: Any
    evidence: Evidence = Evidence()
    rank: int = 0             # its pattern's place in the answer key's list

    @property
    def order(self):
        """Of duplicate rows, the earliest (AnswerRow.order) is kept."""
        return self.rank, self.row_id, self.path


class _CheckRowFn(StageFn):
    """Counts each row in and turns it into a record, or a Reject (level "line") that
    names the row's file and line."""
    level = "line"
    counts_out = False  # out once it is no duplicate (the KeepFirst after it)

    def __init__(self, stage: str, columns, check, problem_fields, evidence=None, placed=None):
        self.stage, self._columns = stage, columns
        self._check, self._problem_fields = check, problem_fields
        self._evidence, self._placed = evidence, placed

    def judge(self, parsed: AnswerRow, context=None):
        row, problem = parsed.fields, parsed.error
        if problem is None:
            missing = [c for c in self._columns if not cell_text(row, c)]
            if missing:
                problem = (reasons.MISSING_FIELD, ",".join(missing))
            else:
                problem = not_text(row)
            if problem is None:
                checked = self._check(row, context)
                if isinstance(checked, RowProblem):
                    problem = checked
        if problem is not None:
            reason, detail = problem
            yield self.reject(reason, "%s:%d" % parsed.row_id, detail=detail, file=parsed.path,
                              line=parsed.line, **self._problem_fields(row, context))
            return
        key, record = checked
        if self._placed is not None:
            record = self._placed(record, parsed.path, parsed.line)
        evidence = self._evidence(row) if self._evidence is not None else Evidence()
        yield _CheckedRow(key, parsed.row_id, parsed.path, record, evidence, parsed.rank)


class _EvidenceOf:
    """What a row says its worker saw (Shown.evidence without the PCollections)."""

    def __init__(self, evidence_of, labels_of):
        self._evidence_of, self._labels_of = evidence_of, labels_of

    def __call__(self, row: dict) -> Evidence:
        return self._evidence_of(row) if self._evidence_of is not None else carried(row, self._labels_of)


class _RowFields:
    """The Reject fields of a checked row refused later (a stale answer)."""

    def __init__(self, record_fields):
        self._record_fields = record_fields

    def __call__(self, row: _CheckedRow) -> dict:
        return dict(item_id="%s:%d" % row.row_id, file=row.path, line=row.row_id[1],
                    **self._record_fields(row.record))


class _DuplicateOf:
    """The Reject fields of a later row with the key of an earlier one."""

    def __init__(self, reason: str, fields):
        self._reason, self._fields = reason, fields

    def __call__(self, dup: _CheckedRow, first: _CheckedRow) -> dict:
        return dict(reason=self._reason, item_id="%s:%d" % dup.row_id,
                    detail="same as %s:%d" % first.row_id, file=dup.path, line=dup.row_id[1],
                    **self._fields(dup.record))
