"""The read-through cache (transforms/cache/read_through.py): hits are decoded, misses
computed and written back, a corrupt entry is a miss, and the next run finds what the
last one wrote."""
import glob
import os

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.testing.util import assert_that, equal_to

from tests.beam_testing import local_test_pipeline
from transforms.cache.read_through import WRITTEN, ReadThrough
from transforms.cache.store import CACHE_SCHEMA, cache_key, checksum, decode_json, encode_json
from transforms.core.stage import MAIN, REJECTS, read_stage_counts, reconcile

STAGE = "square"


class _Square(beam.DoFn):
    """(name, n) -> (name, n * n); a negative n is rejected (never cached)."""

    def process(self, item):
        name, n = item
        if n < 0:
            yield beam.pvalue.TaggedOutput(REJECTS, name)
            return
        yield name, n * n


def _key(pair):  # items and results both lead with the name
    return cache_key(STAGE, pair[0], "squarer-v1", {})


def _run(root, items, run_id, expected, rejects=()):
    """Read `items` through the cache; assert the results; return the cache counters and
    the shard files written."""
    p = local_test_pipeline()
    out = (p | beam.Create(items)
           | ReadThrough(root, STAGE, run_id, key=_key,
                         compute=beam.ParDo(_Square()).with_outputs(REJECTS, main=MAIN),
                         encode=lambda pair: encode_json(pair[1]),
                         decode=lambda pair, value: (pair[0], decode_json(value))))
    assert_that(out[MAIN], equal_to(expected), label="results")
    assert_that(out[REJECTS], equal_to(list(rejects)), label="rejects")
    run = p.run()
    run.wait_until_finish()
    counts = read_stage_counts(run).get(f"cache.{STAGE}", {})
    assert reconcile({STAGE: counts}) == []
    return counts, sorted(glob.glob(os.path.join(root, STAGE, f"{run_id}-*.parquet")))


def test_misses_are_computed_and_the_next_run_hits(tmp_path):
    root = str(tmp_path / "cache")
    counts, files = _run(root, [("a", 2), ("b", 3), ("c", -1)], "run-1",
                         [("a", 4), ("b", 9)], rejects=["c"])
    assert counts["miss"] == 3 and counts.get("hit", 0) == 0 and counts["written"] == 2
    assert len(files) == 1

    # The values come from the cache, not the computation: an item whose input changed
    # under the same key still gets the stored value.
    counts, files = _run(root, [("a", 100), ("b", 3), ("d", 5)], "run-2",
                         [("a", 4), ("b", 9), ("d", 25)])
    assert counts["hit"] == 2 and counts["miss"] == 1 and counts["written"] == 1
    assert len(files) == 1


def test_a_corrupt_entry_is_a_miss_and_is_written_again(tmp_path):
    root = str(tmp_path / "cache")
    os.makedirs(os.path.join(root, STAGE))
    good, bad = encode_json(4), encode_json(999)
    rows = {"key": [_key(("a",)), _key(("b",))], "value": [good, bad],
            "checksum": [checksum(good), checksum(b"what was stored")]}
    pq.write_table(pa.Table.from_pydict(rows, schema=CACHE_SCHEMA),
                   os.path.join(root, STAGE, "hand-00000-of-00001.parquet"))
    counts, _ = _run(root, [("a", 2), ("b", 3)], "run-1", [("a", 4), ("b", 9)])
    assert counts == {"corrupt": 1, "hit": 1, "item.in": 2, "item.out": 2, "miss": 1,
                      "written": 1}
    counts, _ = _run(root, [("b", 3)], "run-2", [("b", 9)])
    assert counts["hit"] == 1 and "miss" not in counts


def test_the_written_output_names_the_shards(tmp_path):
    root = str(tmp_path / "cache")
    p = local_test_pipeline()
    out = (p | beam.Create([("a", 2)])
           | ReadThrough(root, STAGE, "run-1", key=_key, compute=beam.ParDo(_Square()),
                         encode=lambda pair: encode_json(pair[1]),
                         decode=lambda pair, value: (pair[0], decode_json(value))))
    assert_that(out[WRITTEN], equal_to([os.path.join(root, STAGE, "run-1-00000-of-00001.parquet")]))
    assert_that(out[REJECTS], equal_to([]), label="no rejects")  # a compute without rejects
    p.run().wait_until_finish()
