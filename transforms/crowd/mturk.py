"""Amazon Mechanical Turk's files: the batch results CSV read as downloaded, and the
approve/reject file MTurk takes back.

A batch is posted with a task file as its input CSV (each row one HIT, its columns the
page's `${column}` placeholders: transforms/crowd/pages.py). MTurk's "Download CSV" then
gives one row per assignment:

    "HITId","HITTypeId","Title",...,"AssignmentId","WorkerId","AssignmentStatus",
    "AcceptTime","SubmitTime",...,"WorkTimeInSeconds",...,"Input.<col>"...,"Answer.<field>"...,
    "Approve","Reject"

answer_files.py reads such a file as any answer CSV and hands its rows here
(`is_results_header` tells the format by its header: `AssignmentId` and `Answer.` columns).
A results row becomes the answer row the round reads:

* `Input.<col>` -> `<col>`: the task row as posted, `task_fingerprint` included, so the
  answer is bound to what its worker saw exactly as a row of the project's own columns is
  (transforms/crowd/shown.py);
* `Answer.<field>` -> `<field>`: what the page submitted. A field the page submits for a
  column of the task too (the page echoes `task_fingerprint`) must agree with the input
  row, or the row is a `bad_field` reject: the page showed another task than MTurk posted;
* the worker is MTurk's `WorkerId`, always: the round names its worker column
  (`worker`: ImageCoDe's `worker`, VSR's `validator_id`, ...) and that column is filled
  from `WorkerId`, never from what the browser posted. A posted field for the worker
  column, or for one of MTurk's own columns (`Answer.WorkerId`), that says otherwise is a
  `bad_field` reject: a page cannot choose whose answer it is. A row without a
  `WorkerId` is `bad_field` too;
* a page that answers several items at once (NLVR2's pruning: a verdict per image)
  submits `<field>@<k>` for item k: the row becomes one answer row per item, each with
  the row's other columns (all of them at the results row's line); an item whose cells
  are all empty is none (a set smaller than the page's places, or the columns that only
  other assignments filled);
* `AssignmentStatus` Rejected: the row is a `rejected_assignment` reject, whatever it
  says (a requester rejected it on MTurk, so nothing of it reaches a release);
  Submitted and Approved rows are read; any other status is a `bad_field` reject.

MTurk's own columns stay in the row under their names (`WorkerId`, `AssignmentId`,
`AssignmentStatus`, `WorkTimeInSeconds`, ...), and no `Input.` or `Answer.` column of the
same name replaces them; the rounds ignore columns they do not read.

`approvals` writes the file MTurk takes back: the results file's rows with `Approve` ("x")
or `Reject` (what the worker is shown) filled, one decision per assignment, made by the
caller from what the build did with each row (pipelines/crowd/approvals.py).
"""
from __future__ import annotations

import csv
import dataclasses
import io
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from schemas import reasons
from transforms.core.errors import InputError
from transforms.crowd.items import item_field, split_items
from transforms.io.csv_out import safe_cell

INPUT, ANSWER = "Input.", "Answer."
ASSIGNMENT_ID, WORKER_ID, STATUS = "AssignmentId", "WorkerId", "AssignmentStatus"
APPROVE, REJECT = "Approve", "Reject"
SUBMITTED, APPROVED, REJECTED = "Submitted", "Approved", "Rejected"
# A hidden field pages of an earlier release posted, naming the worker column: never read
# (the round names its own), dropped from the row.
POSTED_WORKER_COLUMN = "worker_column"

def is_results_header(columns: Sequence[str]) -> bool:
    """True for the header of MTurk's batch results CSV."""
    return ASSIGNMENT_ID in columns and any(c.startswith(ANSWER) for c in columns)


def answer_columns(columns: Sequence[str], worker: str = "") -> List[str]:
    """The columns an answer row read from a results file with this header offers: the
    input and answer columns without their prefix (and item suffix), the round's worker
    column `worker` (filled from WorkerId), then MTurk's own."""
    named = [item_field(c[len(ANSWER):]) if c.startswith(ANSWER) else c[len(INPUT):]
             for c in columns if c.startswith((INPUT, ANSWER))]
    if worker and WORKER_ID in columns:
        named.append(worker)
    return list(dict.fromkeys(named + [c for c in columns if not c.startswith((INPUT, ANSWER))]))


def answer_rows(rows: Iterable, worker: str = "") -> Iterator:
    """answer_files.AnswerRow's of one CSV file -> the rows a round reads: a results file's
    rows as the module docstring says (`worker`: the round's worker column, "" for a
    round that names none), any other file's as they are."""
    for row in rows:
        if row.error is None and is_results_header(list(row.fields)):
            yield from _from_results_row(row, worker)
        else:
            yield row


def _from_results_row(row, worker_column: str) -> Iterator:
    fields = row.fields
    status = fields.get(STATUS, "").strip()
    who = f"assignment {fields.get(ASSIGNMENT_ID, '').strip() or '?'} of worker {fields.get(WORKER_ID, '').strip() or '?'}"
    if status == REJECTED:
        yield _rejected(row, reasons.REJECTED_ASSIGNMENT, f"{who} was rejected on Mechanical Turk")
        return
    if status not in (SUBMITTED, APPROVED):
        yield _rejected(row, reasons.BAD_FIELD, f"{who}: AssignmentStatus {status[:40]!r} is none of "
                                                f"{SUBMITTED}, {APPROVED}, {REJECTED}")
        return
    inputs = {c[len(INPUT):]: v for c, v in fields.items() if c.startswith(INPUT)}
    answers, items = split_items({c[len(ANSWER):]: v for c, v in fields.items() if c.startswith(ANSWER)})
    differs = sorted(c for c in answers if c in inputs and answers[c].strip() and answers[c] != inputs[c])
    if differs:
        column = differs[0]
        yield _rejected(row, reasons.BAD_FIELD, f"{who}: the page submitted {column}={answers[column][:60]!r} "
                                                f"but MTurk posted {inputs[column][:60]!r}")
        return
    own = {c: v for c, v in fields.items() if not c.startswith((INPUT, ANSWER))}
    answers.pop(POSTED_WORKER_COLUMN, None)
    forged = _forged_identity(own, [inputs, answers, *items.values()], worker_column)
    if forged:
        yield _rejected(row, reasons.BAD_FIELD, f"{who}: {forged}")
        return
    common = {**inputs, **answers, **own}
    if worker_column:
        common[worker_column] = own[WORKER_ID].strip()
    if not items:
        yield dataclasses.replace(row, fields=common)
        return
    for k in sorted(items):   # a place the page left empty (a smaller set) is no item
        if any(value.strip() for value in items[k].values()):
            yield dataclasses.replace(row, fields={**common, **items[k]})


def _forged_identity(own: Mapping[str, str], posted: Sequence[Mapping[str, str]], worker_column: str) -> str:
    """What a row posts about who did the work that MTurk's own record does not say ("" when
    nothing): a worker column or an MTurk column (WorkerId, AssignmentId, ...) given
    another value in the posted task, answers or items, or no WorkerId at all."""
    worker = own.get(WORKER_ID, "").strip()
    if not worker:
        return "no WorkerId: MTurk names the worker of every assignment"
    claims = [(c, v) for given in posted for c, v in sorted(given.items()) if c in own or c == worker_column]
    for column, value in claims:
        truth = worker if column in (worker_column, WORKER_ID) else own[column].strip()
        if value.strip() and value.strip() != truth:
            return (f"the page submitted {column}={value[:60]!r}, but MTurk's "
                    f"{WORKER_ID if column == worker_column else column} is {truth[:60]!r}")
    return ""


def _rejected(row, reason: str, detail: str):
    return dataclasses.replace(row, fields=None, error=(reason, detail))


# --- the file MTurk takes back ---------------------------------------------------------------

APPROVED_MARK = "x"                   # what MTurk's upload reads under Approve
FEEDBACK_CHARS = 1024                 # MTurk's RequesterFeedback holds at most this much


@dataclasses.dataclass(frozen=True)
class Decision:
    """One assignment's verdict: `approve` (True), reject (False) or pending (None), and
    what its worker is told (the Reject cell; pending: what the requester waits for)."""
    approve: Optional[bool]
    reasons: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Decided:
    assignment: str
    worker: str
    lines: Tuple[int, ...]      # the results file's lines of this assignment
    decision: Decision


def approvals(results_path: str, decide: Callable[[Sequence[int]], Decision]) -> Tuple[str, List[Decided]]:
    """The results file at `results_path` with `Approve` and `Reject` filled, as MTurk's
    "Upload CSV" takes it, and what was decided for each Submitted assignment.

    `decide(lines)` judges one assignment by the lines of the file it is on (its rows'
    rejects are the caller's to know): approved, "x" under Approve; rejected, its reasons
    under Reject; pending, both left empty (MTurk waits). An assignment that appears on
    several lines gets one decision, written on its first line only. An assignment MTurk
    already approved or rejected is left as it is. The file is read as the build reads it
    (any cell size, bytes that are not UTF-8 kept as they are), and every cell written is
    safe in a spreadsheet (a text that begins like a formula gets a leading ')."""
    with open(results_path, "rb") as f:
        text = without_bom_text(f.read().decode("utf-8", "surrogateescape"))
    records = list(_records_with_lines(text))
    if not records or not is_results_header(records[0][1]):
        raise InputError(f"{results_path} is not a Mechanical Turk batch results file "
                         f"(its header has no {ASSIGNMENT_ID} and Answer. columns)")
    header = records[0][1] + [c for c in (APPROVE, REJECT) if c not in records[0][1]]
    rows = [(line, dict(zip(header, record + [""] * (len(header) - len(record))))) for line, record in records[1:]]
    lines_of: Dict[str, List[int]] = {}
    for line, row in rows:
        if row.get(STATUS, "").strip() == SUBMITTED and row.get(ASSIGNMENT_ID, "").strip():
            lines_of.setdefault(row[ASSIGNMENT_ID].strip(), []).append(line)
    decided = {assignment: decide(lines) for assignment, lines in lines_of.items()}
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow([safe_cell(c) for c in header])
    done: List[Decided] = []
    for line, row in rows:
        assignment = row.get(ASSIGNMENT_ID, "").strip()
        if assignment in decided and lines_of[assignment][0] == line:
            decision = decided[assignment]
            row[APPROVE] = APPROVED_MARK if decision.approve else ""
            row[REJECT] = " ".join(decision.reasons)[:FEEDBACK_CHARS] if decision.approve is False else ""
            done.append(Decided(assignment, row.get(WORKER_ID, "").strip(), tuple(lines_of[assignment]), decision))
        elif assignment in decided:   # a second row of a decided assignment: nothing more to decide
            row[APPROVE], row[REJECT] = "", ""
        writer.writerow([safe_cell(row[c]) for c in header])
    return out.getvalue(), done


def without_bom_text(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


def _records_with_lines(text: str) -> Iterator[Tuple[int, List[str]]]:
    """(line where the record starts, cells) of a CSV text: the line numbers rejects name
    (answer_files.py counts lines as they end at "\n"). A cell of any size is read: the
    build rejects an oversized one (bad_field), and its row is still written back."""
    lines = io.StringIO(text, newline="\n")
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text) + 1))
    try:
        reader = csv.reader(lines)
        start = 1
        while True:
            try:
                record = next(reader)
            except StopIteration:
                return
            if any(cell.strip() for cell in record):
                yield start, record
            start = reader.line_num + 1
    finally:
        csv.field_size_limit(limit)
