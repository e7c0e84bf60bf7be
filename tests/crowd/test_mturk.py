"""Mechanical Turk's files (issue 38, item 2): the batch results CSV as MTurk's "Download
CSV" writes it is read as the round's answer rows; a rejected assignment and a stale one
never reach the release (the approve/reject file MTurk takes back: tests/crowd/
test_approvals.py). Hand-built sets (tests/imagecode/crowd/test_crowd.py), no video, one small
pipeline."""
import csv

import apache_beam as beam
import pytest

from pipelines.imagecode import reasons
from pipelines.imagecode.crowd.rounds import MakeDescribeTasks, ReadDescriptions, task_row
from pipelines.imagecode.crowd.records import DESCRIBE_TASK_COLUMNS, DESCRIPTION_COLUMNS
from tests.beam_testing import local_test_pipeline
from tests.crowd.mturk_files import assignment, write_results
from tests.imagecode.crowd.test_crowd import SEED, SETS, _describe_tasks, collect, collected, run
from transforms.core.errors import InputError
from transforms.core.stage import MAIN, REJECTS
from transforms.crowd import mturk
from transforms.crowd.answer_files import check_answer_file, files_without_column, parse_file
from transforms.crowd.shown import FINGERPRINT


def _describe_rows():
    return {t.task_id: task_row(t) for t in _describe_tasks()}


def _answers(row, text, target=None):
    """What the describe page submits (pipelines/imagecode/crowd/pages/describe.html)."""
    return {"set_name": row["set_name"], "target_index": row["target_index"] if target is None else target,
            "text": text, FINGERPRINT: row[FINGERPRINT]}


@pytest.fixture(scope="module")
def describe_results(tmp_path_factory):
    """A results file: two good assignments (one Submitted, one Approved), one Rejected on
    MTurk, one stale (posted from another build's task row), one whose page echoed
    another fingerprint than MTurk posted, one with an empty description, one with an
    unknown status."""
    rows = _describe_rows()
    ids = sorted(rows)
    a, b, c = rows[ids[0]], rows[ids[1]], rows[ids[2]]
    stale = dict(b, **{FINGERPRINT: rows[ids[3]][FINGERPRINT]})   # b's id, another task's content
    echoed = _answers(c, "Echo differs.")
    echoed[FINGERPRINT] = a[FINGERPRINT]
    path = tmp_path_factory.mktemp("mturk") / "Batch_1_batch_results.csv"
    write_results(path, [
        assignment(1, "A1WORKER", a, _answers(a, 'The dog, "left", jumps,\nthen lands.')),
        assignment(2, "A2WORKER", a, _answers(a, "A dog in the air."), status="Approved"),
        assignment(3, "A3WORKER", b, _answers(b, "Rejected on MTurk."), status="Rejected"),
        assignment(4, "A4WORKER", stale, _answers(stale, "Seen on other frames.")),
        assignment(5, "A5WORKER", c, echoed),
        assignment(6, "A6WORKER", c, _answers(c, "  ")),
        assignment(7, "A7WORKER", c, _answers(c, "Odd status."), status="Pending"),
    ], DESCRIBE_TASK_COLUMNS)
    return str(path)


def test_the_header_offers_the_rounds_columns(describe_results):
    assert check_answer_file(describe_results, DESCRIPTION_COLUMNS, worker="worker") == [describe_results]
    with pytest.raises(InputError, match="lacks the column"):   # the worker is MTurk's to name
        check_answer_file(describe_results, DESCRIPTION_COLUMNS)
    assert files_without_column(describe_results, FINGERPRINT) == []
    with open(describe_results, newline="") as f:
        header = next(csv.reader(f))
    assert mturk.is_results_header(header)
    assert {"set_name", "target_index", "text", "worker", FINGERPRINT, "WorkerId"} <= set(
        mturk.answer_columns(header, "worker"))


def test_rows_of_a_results_file_become_answer_rows(describe_results):
    with open(describe_results, "rb") as f:
        rows = list(parse_file(describe_results, f, "csv", DESCRIPTION_COLUMNS, worker="worker"))
    good = [r for r in rows if r.error is None]
    assert [r.fields["worker"] for r in good] == ["A1WORKER", "A2WORKER", "A4WORKER", "A6WORKER"]
    assert good[0].fields["text"] == 'The dog, "left", jumps,\nthen lands.' and good[0].line == 2
    assert good[0].fields["AssignmentId"] == "3ASSIGN00001EXAMPLE" and "worker_column" not in good[0].fields
    errors = {r.line: r.error for r in rows if r.error is not None}
    assert errors[5] == (reasons.REJECTED_ASSIGNMENT,
                         "assignment 3ASSIGN00003EXAMPLE of worker A3WORKER was rejected on Mechanical Turk")
    assert errors[7][0] == reasons.BAD_FIELD and "the page submitted task_fingerprint" in errors[7][1]
    assert errors[9][0] == reasons.BAD_FIELD and "'Pending' is none of" in errors[9][1]


def test_a_rebuild_uses_no_rejected_or_stale_assignment(describe_results, tmp_path):
    p = local_test_pipeline()
    sets = p | "Sets" >> beam.Create(SETS)
    tasks = sets | MakeDescribeTasks(SEED)
    read = p | ReadDescriptions(describe_results, sets, tasks[MAIN])
    collect(read[MAIN] | beam.Map(lambda d: (d.description_id, d.worker, d.text)), tmp_path, "kept")
    collect(read[REJECTS] | beam.Map(lambda r: (r.reason, r.item_id, r.line)), tmp_path, "rejects")
    run(p)
    first = sorted(_describe_rows())[0]
    assert sorted(collected(tmp_path, "kept")) == [
        (f"{first}#A1WORKER", "A1WORKER", 'The dog, "left", jumps,\nthen lands.'),
        (f"{first}#A2WORKER", "A2WORKER", "A dog in the air.")]
    name = "Batch_1_batch_results.csv"
    assert sorted(collected(tmp_path, "rejects")) == sorted([
        (reasons.REJECTED_ASSIGNMENT, f"{name}:5", 5), (reasons.STALE_ANSWER, f"{name}:6", 6),
        (reasons.BAD_FIELD, f"{name}:7", 7), (reasons.MISSING_FIELD, f"{name}:8", 8),
        (reasons.BAD_FIELD, f"{name}:9", 9)])


def test_a_page_answering_several_items_gives_a_row_per_item(tmp_path):
    """NLVR2's pruning page: a verdict per image; the empty places of a smaller set (and
    the columns other assignments filled) give no row."""
    task = {"set": "cup#0", "synset": "cup", FINGERPRINT: "f" * 32}
    answers = {"set": "cup#0", "image@0": "0", "verdict@0": "keep", "image@1": "1",
               "verdict@1": "inappropriate", "image@10": "", "verdict@10": ""}
    path = tmp_path / "pruning_results.csv"
    write_results(path, [assignment(1, "W1", task, answers)], list(task))
    with open(path, "rb") as f:
        rows = list(parse_file(str(path), f, "csv", ("set", "image", "verdict")))
    assert [(r.line, r.fields["set"], r.fields["image"], r.fields["verdict"]) for r in rows] == [
        (2, "cup#0", "0", "keep"), (2, "cup#0", "1", "inappropriate")]


def test_vsr_reads_a_results_file_where_it_reads_json_lines(tmp_path):
    """VSR's vote file may be MTurk's results: a row a line, the label a number, a
    rejected assignment that row's reject (pipelines/vsr/annotations.py)."""
    from pipelines.vsr.annotations import ReadAnswerLines, parse_record
    task = {"example_id": "ex1", "image": "1.jpg", "image_link": "http://x/1.jpg", "caption": "The cat is on the mat.",
            FINGERPRINT: "e" * 32}
    vote = {"example_id": "ex1", "label": "1", FINGERPRINT: "e" * 32}
    path = tmp_path / "votes_results.csv"
    write_results(path, [assignment(1, "V1", task, vote), assignment(2, "V2", task, dict(vote, label="0"), "Rejected")],
                  list(task))
    jsonl = tmp_path / "votes.jsonl"
    jsonl.write_text('{"example_id": "ex2", "validator_id": "V3", "label": 0}\n')
    p = local_test_pipeline()
    lines = p | ReadAnswerLines([str(path), str(jsonl)], "validator_id")
    collect(lines | beam.Map(lambda line: (type(line).__name__, line.rank, line.number,
                                           parse_record(line, ("example_id",)))), tmp_path, "lines")
    run(p)
    got = sorted(collected(tmp_path, "lines"), key=lambda t: (t[1], t[2]))
    assert [(kind, rank, number) for kind, rank, number, _ in got] == [
        ("CsvAnswerLine", 0, 2), ("CsvAnswerLine", 0, 3), ("SourceLine", 1, 1)]
    first = got[0][3]
    assert (first["example_id"], first["validator_id"], first["label"]) == ("ex1", "V1", 1)
    assert got[1][3][0] == reasons.REJECTED_ASSIGNMENT
    assert got[2][3] == {"example_id": "ex2", "validator_id": "V3", "label": 0}
