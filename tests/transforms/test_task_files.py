"""Crowd task files: lines in sort-key order, every `always` file written."""
import json

import apache_beam as beam
import pytest

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


@pytest.mark.slow
def test_csv_task_files_have_a_header_and_the_same_bytes_whatever_the_arrival_order(tmp_path):
    """Tasks that share a sort key are ordered by content, never by arrival; a CSV file
    gets its header, booleans as true/false and lists as JSON."""
    columns = {"t.csv": ("id", "flag", "order"), "t.jsonl": ("id", "flag", "order")}
    tasks = [("k1", {"id": "b", "flag": True, "order": [2, 1]}),
             ("k1", {"id": "a", "flag": False, "order": [1, 2]}),
             ("k0", {"id": "c, quoted", "flag": True, "order": []})]
    written = []
    for n, ordered in enumerate((tasks, list(reversed(tasks)))):
        folder = tmp_path / str(n)
        p = local_test_pipeline(direct_running_mode="multi_processing", direct_num_workers=2)
        _ = (p | beam.Create([(name, t) for t in ordered for name in columns])
             | WriteTaskFiles(str(folder), columns=columns))
        p.run().wait_until_finish()
        written.append(((folder / "t.csv").read_bytes(), (folder / "t.jsonl").read_bytes()))
    assert written[0] == written[1]
    assert written[0][0].decode() == ('id,flag,order\n"c, quoted",true,[]\n'
                                      'a,false,"[1, 2]"\nb,true,"[2, 1]"\n')
    assert [json.loads(line)["id"] for line in written[0][1].decode().splitlines()] == ["c, quoted", "a", "b"]
