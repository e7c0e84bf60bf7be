"""Every release table declares its key (pipelines/release/write/tables.py): a table without
one is an error of the contract before any work, and a key that does not identify the
written rows fails the build before a version exists. tests/test_conformance.py checks
every registered benchmark's declarations on its samples."""
import dataclasses
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.release.write import assemble as release
from pipelines.release.write.tables import ContractError, Table, declared, key_problems, key_text


def test_a_table_names_one_key_column_or_more():
    assert Table("s", "c.out", key="id").key == ("id",)
    assert Table("s", "c.out", key=["example_id", "scheme"]).key == ("example_id", "scheme")
    for bad in ((), "", ("id", "id"), ("id", 3), None):
        with pytest.raises(ContractError):
            Table("s", "c.out", key=bad)
    with pytest.raises(TypeError):   # no key at all: the dataclass wants one
        Table("s", "c.out")


def test_a_table_declared_without_a_key_is_a_contract_error_naming_it():
    assert declared({"sets": Table("s", "set.out", key="set")}) == {"sets": Table("s", "set.out", "set")}
    with pytest.raises(ContractError, match="table 'sets' is declared as \\('s', 'set.out'\\)"):
        declared({"sets": ("s", "set.out")})


@dataclasses.dataclass
class DemoConfig:
    seed: int = 0


def test_the_release_refuses_an_undeclared_key_before_any_work(tmp_path):
    ran = []
    with pytest.raises(ContractError):
        release.build_release(benchmark="demo", out=str(tmp_path / "out"), version="1.0.0",
                              config=DemoConfig(), execute=ran.append, models={}, inputs={},
                              tables={"sets": ("s", "set.out")}, describe=lambda facts: {})
    assert ran == [] and not (tmp_path / "out").exists()


def _table(folder, rows):
    os.makedirs(folder / "parquet" / "sets")
    pq.write_table(pa.Table.from_pylist(rows), folder / "parquet" / "sets" / "train-00000-of-00001.parquet")


def test_a_key_that_two_rows_share_or_the_table_lacks_is_a_problem(tmp_path):
    _table(tmp_path, [{"video": "v", "shot": 0, "split": "train", "frames": [1]},
                      {"video": "v", "shot": 1, "split": "train", "frames": [2]},
                      {"video": "v", "shot": 1, "split": "train", "frames": [3]}])
    assert key_problems(str(tmp_path), {"sets": Table("s", "c", ("video", "split", "shot"))}) == [
        "parquet/sets/: 1 value(s) of its key (video, split, shot) name more than one row, "
        "e.g. 'v / train / 1' (2 rows)"]
    assert key_problems(str(tmp_path), {"sets": Table("s", "c", ("video", "set_name"))}) == [
        "parquet/sets/ has no column set_name of its declared key (video, set_name)"]
    assert "holds lists or maps" in key_problems(str(tmp_path), {"sets": Table("s", "c", "frames")})[0]
    assert key_problems(str(tmp_path), {"sets": Table("s", "c", ("frames", "video"))})
    assert key_problems(str(tmp_path), {"absent": Table("s", "c", "id")}) == []


def test_a_composite_key_reads_as_its_values():
    assert key_text(("e1", "zeroshot")) == "e1 / zeroshot" and key_text((7,)) == "7"
