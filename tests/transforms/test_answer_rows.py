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


def test_rows_are_read_against_what_their_worker_saw_before_duplicates_are_dropped(tmp_path):
    """With `shown`, a row whose task_fingerprint is not what this build shows for its
    item is stale_answer (file and line named) and a later fresh row stands in for it; a
    row without one is judged by the tasks release (`then`)."""
    from transforms.crowd.answer_rows import Shown
    from transforms.crowd.shown import view
    now_i1, old_i1 = view({"image": "sha:new"}, {"image": "i1.jpg"}), view({"image": "sha:old"}, {"image": "i1.jpg"})
    i2 = view({"image": "sha:2"}, {"image": "i2.jpg"})
    (tmp_path / "a.csv").write_text(
        "item,answer,worker,task_fingerprint\n"
        f"i1,yes,w1,{old_i1.fingerprint}\n"   # line 2: saw the old i1: stale
        f"i1,no,w1,{now_i1.fingerprint}\n"    # line 3: saw this i1: kept (line 2 is gone)
        "i2,yes,w1,\n"                        # line 4: no fingerprint, the release lists i2 as now
        "i1,yes,w2,\n")                       # line 5: no fingerprint, the release lists the old i1
    p = local_test_pipeline()
    known = beam.pvalue.AsDict(p | "Known" >> beam.Create([("i1", 1), ("i2", 1)]))
    shown = Shown(now=p | "Now" >> beam.Create([("i1", now_i1), ("i2", i2)]), task_of=lambda r: r[0],
                  then=p | "Then" >> beam.Create([("i1", old_i1), ("i2", i2)]), route="toy.tasks_release")
    rows = p | ReadAnswerRows(str(tmp_path / "a.csv"), "toy", COLUMNS, check, "duplicate_answer",
                              context=known, duplicate_fields=lambda record: {"source": record[0]},
                              shown=shown)
    assert_that(rows[MAIN], equal_to([("i1", "no", "w1"), ("i2", "yes", "w1")]), label="records")
    assert_that(rows[REJECTS] | beam.Map(lambda r: (r.line, r.reason, r.item_id, r.source, r.detail)),
                equal_to([(2, "stale_answer", "a.csv:2", "i1",
                           "task i1 changed since the worker saw it (as its row says): the same "
                           "names, other content (e.g. another video or image file behind them)"),
                          (5, "stale_answer", "a.csv:5", "i1",
                           "task i1 changed since the worker saw it (as toy.tasks_release lists it): "
                           "the same names, other content (e.g. another video or image file behind them)")]),
                label="rejects")
    result = p.run()
    result.wait_until_finish()
    counts = read_stage_counts(result)["toy"]
    assert counts["line.in"] == 4 and counts["line.out"] == 2
    assert reconcile({"toy": counts}) == []
