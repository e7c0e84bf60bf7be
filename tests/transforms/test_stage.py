import apache_beam as beam

from schemas.rejects import Reject
from tests.beam_testing import local_test_pipeline
from transforms.core.stage import (MAIN, REJECTS, StageCounts, check_links, read_stage_counts,
                                   reconcile)


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
