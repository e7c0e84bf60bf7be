"""A float a record does not have (issue 44, item 8) is written as its readers give it
back: a float column's as null (mlcroissant, pandas and Hugging Face give None for it; a
NaN there would come back None), a float list's item as NaN (they read a float list as
numbers: a null item comes back NaN); in a TFRecord, which holds no null, NaN.
tests/test_conformance.py reads every sample's croissant.json with mlcroissant and
compares its records with the Parquet rows, NaN as NaN (tests/release/cards/croissant_records.py)."""
import math

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq

from schemas.tfexample import parse_example_bytes, to_example_bytes
from tests.beam_testing import local_test_pipeline
from transforms.io.release import WriteTable

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False),
                    pa.field("score", pa.float64()),                      # may be missing
                    pa.field("mean", pa.float64(), nullable=False),       # declared never missing
                    pa.field("scores", pa.list_(pa.float64()), nullable=False)])


def test_a_missing_float_is_written_as_its_readers_give_it_back(tmp_path):
    rows = [{"id": "a", "score": float("nan"), "mean": float("nan"), "scores": [0.5, float("nan"), None]},
            {"id": "b", "score": 1.5, "mean": 0.5, "scores": []}]
    p = local_test_pipeline()
    _ = p | beam.Create(rows) | WriteTable(str(tmp_path), "t", SCHEMA, lambda row: row, num_shards=1)
    p.run().wait_until_finish()
    table = pq.read_table(tmp_path / "parquet" / "t")
    a, b = sorted(table.to_pylist(), key=lambda r: r["id"])
    assert a["score"] is None and a["scores"][0] == 0.5 and all(math.isnan(v) for v in a["scores"][1:])
    assert math.isnan(a["mean"])   # a column declared never missing is written as given
    assert b == {"id": "b", "score": 1.5, "mean": 0.5, "scores": []}
    assert table.schema.remove_metadata() == SCHEMA   # the declared schema, as it was
    back = parse_example_bytes(to_example_bytes(a, SCHEMA), SCHEMA)
    assert math.isnan(back["score"]) and back["scores"][0] == 0.5 and math.isnan(back["scores"][1])
