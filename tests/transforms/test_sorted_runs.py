"""Sorted run files and their merge (transforms/io/sorted_runs.py): a global order with
no element holding the collection."""
import json
import random

import apache_beam as beam
import pytest

from tests.beam_testing import local_test_pipeline
from transforms.io.sorted_runs import RunFile, WriteSortedRuns, merge_runs, write_run


def test_runs_written_in_small_buffers_merge_into_one_order(tmp_path):
    items = [(f"id{n:05d}", random.Random(n).random()) for n in range(2_000)]
    random.Random(1).shuffle(items)
    listing = tmp_path / "runs.json"
    with local_test_pipeline() as p:
        _ = (p | beam.Create(items, reshuffle=False)
             | WriteSortedRuns(str(tmp_path / "runs"), key_of=lambda item: (item[1], item[0]),
                               max_buffer_bytes=4_096)
             | beam.combiners.ToList()
             | beam.Map(lambda runs: listing.write_text(json.dumps(runs))))
    runs = [RunFile(*r) for r in json.loads(listing.read_text())]
    assert len(runs) > 10 and sum(r.rows for r in runs) == len(items)   # many small runs
    assert list(merge_runs(runs)) == sorted(items, key=lambda item: (item[1], item[0]))


def test_a_key_seen_twice_stops_the_merge(tmp_path):
    one = write_run(str(tmp_path / "a.run"), [(("k", 1), _pickled(("k", 1), "first"))])
    two = write_run(str(tmp_path / "b.run"), [(("k", 1), _pickled(("k", 1), "second"))])
    with pytest.raises(ValueError, match="occurs twice"):
        list(merge_runs([one, two]))


def test_a_truncated_run_is_an_error_naming_its_file(tmp_path):
    path = str(tmp_path / "c.run")
    write_run(path, [(1, _pickled(1, "x"))])
    with pytest.raises(ValueError, match="c.run: ends after 1 of its 2 records"):
        list(merge_runs([RunFile(path, 2)]))


def _pickled(key, element) -> bytes:
    import pickle
    return pickle.dumps((key, element))
