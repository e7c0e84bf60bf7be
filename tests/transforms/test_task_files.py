"""Crowd task files: lines in sort-key order, every `always` file written."""
import json

import apache_beam as beam

from tests.beam_testing import local_test_pipeline
from transforms.crowd.task_files import WriteTaskFiles


def test_task_files_are_sorted_and_always_written(tmp_path):
    p = local_test_pipeline()
    _ = (p | beam.Create([("a.jsonl", ("k2", {"id": 2})), ("a.jsonl", ("k1", {"id": "é"})),
                          ("sub/b.jsonl", ("x", {"id": 3}))])
         | WriteTaskFiles(str(tmp_path), always=["a.jsonl", "empty.jsonl"]))
    p.run().wait_until_finish()
    assert (tmp_path / "a.jsonl").read_text(encoding="utf-8") == \
        json.dumps({"id": "é"}, ensure_ascii=False) + "\n" + json.dumps({"id": 2}) + "\n"
    assert (tmp_path / "sub" / "b.jsonl").read_text(encoding="utf-8") == '{"id": 3}\n'
    assert (tmp_path / "empty.jsonl").read_bytes() == b""
