"""The release diff (pipelines/release/check/diff.py): rows matched by each table's declared key
(never a guessed one), every row of either version counted once, per table and per split."""
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.__main__ import main as pipelines_main
from pipelines.release.check.diff import (DiffError, compare_table, config_changes, diff_releases,
                                          previous_version, render, version_order)

from tests.release.release_files import seal

KEYS = {"video_sets": ["set_name"], "descriptions": ["description_id"]}


def write_table(folder, table, rows):
    os.makedirs(os.path.join(folder, "parquet", table))
    pq.write_table(pa.Table.from_pylist(rows),
                   os.path.join(folder, "parquet", table, f"{table}-00000-of-00001.parquet"))


def make_release(root, version, config, tables, keys=KEYS, built_from=None):
    """A version folder as far as the diff reads it: `tables` {table: rows}, a manifest
    with the config, the tables, (unless `keys` is None) their declared keys and (when
    given) what the release was built from."""
    folder = os.path.join(root, "imagecode", version)
    for table, rows in tables.items():
        write_table(folder, table, rows)
    manifest = {"benchmark": "imagecode", "version": version, "config": config,
                "counts": {"tables": {t: {} for t in tables}}}
    if keys is not None:
        manifest["table_keys"] = {t: keys[t] for t in tables}
    if built_from is not None:
        manifest["built_from"] = built_from
    with open(os.path.join(folder, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f)
    return seal(folder)


def sets(**splits_and_frames):
    """video_sets rows: set name -> (split, frames)."""
    return [{"set_name": name, "split": split, "frames": frames}
            for name, (split, frames) in splits_and_frames.items()]


def assert_adds_up(t):
    c = t["counts"]
    assert c["before"] == c["unchanged"] + c["changed"] + c["moved"] + c["removed"]
    assert c["after"] == c["unchanged"] + c["changed"] + c["moved"] + c["added"]
    for s, n in t["per_split"].items():
        assert n["before"] == n["unchanged"] + n["changed"] + n["moved_out"] + n["removed"], s
        assert n["after"] == n["unchanged"] + n["changed"] + n["moved_in"] + n["added"], s


def test_config_changes_are_listed_by_dotted_key():
    old = {"mining": {"distance_threshold": 0.35, "set_size": 10}, "seed": 0}
    new = {"mining": {"distance_threshold": 0.3, "set_size": 10}, "seed": 0, "extra": 1}
    assert config_changes(old, new) == [("extra", None, 1), ("mining.distance_threshold", 0.35, 0.3)]


def test_every_row_is_unchanged_changed_moved_added_or_removed(tmp_path):
    a = make_release(str(tmp_path), "1.0.0", {}, {"video_sets": sets(
        s1=("train", [1]), s2=("train", [2]), s3=("test", [3]), s5=("test", [5]), s6=("train", [6]))})
    b = make_release(str(tmp_path), "1.1.0", {}, {"video_sets": sets(
        s1=("train", [1]), s3=("valid", [3]), s4=("test", [4]), s5=("test", [50]), s6=("test", [60]))})
    t = compare_table(a, b, "video_sets", ("set_name",))
    assert t["counts"] == {"before": 5, "after": 5, "unchanged": 1, "changed": 1, "moved": 2,
                           "added": 1, "removed": 1}
    assert t["added"] == ["s4"] and t["removed"] == ["s2"] and t["changed"] == ["s5"]
    assert t["moved"] == [{"key": "s3", "from": "test", "to": "valid", "changed": False},
                          {"key": "s6", "from": "train", "to": "test", "changed": True}]
    assert t["per_split"]["train"] == {"before": 3, "after": 1, "unchanged": 1, "changed": 0,
                                       "added": 0, "removed": 1, "moved_in": 0, "moved_out": 1}
    assert t["per_split"]["test"]["moved_out"] == 1 and t["per_split"]["valid"]["moved_in"] == 1
    assert_adds_up(t)


def test_a_composite_key_matches_rows_by_all_its_columns(tmp_path):
    """One example in two split schemes is two rows; neither is taken for the other."""
    keys = {"rounds": ["example_id", "scheme"]}
    old = [{"example_id": "e1", "scheme": "random", "split": "train", "label": 1},
           {"example_id": "e1", "scheme": "zeroshot", "split": "test", "label": 1},
           {"example_id": "e2", "scheme": "random", "split": "dev", "label": 0}]
    new = [{"example_id": "e1", "scheme": "random", "split": "train", "label": 1},
           {"example_id": "e1", "scheme": "zeroshot", "split": "test", "label": 0},
           {"example_id": "e2", "scheme": "zeroshot", "split": "dev", "label": 0}]
    a = make_release(str(tmp_path), "1.0.0", {}, {"rounds": old}, keys)
    b = make_release(str(tmp_path), "1.1.0", {}, {"rounds": new}, keys)
    t = diff_releases(a, b)["tables"]["rounds"]
    assert t["key"] == ["example_id", "scheme"]
    assert t["changed"] == ["e1 / zeroshot"] and t["added"] == ["e2 / zeroshot"]
    assert t["removed"] == ["e2 / random"] and t["counts"]["unchanged"] == 1
    assert_adds_up(t)
    # by the example id alone the rows could not be matched: e1 is two rows
    t = compare_table(a, b, "rounds", ("example_id",))
    assert "more than one row with the key 'e1'" in t["not_compared"]


def test_a_table_without_a_recorded_key_is_counted_never_matched_by_a_guess(tmp_path, capsys):
    """Releases built before keys were recorded: the diff says so and counts the rows per
    split; it does not take some column for the key."""
    a = make_release(str(tmp_path), "1.0.0", {}, {"video_sets": sets(s1=("train", [1]))}, keys=None)
    b = make_release(str(tmp_path), "1.1.0", {}, {"video_sets": sets(s1=("train", [2]),
                                                                      s2=("test", [3]))}, keys=None)
    t = diff_releases(a, b)["tables"]["video_sets"]
    assert t["key"] == [] and "neither release records the table's key" in t["not_compared"]
    assert t["counts"] == {"before": 1, "after": 2} and not (t["added"] or t["changed"])
    assert pipelines_main(["imagecode", "diff", a, b]) == 0
    assert "Key: none recorded. 1 rows before, 2 after; rows not compared: neither release" \
        in capsys.readouterr().out
    # one release that records the key is enough: the newer one's key is the declared one
    c = make_release(str(tmp_path), "1.2.0", {}, {"video_sets": sets(s1=("train", [2]))})
    assert diff_releases(a, c)["tables"]["video_sets"]["changed"] == ["s1"]


def test_rows_that_cannot_be_matched_by_the_new_key_are_reported_not_compared(tmp_path):
    keys = {"video_sets": ["video_id", "set_index"]}
    a = make_release(str(tmp_path), "1.0.0", {}, {"video_sets": sets(s1=("train", [1]))}, keys=None)
    b = make_release(str(tmp_path), "1.1.0", {}, {"video_sets": [
        {"video_id": "v", "set_index": 0, "split": "train"},
        {"video_id": "v", "set_index": 1, "split": "test"}]}, keys)
    diff = diff_releases(a, b)
    t = diff["tables"]["video_sets"]
    assert "has no column video_id, set_index of the key" in t["not_compared"]
    assert t["counts"] == {"before": 1, "after": 2}
    assert t["per_split"] == {"test": {"before": 0, "after": 1}, "train": {"before": 1, "after": 1}}
    assert ("Key: `video_id`, `set_index`. 1 rows before, 2 after; rows not compared: "
            f"{a} has no column video_id, set_index of the key.") in render(diff)


def test_a_sample_release_and_a_real_one_are_counted_never_matched(tmp_path):
    rows = {"video_sets": sets(s1=("train", [1]), s2=("test", [2]))}
    sample = make_release(str(tmp_path), "1.0.0", {}, rows, built_from="sample")
    real = make_release(str(tmp_path), "2.0.0", {}, {"video_sets": sets(s1=("train", [9]))},
                        built_from="inputs")
    t = diff_releases(sample, real)["tables"]["video_sets"]
    assert t["not_compared"] == ("1.0.0 was built from the generated sample and 2.0.0 "
                                 "from real inputs")
    assert t["changed"] == [] and t["counts"] == {"before": 2, "after": 1}
    again = make_release(str(tmp_path), "2.1.0", {}, {"video_sets": sets(s1=("train", [8]))},
                         built_from="inputs")
    assert diff_releases(real, again)["tables"]["video_sets"]["changed"] == ["s1"]


def test_render_and_cli_print_the_same_numbers(tmp_path, capsys):
    a = make_release(str(tmp_path), "1.0.0", {"mining": {"distance_threshold": 0.35}},
                     {"video_sets": sets(s1=("train", [1])),
                      "descriptions": [{"description_id": "s1#0#w1", "split": "train"}]})
    b = make_release(str(tmp_path), "1.1.0", {"mining": {"distance_threshold": 0.3}},
                     {"video_sets": sets(s1=("train", [1]), s2=("valid", [2])),
                      "descriptions": []})
    text = render(diff_releases(a, b))
    assert "`mining.distance_threshold`: 0.35 -> 0.3" in text
    assert ("## video_sets\n\nKey: `set_name`. 1 rows before, 2 after: 1 unchanged, 0 changed "
            "(same key and split, other content), 0 moved between splits, 1 added, 0 removed.") in text
    assert "| valid | 0 | 1 | 0 | 0 | 0 | 0 | 1 | 0 |" in text
    assert "## descriptions\n\nKey: `description_id`. 1 rows before, 0 after" in text
    assert pipelines_main(["imagecode", "diff", a, b]) == 0
    assert capsys.readouterr().out.strip() == text.strip()
    assert pipelines_main(["imagecode", "diff", a, b, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["tables"]["video_sets"]["counts"]["added"] == 1
    assert pipelines_main(["imagecode", "diff", a, str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.startswith("error: not a release (no MANIFEST.json)")


def test_previous_version_is_the_highest_complete_one_below(tmp_path):
    for v in ("1.0.0", "1.2.0", "1.10.0", "2.0.0"):
        make_release(str(tmp_path), v, {}, {"video_sets": sets(s=("train", [1]))})
    os.makedirs(tmp_path / "imagecode" / "1.9.0")  # no manifest: incomplete, ignored
    bench = str(tmp_path / "imagecode")
    assert previous_version(bench, "1.11.0").endswith("1.10.0")
    assert previous_version(bench, "1.2.0").endswith("1.0.0")
    assert previous_version(bench, "0.1.0") is None


def test_versions_are_ranked_as_semver_ranks_them(tmp_path):
    """A pre-release ranks below its release: 1.0.0's previous version is 1.0.0-rc.2,
    never the other way round (the names sort otherwise as text)."""
    semver_order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
                    "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0"]
    assert sorted(reversed(semver_order), key=version_order) == semver_order
    for v in ("1.0.0-rc.2", "1.0.0", "1.0.0-rc.10"):
        make_release(str(tmp_path), v, {}, {"video_sets": sets(s=("train", [1]))})
    bench = str(tmp_path / "imagecode")
    assert previous_version(bench, "1.0.1").endswith("/1.0.0")
    assert previous_version(bench, "1.0.0").endswith("/1.0.0-rc.10")
    assert previous_version(bench, "1.0.0-rc.10").endswith("/1.0.0-rc.2")


def test_releases_of_two_benchmarks_are_not_compared(tmp_path, capsys):
    a = make_release(str(tmp_path), "1.0.0", {}, {"video_sets": sets(s1=("train", [1]))})
    other = os.path.join(str(tmp_path), "vsr", "1.0.0")
    os.makedirs(other)
    with open(os.path.join(other, "MANIFEST.json"), "w") as f:
        json.dump({"benchmark": "vsr", "version": "1.0.0"}, f)
    with pytest.raises(DiffError, match="different benchmarks: imagecode and vsr"):
        diff_releases(a, other)
    assert pipelines_main(["imagecode", "diff", a, other]) == 2
    assert capsys.readouterr().err == "error: different benchmarks: imagecode and vsr\n"
