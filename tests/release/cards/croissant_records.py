"""A release's croissant.json read back with mlcroissant (the reference reader of
MLCommons Croissant) and compared with its Parquet rows: what tests/test_conformance.py
checks for every sample."""
import io
import json
import math
import os

import pyarrow.parquet as pq
from PIL import Image

# The one recommendation a release leaves out on purpose: a date would make two builds of
# the same config differ (pipelines/release/cards/croissant.py).
ACCEPTED_WARNING = "datePublished"
# NaN, as compared: equal to NaN and to nothing else. mlcroissant gives None for a float
# column's NaN and NaN for a float list's null item, so a release that wrote either would
# read back otherwise than its rows (transforms/io/release.py writes each as it reads back).
NAN = "NaN"


def load(release: str):
    """The mlcroissant Dataset of a release, and its validation issues (errors, warnings)."""
    import mlcroissant   # requirements-dev.txt: never skipped
    dataset = mlcroissant.Dataset(os.path.join(release, "croissant.json"))
    return dataset, dataset.metadata.issues


def plain(value):
    """A value as mlcroissant yields it, as pyarrow would: text decoded, an image as its
    pixels, a list or sub-fields likewise; NaN as NAN."""
    if isinstance(value, float) and math.isnan(value):
        return NAN
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, Image.Image):
        return ("pixels", value.mode, value.size, value.tobytes())
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k.rsplit("/", 1)[-1]: plain(v) for k, v in value.items()}
    if hasattr(value, "item"):   # a numpy scalar
        return value.item()
    return value


def from_parquet(value, image_members=False):
    """A Parquet value as compared: NaN as NAN (never as None: a reader that turns it into
    None does not give the rows back), an embedded image's bytes as its decoded pixels."""
    if isinstance(value, float) and math.isnan(value):
        return NAN
    if isinstance(value, list):
        return [from_parquet(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"bytes", "path"}:
            with Image.open(io.BytesIO(value["bytes"])) as image:
                return {"bytes": ("pixels", image.mode, image.size, image.tobytes()),
                        "path": value["path"]}
        return {k: from_parquet(v) for k, v in value.items()}
    return value


def compare_table(dataset, release: str, table: str, key, limit: int = 0) -> int:
    """Assert that the records mlcroissant reads of `table` are its Parquet rows, matched
    by the table's key (every row, or the first `limit` records read); returns how many
    were compared."""
    rows = pq.read_table(os.path.join(release, "parquet", table)).to_pylist()
    by_key = {tuple(row[c] for c in key): row for row in rows}
    assert len(by_key) == len(rows), table
    seen = 0
    for record in dataset.records(table):
        record = {name.split("/", 1)[1]: plain(value) for name, value in record.items()}
        row = by_key.pop(tuple(record[c] for c in key))
        assert record == {c: from_parquet(v) for c, v in row.items()}, (table, key)
        seen += 1
        if limit and seen == limit:
            return seen
    assert not by_key, f"{table}: {len(by_key)} Parquet rows that croissant.json does not read"
    return seen


def file_objects(release: str) -> dict:
    """{contentUrl: sha256} of the FileObjects croissant.json lists."""
    with open(os.path.join(release, "croissant.json"), encoding="utf-8") as f:
        doc = json.load(f)
    return {node["contentUrl"]: node["sha256"] for node in doc["distribution"]
            if node["@type"] == "cr:FileObject"}
