import apache_beam as beam

from schemas.rejects import Reject
from tests.beam_testing import local_test_pipeline
from transforms.core.stage import (MAIN, REJECTS, StageCounts, StageFn, apply_in_process,
                                   check_links, first_per_key, read_stage_counts, reconcile)


class _EvenOnly(beam.DoFn):
    def __init__(self):
        self.counts = StageCounts("toy")

    def process(self, n):
        self.counts.seen(level="number")
        if n % 2:
            yield self.counts.rejected(Reject(stage="toy", level="number", reason="odd", item_id=str(n)))
        else:
            yield self.counts.passed(n, level="number")


def test_counters_come_back_and_reconcile():
    p = local_test_pipeline()
    _ = p | beam.Create(range(7)) | beam.ParDo(_EvenOnly()).with_outputs(REJECTS, main=MAIN)
    run = p.run()
    run.wait_until_finish()
    counts = read_stage_counts(run)
    assert counts == {"toy": {"number.in": 7, "number.out": 4, "number.rejected.odd": 3}}
    assert reconcile(counts) == []


def test_reconcile_and_links_report_mismatches():
    counts = {"a": {"x.in": 5, "x.out": 3, "x.rejected.r": 1}, "b": {"x.in": 2}}
    assert reconcile(counts) == ["a/x: in 5 != out 3 + rejected 1", "b/x: in 2 != out 0 + rejected 0"]
    assert check_links(counts, [("a", "x.out", "b", "x.in")]) == ["a.x.out = 3 but b.x.in = 2"]


class _Halves(StageFn):
    """Even numbers out halved, odd ones rejected, each number's square on a side output;
    records its lifecycle."""
    stage, level = "toy", "number"

    def __init__(self, calls):
        self.calls = calls

    def setup(self):
        self.calls.append("setup")

    def teardown(self):
        self.calls.append("teardown")

    def judge(self, n):
        yield beam.pvalue.TaggedOutput("squares", n * n)
        if n % 2:
            yield self.reject("odd", str(n))
            return
        yield n // 2


def test_a_stage_applied_in_process_gives_its_outputs_by_tag_in_order():
    calls = []
    out = apply_in_process(_Halves(calls), [4, 3, 8])
    assert out[MAIN] == [2, 4]
    assert out["squares"] == [16, 9, 64]
    assert [(r.reason, r.item_id) for r in out[REJECTS]] == [("odd", "3")]
    assert calls == ["setup", "teardown"]


def test_first_per_key_keeps_what_keep_first_keeps():
    items = [("b", 2), ("a", 9), ("b", 1), ("a", 3), ("c", 5)]
    assert first_per_key(items, key=lambda i: i[0], order=lambda i: i[1]) == [("b", 1), ("a", 3), ("c", 5)]
