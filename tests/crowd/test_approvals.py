"""Approvals a requester can send to Mechanical Turk as they are (issue 44, item 3):

- a decision only once every check that can reject the answer has judged it: a
  description stays pending until the retrieval round has (with the reason printed);
- the worker reads one plain sentence per reason code, from one table in which every code
  an answer row can be rejected for has its line;
- `approvals` reads the results file as the build does: an oversized cell is that row's
  reason, not a traceback; every cell it writes is safe in a spreadsheet; an assignment on
  two lines gets one decision.

Each test makes a small release folder (MANIFEST.json with the resolved config, rejects/)
as a build of that config writes it; tests/crowd/test_crowd_pages_browser.py runs the
command on a real rebuild.
"""
import csv
import dataclasses
import io
import json
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.config import to_dict
from pipelines.crowd import approvals
from pipelines.crowd.worker_reasons import APPROVE, FOR_THE_WORKER, PENDING, REJECT
from pipelines.imagecode import reasons as imagecode
from pipelines.imagecode.config import ImageCodeConfig
from pipelines.nlvr2.collection import reasons as nlvr2
from pipelines.vsr import reasons as vsr
from schemas import reasons as library
from schemas.rejects import REJECT_SCHEMA, Reject, reject_to_row
from tests.crowd.mturk_files import assignment, write_results

TASK = {"set_name": "open-images-1", "target_index": "4", "task_fingerprint": "f" * 32}


def _answer(text):
    return {"set_name": "open-images-1", "target_index": "4", "text": text, "task_fingerprint": "f" * 32}


def release(tmp_path, results, rejects, retrievals=None):
    """A release folder as a build of the describe round (`retrievals`: and of the
    retrieve round) writes it: its resolved config, its rejects."""
    folder = tmp_path / "imagecode" / "1.0.1"
    (folder / "rejects").mkdir(parents=True)
    config = ImageCodeConfig()
    config = dataclasses.replace(config, crowd=dataclasses.replace(
        config.crowd, descriptions=str(results), retrievals=str(retrievals) if retrievals else None))
    (folder / "MANIFEST.json").write_text(json.dumps({"benchmark": "imagecode", "config": to_dict(config)}))
    rows = [reject_to_row(Reject(stage, "line", reason, f"x:{line}", file=str(results), line=line))
            for stage, reason, line in rejects]
    pq.write_table(pa.Table.from_pylist(rows, schema=REJECT_SCHEMA), folder / "rejects" / "rejects-0.parquet")
    return str(folder)


def decided(release_dir, results, tmp_path):
    out = tmp_path / "approvals.csv"
    assert approvals.main([release_dir, str(results), "--output", str(out)]) == 0
    return read_csv(out)


def read_csv(path):
    """Rows of a CSV whose cells may be larger than the csv module reads by default."""
    limit = csv.field_size_limit(1 << 24)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    finally:
        csv.field_size_limit(limit)


@pytest.fixture
def results(tmp_path):
    """Four assignments of the describe round: two fine, one stale, one with its
    description left empty (the page cannot submit that: a tampered post)."""
    path = tmp_path / "Batch_1_batch_results.csv"
    write_results(path, [assignment(1, "A1", TASK, _answer("The dog in the air.")),
                         assignment(2, "A2", TASK, _answer("ok")),
                         assignment(3, "A3", TASK, _answer("Seen on other frames.")),
                         assignment(4, "A4", TASK, _answer(""))], list(TASK))
    return path


def test_a_description_is_pending_until_the_retrieval_round_judged_it(results, tmp_path, capsys):
    before = release(tmp_path, results, [("describe", "stale_answer", 4), ("describe", "missing_field", 5)])
    rows = decided(before, results, tmp_path)
    assert [(r["WorkerId"], r["Approve"], bool(r["Reject"])) for r in rows] == [
        ("A1", "", False), ("A2", "", False),     # read, not judged yet: pending
        ("A3", "x", False),                       # the task changed: not the worker's doing
        ("A4", "", True)]                         # broke the task: rejected now
    err = capsys.readouterr().err
    assert "1 approved, 1 rejected, 2 pending" in err
    assert f"pending: assignment 3ASSIGN00001EXAMPLE of worker A1 (line 2): {FOR_THE_WORKER['no_retrieval'].sentence}" in err
    # the retrieval round's build: A2's description ("ok") found by no retriever, A1's kept
    after = release(tmp_path / "after", results, [("describe", "stale_answer", 4), ("describe", "missing_field", 5),
                                                  ("retrieve", "retriever_wrong", 3)], retrievals=tmp_path / "r.csv")
    rows = decided(after, results, tmp_path)
    assert [(r["WorkerId"], r["Approve"], r["Reject"]) for r in rows] == [
        ("A1", "x", ""), ("A2", "", FOR_THE_WORKER["retriever_wrong"].sentence), ("A3", "x", ""),
        ("A4", "", FOR_THE_WORKER["missing_field"].sentence)]


def test_every_reason_an_answer_row_can_get_has_one_plain_sentence():
    codes = set(library.ANSWER_ROW) | set(imagecode.CROWD_ANSWERS) | set(nlvr2.CROWD_ANSWERS) | set(vsr.CROWD_ANSWERS)
    assert codes == set(FOR_THE_WORKER), (codes - set(FOR_THE_WORKER), set(FOR_THE_WORKER) - codes)
    for code, line in FOR_THE_WORKER.items():
        assert line.verdict in (APPROVE, PENDING, REJECT), code
        assert re.fullmatch(r"[A-Z][^_:]*[^.]\.", line.sentence) and line.sentence.count(". ") == 0, (code, line.sentence)
    # a worker is rejected only for their own work (tests/crowd/test_rounds.py: never for an option offered)
    assert {c for c, line in FOR_THE_WORKER.items() if line.verdict == APPROVE} >= {
        "stale_answer", "duplicate_answer", "duplicate_description", "duplicate_caption"}


def test_the_file_is_read_as_the_build_reads_it_and_written_safe(tmp_path, capsys):
    """A 1 MB cell is its row's reason (the build's reader: bad_field), not a traceback; a
    worker's `=HYPERLINK(...)` is written as text; one AssignmentId on two lines gets one
    decision, on its first line; reasons are sentences, never codes."""
    path = tmp_path / "Batch_2_batch_results.csv"
    formula = '=HYPERLINK("https://example.org","click")'
    write_results(path, [assignment(1, "A1", TASK, _answer(formula)),
                         assignment(2, "A2", TASK, _answer("x" * 1_000_000)),
                         assignment(3, "A3", TASK, _answer("Fine.")),
                         assignment(3, "A3", TASK, _answer("Fine, again."))], list(TASK))
    built = release(tmp_path, path, [("describe", "duplicate_description", 5), ("retrieve", "retriever_wrong", 4)],
                    retrievals=tmp_path / "r.csv")
    rows = decided(built, path, tmp_path)
    assert [(r["WorkerId"], r["Approve"], r["Reject"]) for r in rows] == [
        ("A1", "x", ""), ("A2", "", FOR_THE_WORKER["bad_field"].sentence),
        ("A3", "", FOR_THE_WORKER["retriever_wrong"].sentence), ("A3", "", "")]
    assert rows[0]["Answer.text"] == "'" + formula
    cells = [cell for row in read_csv(tmp_path / "approvals.csv") for cell in [*row, *row.values()]]
    assert not [c for c in cells if c[:1] in ("=", "+", "@") or (c[:1] == "-" and not re.fullmatch(r"-[\d.]+", c))]
    assert "is on lines 4, 5: one decision, on line 4" in capsys.readouterr().err


def test_a_results_file_the_release_did_not_read_has_no_approvals(results, tmp_path, capsys):
    built = release(tmp_path, results, [])
    other = tmp_path / "Batch_9_batch_results.csv"
    other.write_bytes(results.read_bytes())
    assert approvals.main([built, str(other)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did not read" in err[0] and "Batch_9_batch_results.csv" in err[0]
    not_results = tmp_path / "answers.csv"
    not_results.write_text("set_name,target_index,text,worker\nopen-images-1,4,A dog.,w1\n")
    assert approvals.main([release(tmp_path / "plain", not_results, []), str(not_results)]) == 2
    assert "not a Mechanical Turk batch results file" in capsys.readouterr().err
    # (io: a formula-safe file is still MTurk's: every cell quoted, its header first)
    assert io.StringIO(results.read_text()).readline().startswith('"HITId"') and os.path.exists(results)
