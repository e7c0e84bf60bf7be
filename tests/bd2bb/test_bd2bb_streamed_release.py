"""The public layout and the target positions, made from sorted runs instead of one
gathered list (pipelines/bd2bb/release.py, positions.py): the same bytes and positions as
the whole collection in memory gives."""
import csv
import io
import json

import apache_beam as beam

from pipelines.bd2bb import compat
from pipelines.bd2bb.compat import COMPAT_JSON, JsonObjectWriter, compat_item
from pipelines.bd2bb.decoys import shuffle
from pipelines.bd2bb.positions import BalancePositions, balance
from pipelines.bd2bb.records import BD2BBTuple, Datapoint, Sample
from pipelines.bd2bb.release import write_numbered
from tests.beam_testing import local_test_pipeline


def _sample(i: int, split: str, hard: bool = False) -> Sample:
    sid = f"s{i:04d}"
    endings, types, label = shuffle(0, sid, f"target {i}", ["L1", "L2"], ["V1", "V2"])
    d = Datapoint(BD2BBTuple(sid, f"COCO_train2014_{i:012d}.jpg", f"want \"{i}\"\nnaïve", f"act {i}"))
    return Sample(sid, d, tuple(endings), tuple(types), label, split, hard)


def _samples():
    return ([_sample(i, "train") for i in range(0, 30, 3)] + [_sample(i, "val") for i in range(1, 30, 3)]
            + [_sample(i, "test", hard=i % 2 == 0) for i in range(2, 30, 3)])


def test_the_json_writer_gives_json_dumps_bytes():
    whole = {"1": [{"a": {"x": "line\nbreak ü", "n": [1, 2, {"deep": []}]}}], "2": [], "10": [{}]}
    out = io.StringIO()
    writer = JsonObjectWriter(out)
    for key, value in whole.items():
        writer.write(key, value)
    writer.close()
    assert out.getvalue() == json.dumps(whole, indent=1, ensure_ascii=False)
    empty = io.StringIO()
    JsonObjectWriter(empty).close()
    assert empty.getvalue() == json.dumps({}, indent=1)


def test_the_public_layout_numbers_by_sample_id_and_every_file_keeps_those_numbers(tmp_path):
    samples = _samples()
    ordered = sorted(samples, key=lambda s: s.sample_id)
    write_numbered(iter(ordered), str(tmp_path))
    numbered = list(enumerate(ordered, 1))
    expected = {"all": numbered, "hard": [(i, s) for i, s in numbered if s.hard_test]}
    for split in ("train", "val", "test"):
        expected[split] = [(i, s) for i, s in numbered if s.split == split]
    for name, rows in expected.items():
        text = (tmp_path / compat.FILES[name]).read_text(encoding="utf-8")
        assert text == compat.csv_text(compat.to_row(i, s) for i, s in rows), name
        assert len(list(csv.DictReader(io.StringIO(text)))) == len(rows) > 0
    whole = {str(i): compat_item(s) for i, s in numbered}
    assert (tmp_path / COMPAT_JSON).read_text(encoding="utf-8") == json.dumps(whole, indent=1, ensure_ascii=False)


def test_positions_dealt_from_sorted_runs_equal_the_in_memory_balance(tmp_path):
    samples = _samples()
    out = tmp_path / "placed.json"
    with local_test_pipeline() as p:
        _ = (p | beam.Create(samples[::-1])
             | BalancePositions(7, str(tmp_path / "runs"))
             | beam.Map(lambda s: (s.sample_id, list(s.endings), s.label))
             | beam.combiners.ToList()
             | beam.Map(lambda rows: out.write_text(json.dumps(sorted(rows)))))
    expected = sorted((s.sample_id, list(s.endings), s.label) for s in balance(7, samples))
    assert [tuple(r) for r in json.loads(out.read_text())] == expected
    assert not (tmp_path / "runs").exists()   # the runs are removed once merged
