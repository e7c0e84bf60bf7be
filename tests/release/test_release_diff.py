import json
import os

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.__main__ import main as pipelines_main
from pipelines.release.diff import (compare_tables, config_changes, diff_releases, previous_version,
                                    render)


def make_release(root, version, config, video_sets, descriptions=None):
    folder = os.path.join(root, "imagecode", version)
    tables = {"video_sets": video_sets}
    if descriptions is not None:
        tables["descriptions"] = descriptions
    for table, rows in tables.items():
        os.makedirs(os.path.join(folder, "parquet", table))
        key = "description_id" if table == "descriptions" else "set_name"
        pq.write_table(pa.table({key: list(rows), "split": list(rows.values())}),
                       os.path.join(folder, "parquet", table, f"{table}-00000-of-00001.parquet"))
    with open(os.path.join(folder, "MANIFEST.json"), "w") as f:
        json.dump({"benchmark": "imagecode", "version": version, "config": config,
                   "counts": {"tables": {t: {} for t in tables}}}, f)
    return folder


def test_config_changes_are_listed_by_dotted_key():
    old = {"mining": {"distance_threshold": 0.35, "set_size": 10}, "seed": 0}
    new = {"mining": {"distance_threshold": 0.3, "set_size": 10}, "seed": 0, "extra": 1}
    assert config_changes(old, new) == [("extra", None, 1), ("mining.distance_threshold", 0.35, 0.3)]


def test_rows_added_removed_and_moved_per_split(tmp_path):
    a = make_release(str(tmp_path), "1.0.0", {}, {"s1": "train", "s2": "train", "s3": "test"})
    b = make_release(str(tmp_path), "1.1.0", {}, {"s1": "train", "s3": "valid", "s4": "test"})
    t = compare_tables(a, b, ["video_sets"])["video_sets"]
    assert t["added"] == ["s4"] and t["removed"] == ["s2"]
    assert t["moved"] == [{"key": "s3", "from": "test", "to": "valid"}]
    assert t["per_split"]["train"] == {"before": 2, "after": 1, "added": 0, "removed": 1,
                                       "changed": 0, "moved_in": 0, "moved_out": 0}
    assert t["per_split"]["test"]["moved_out"] == 1 and t["per_split"]["valid"]["moved_in"] == 1


def test_a_row_that_keeps_its_key_but_not_its_content_is_changed(tmp_path):
    def release(version, frames):
        folder = os.path.join(str(tmp_path), "imagecode", version, "parquet", "video_sets")
        os.makedirs(folder)
        pq.write_table(pa.table({"set_name": ["s1", "s2"], "split": ["train", "test"],
                                 "frame_indices": frames}),
                       os.path.join(folder, "video_sets-00000-of-00001.parquet"))
        return os.path.dirname(os.path.dirname(folder))
    a = release("1.0.0", [[0, 5], [1, 9]])
    b = release("1.1.0", [[0, 4], [1, 9]])
    t = compare_tables(a, b, ["video_sets"])["video_sets"]
    assert t["changed"] == ["s1"] and not t["added"] and not t["removed"] and not t["moved"]
    assert t["per_split"]["train"]["changed"] == 1 and t["per_split"]["test"]["changed"] == 0


def test_render_and_cli(tmp_path, capsys):
    a = make_release(str(tmp_path), "1.0.0", {"mining": {"distance_threshold": 0.35}},
                     {"s1": "train"}, {"s1#0#w1": "train"})
    b = make_release(str(tmp_path), "1.1.0", {"mining": {"distance_threshold": 0.3}},
                     {"s1": "train", "s2": "valid"}, {})
    text = render(diff_releases(a, b))
    assert "`mining.distance_threshold`: 0.35 -> 0.3" in text
    assert "## video_sets\n\n1 added, 0 removed, 0 moved" in text
    assert "## descriptions\n\n0 added, 1 removed" in text
    assert pipelines_main(["imagecode", "diff", a, b]) == 0
    assert "changes since 1.0.0" in capsys.readouterr().out
    assert pipelines_main(["imagecode", "diff", a, str(tmp_path / "nowhere")]) == 2


def test_previous_version_is_the_highest_complete_one_below(tmp_path):
    for v in ("1.0.0", "1.2.0", "1.10.0", "2.0.0"):
        make_release(str(tmp_path), v, {}, {"s": "train"})
    os.makedirs(tmp_path / "imagecode" / "1.9.0")  # no manifest: incomplete, ignored
    bench = str(tmp_path / "imagecode")
    assert previous_version(bench, "1.11.0").endswith("1.10.0")
    assert previous_version(bench, "1.2.0").endswith("1.0.0")
    assert previous_version(bench, "0.1.0") is None
