"""transforms/crowd/answer_rows.py: every row of a crowd answer file is a record or a
line-level Reject naming its file and line; the earliest of duplicate rows stays."""
import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from tests.beam_testing import local_test_pipeline
from transforms.core.stage import MAIN, REJECTS, read_stage_counts, reconcile
from transforms.crowd.answer_rows import ReadAnswerRows, RowProblem, cell_text

COLUMNS = ("item", "answer", "worker")


def check(row, known_items):
    """A toy round: the item must be known, the answer yes/no; one answer per worker."""
    item = cell_text(row, "item")
    if item not in known_items:
        return RowProblem("unknown_item", item)
    answer = cell_text(row, "answer")
    if answer not in ("yes", "no"):
        return RowProblem("bad_field", f"answer={answer!r}")
    return (item, cell_text(row, "worker")), (item, answer, cell_text(row, "worker"))


def test_rows_become_records_or_rejects_and_duplicates_keep_the_earliest(tmp_path):
    (tmp_path / "a.csv").write_text(
        "item,answer,worker\n"
        "i1,yes,w1\n"      # line 2: kept
        "i1,no,w1\n"       # line 3: a duplicate of line 2
        "i2,maybe,w1\n"    # line 4: bad answer
        "i9,yes,w1\n"      # line 5: unknown item
        "i2,,w2\n"         # line 6: missing answer
        "i2,no,w2\n")      # line 7: kept
    p = local_test_pipeline()
    known = beam.pvalue.AsDict(p | "Known" >> beam.Create([("i1", 1), ("i2", 1)]))
    rows = p | ReadAnswerRows(str(tmp_path / "*.csv"), "toy", COLUMNS, check, "duplicate_answer",
                              context=known, problem_fields=lambda row, _: {"split": "train"},
                              duplicate_fields=lambda record: {"source": record[0]})
    assert_that(rows[MAIN], equal_to([("i1", "yes", "w1"), ("i2", "no", "w2")]), label="records")
    assert_that(rows[REJECTS] | beam.Map(lambda r: (r.line, r.reason, r.item_id, r.split, r.source,
                                                    r.stage, r.level)),
                equal_to([(3, "duplicate_answer", "a.csv:3", "", "i1", "toy", "line"),
                          (4, "bad_field", "a.csv:4", "train", "", "toy", "line"),
                          (5, "unknown_item", "a.csv:5", "train", "", "toy", "line"),
                          (6, "missing_field", "a.csv:6", "train", "", "toy", "line")]),
                label="rejects")
    result = p.run()
    result.wait_until_finish()
    counts = read_stage_counts(result)["toy"]
    assert counts["line.in"] == 6 and counts["line.out"] == 2
    assert reconcile({"toy": counts}) == []
