"""A release holds no path of the building machine (pipelines/release/write/locations.py,
row_paths.py): paths relative to the release or to the input root the manifest records
once; images the release holds embedded beside their paths; rejects' files and details
relative; a config's paths relative and back. On small hand-made files."""
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import registry
from pipelines.config import load_config, to_dict
from pipelines.release.write.locations import (Relocate, config_paths, input_root, relocated_config,
                                               resolved_config)
from pipelines.release.write.row_paths import MissingImage, RowPaths, relocate_rejects
from schemas.columns import described
from schemas.rejects import REJECT_SCHEMA, Reject, reject_to_row
from tests.release.release_files import machine_paths

SCHEMA = described(pa.schema([pa.field("id", pa.string()), pa.field("split", pa.string()),
                              pa.field("image_paths", pa.list_(pa.string())),
                              pa.field("source", pa.string())]),
                   {"id": "the id", "split": "the split", "image_paths": "images in the release",
                    "source": "the input file"},
                   images={"image_paths": "images"}, input_paths=("source",))


def test_the_input_root_holds_every_local_input_and_nothing_else():
    assert input_root(["/data/coco/val/a.jpg", "/data/coco/captions.json",
                       "/data/coco/pool/*.jpg", "gs://bucket/x.json", "", None]) == "/data/coco"
    assert input_root(["/data/a/x.json", "/data/b/y.json"]) == "/data"
    # paths in the release do not pull the root up to their folder
    assert input_root(["/data/a/x.json", "/out/v/.1.staging-9/compat/y"],
                      release_dirs=["/out/v/.1.staging-9"]) == "/data/a"
    assert input_root(["https://example.org/a.jpg"]) is None


def test_paths_and_texts_are_written_relative():
    relocate = Relocate("/data/coco", release_dirs=["/out/vsr/.1.0.0.staging-ab", "/out/vsr/1.0.0"])
    assert relocate.path("/data/coco/val2014/x.jpg") == "val2014/x.jpg"
    assert relocate.path("/out/vsr/.1.0.0.staging-ab/compat/a.jpg") == "compat/a.jpg"
    assert relocate.path("/elsewhere/z.jpg") == "/elsewhere/z.jpg"   # outside both: as given
    assert relocate.path("http://images.cocodataset.org/x.jpg") == "http://images.cocodataset.org/x.jpg"
    text = ("/data/coco/x.json: line 3 names /data/coco/val/y.jpg (see "
            "/out/vsr/1.0.0/compat/z.jpg); http://host/data/coco/w.jpg and /data/cocoa/q stay")
    assert relocate.text(text) == ("x.json: line 3 names val/y.jpg (see compat/z.jpg); "
                                   "http://host/data/coco/w.jpg and /data/cocoa/q stay")
    assert relocate.from_release("/out/.cache", "/out/vsr/1.0.0") == "../../.cache"


def test_a_root_of_slash_makes_paths_relative_without_touching_urls():
    relocate = Relocate("/", [])
    assert relocate.path("/data/x.json") == "data/x.json"
    assert relocate.text("read /data/x.json, see https://a.org/b 1/2") == \
        "read data/x.json, see https://a.org/b 1/2"


@pytest.mark.parametrize("name", registry.names())
def test_every_config_relocates_and_resolves_back(name, tmp_path):
    """The manifest's config holds its paths relative; calibrate-like commands resolve
    them back to the very same config."""
    benchmark = registry.load(name)
    for config_name in benchmark.config_names():
        try:
            config = load_config(benchmark.config_path(config_name), [], benchmark.config_type)
        except Exception:   # a paper config that waits for the user's inputs
            continue
        paths = config_paths(config)
        root = input_root(paths) or "/"
        release = str(tmp_path / "out" / name / "1.0.0")
        moved = relocated_config(config, Relocate(root, [release]), release)
        text = json.dumps(moved)
        assert not any(p in text for p in paths if p and os.path.isabs(p)), config_name
        back = resolved_config(json.loads(text), benchmark.config_type, root, release)
        assert json.dumps(back, sort_keys=True) == json.dumps(to_dict(config), sort_keys=True,
                                                               default=list), config_name


def _write(folder, name, rows, schema):
    os.makedirs(folder, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), os.path.join(folder, name),
                   compression="snappy")


def test_rows_get_input_paths_relative_and_images_embedded(tmp_path):
    release = tmp_path / "release"
    (release / "compat").mkdir(parents=True)
    (release / "compat" / "a.jpg").write_bytes(b"jpeg a")
    (release / "compat" / "b.jpg").write_bytes(b"jpeg b")
    rows = RowPaths(SCHEMA, str(release), Relocate("/data", [str(release)]))
    assert rows.released_schema.names == ["id", "split", "image_paths", "images", "source"]
    batch = pa.RecordBatch.from_pylist([{"id": "1", "split": "train", "source": "/data/x/in.json",
                                         "image_paths": ["compat/a.jpg", "compat/b.jpg"]}],
                                       schema=SCHEMA)
    out = rows(batch).to_pylist()[0]
    assert out["source"] == "x/in.json"
    assert out["images"] == [{"bytes": b"jpeg a", "path": "compat/a.jpg"},
                             {"bytes": b"jpeg b", "path": "compat/b.jpg"}]
    missing = pa.RecordBatch.from_pylist([{"id": "2", "split": "train", "source": "",
                                           "image_paths": ["compat/none.jpg"]}], schema=SCHEMA)
    with pytest.raises(MissingImage, match="compat/none.jpg"):
        rows(missing)


def test_rejects_name_their_files_relative_and_the_scan_finds_what_is_left(tmp_path):
    release = tmp_path / "release"
    rejects = [Reject("read", "line", "bad_json", "/data/in.jsonl:3", detail="/data/in.jsonl: bad",
                      file="/data/in.jsonl", line=3),
               Reject("embed", "image", "unreadable_image", "/elsewhere/x.jpg",
                      detail="cannot read /elsewhere/x.jpg")]
    _write(str(release / "rejects"), "rejects-00000-of-00001.parquet",
           [reject_to_row(r) for r in rejects], REJECT_SCHEMA)
    before = machine_paths(str(release), ["/data", "/elsewhere"])
    assert sorted(before) == [("rejects/rejects-00000-of-00001.parquet", "/data"),
                              ("rejects/rejects-00000-of-00001.parquet", "/elsewhere")]
    relocate_rejects(str(release), Relocate("/data", [str(release)]))
    rows = pq.read_table(str(release / "rejects")).to_pylist()
    assert [(r["item_id"], r["file"], r["detail"]) for r in rows][0] == \
        ("in.jsonl:3", "in.jsonl", "in.jsonl: bad")
    assert os.listdir(release / "rejects") == ["rejects-00000-of-00001.parquet"]
    # what lies outside the input root is left as it is, and the scan says so
    assert machine_paths(str(release), ["/data", "/elsewhere"]) == \
        [("rejects/rejects-00000-of-00001.parquet", "/elsewhere")]
