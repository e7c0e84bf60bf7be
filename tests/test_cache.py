import glob
import json
import os

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines import cache as cache_cli
from pipelines.release.write import assemble as release_build
from pipelines.release.write import runs
from tests.beam_testing import local_test_pipeline
from transforms.cache.store import (CACHE_SCHEMA, HITS, MISSES, LookupCache, LookupCacheStages,
                                    WriteCache, cache_key, checksum, decode_array, decode_json,
                                    encode_array, encode_json, has_entries, merge_json_dicts,
                                    relative_cache_path)
from transforms.core.stage import read_stage_counts, reconcile

STAGE = "embed"


def _value(key: str) -> bytes:
    return f"value-of-{key}".encode()


def _write(root, keys, run_id, num_shards=1, stage=STAGE):
    p = local_test_pipeline()
    names = (p | beam.Create([(k, _value(k)) for k in keys])
             | WriteCache(root, stage, run_id, num_shards=num_shards))
    expected = [os.path.join(root, stage, f"{run_id}-{i:05d}-of-{num_shards:05d}.parquet")
                for i in range(num_shards)]
    assert_that(names, equal_to(expected))
    p.run().wait_until_finish()
    return expected


def _expect(root, keys, hits, stage=STAGE, **options):
    """Look `keys` up; assert exactly `hits` hit; return the cache counters."""
    p = local_test_pipeline(**options)
    out = p | beam.Create([(k, {"item": k}) for k in keys]) | LookupCache(root, stage)
    assert_that(out[HITS], equal_to([(k, {"item": k}, _value(k)) for k in hits]), label="hits")
    assert_that(out[MISSES], equal_to([(k, {"item": k}) for k in keys if k not in hits]),
                label="misses")
    run = p.run()
    run.wait_until_finish()
    counts = read_stage_counts(run).get(f"cache.{stage}", {})
    assert reconcile({stage: counts}) == []
    return counts


# --- keys and values -------------------------------------------------------------------

def test_key_is_stable_and_each_part_changes_it():
    base = ("embed", "ab" * 32, "open_clip:ViT-B-32@sha256:123", {"size": 224, "norm": True})
    key = cache_key(*base)
    assert key == cache_key("embed", "ab" * 32, "open_clip:ViT-B-32@sha256:123",
                            {"norm": True, "size": 224})  # dict order does not matter
    assert len(key) == 64 and int(key, 16) >= 0
    variants = [("shots",) + base[1:], (base[0], "cd" * 32) + base[2:],
                base[:2] + ("open_clip:ViT-B-32@sha256:456", base[3]),
                base[:3] + ({"size": 336, "norm": True},)]
    assert len({cache_key(*v) for v in variants} | {key}) == 5


def test_value_helpers_round_trip():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = decode_array(encode_array(a))
    assert b.dtype == a.dtype and np.array_equal(a, b)
    assert decode_json(encode_json({"b": [1, 2], "a": "x"})) == {"a": "x", "b": [1, 2]}
    assert encode_json({"b": 1, "a": 2}) == encode_json({"a": 2, "b": 1})


# --- write and lookup ------------------------------------------------------------------

def test_written_entries_hit_and_others_miss(tmp_path):
    root = str(tmp_path / "cache")
    files = _write(root, ["k1", "k2", "k3"], "run-a", num_shards=2)
    assert relative_cache_path(root, files[0]) == "embed/run-a-00000-of-00002.parquet"
    assert not glob.glob(os.path.join(root, STAGE, "beam-temp-*"))  # temp folder cleaned up
    counts = _expect(root, ["k1", "k3", "k9", "k9"], hits=["k1", "k3"])
    assert counts == {"hit": 2, "item.in": 4, "item.out": 4, "miss": 2}


def test_a_failed_write_leaves_no_visible_shard(tmp_path):
    # The Parquet writer fails on a non-string key, after Beam made its temp folder:
    # nothing may appear where LookupCache looks (`<stage>/*.parquet`).
    root = str(tmp_path / "cache")
    p = local_test_pipeline()
    _ = p | beam.Create([("k1", b"v"), (5, b"v")]) | WriteCache(root, STAGE, "run-x")
    with pytest.raises(Exception):
        p.run().wait_until_finish()
    assert not glob.glob(os.path.join(root, STAGE, "*.parquet"))


def test_reusing_a_run_id_is_refused(tmp_path):
    root = str(tmp_path / "cache")
    _write(root, ["k1"], "run-a")
    with pytest.raises(FileExistsError):
        _write(root, ["k2"], "run-a")


def test_missing_stage_folder_means_all_misses(tmp_path):
    counts = _expect(str(tmp_path / "nothing"), ["k1", "k2"], hits=[])
    assert counts["miss"] == 2 and "corrupt" not in counts


def test_a_cold_cache_misses_without_a_join_and_counts_as_the_join_would(tmp_path):
    cold, warm = str(tmp_path / "cold"), str(tmp_path / "warm")
    _write(warm, ["other"], "run-a")   # a shard, of no key asked for: the join runs
    assert not has_entries(cold, [STAGE]) and has_entries(warm, [STAGE])
    p = local_test_pipeline()
    _ = p | beam.Create([("k1", 1)]) | LookupCache(cold, STAGE)
    labels = {t.unique_name for t in p.to_runner_api().components.transforms.values()}
    assert not any("Group" in label or "Match" in label for label in labels)
    keys = ["k1", "k2", "k2"]
    assert _expect(cold, keys, hits=[]) == _expect(warm, keys, hits=[]) == {
        "item.in": 3, "item.out": 3, "miss": 3}


def _expect_stages(root, requests, hits):
    """LookupCacheStages on ((stage, key), item) requests; returns every stage's counters."""
    p = local_test_pipeline()
    merges = {"shots": None, "scores": merge_json_dicts}
    out = p | beam.Create(requests) | LookupCacheStages(root, merges)
    assert_that(out[HITS], equal_to(hits), label="hits")
    assert_that(out[MISSES], equal_to([r for r in requests
                                       if r[0] not in {h[0] for h in hits}]), label="misses")
    run = p.run()
    run.wait_until_finish()
    counts = read_stage_counts(run)
    return {stage: counts.get(f"cache.{stage}", {}) for stage in merges}


def test_several_stages_are_looked_up_in_one_join_with_each_stage_counted(tmp_path):
    root = str(tmp_path / "cache")
    requests = [(("shots", "k1"), "v1"), (("shots", "k2"), "v2"), (("scores", "k1"), "v1")]
    cold = _expect_stages(root, requests, hits=[])
    assert cold == {"shots": {"item.in": 2, "item.out": 2, "miss": 2},
                    "scores": {"item.in": 1, "item.out": 1, "miss": 1}}
    _write(root, ["k1"], "run-a", stage="shots")
    for run_id, value in (("run-a", b'{"1":0.5}'), ("run-b", b'{"2":0.7}')):
        p = local_test_pipeline()
        _ = p | beam.Create([("k1", value)]) | WriteCache(root, "scores", run_id)
        p.run().wait_until_finish()
    warm = _expect_stages(root, requests, hits=[
        (("shots", "k1"), "v1", _value("k1")),
        (("scores", "k1"), "v1", b'{"1":0.5,"2":0.7}')])  # every run's scores merged
    assert warm == {"shots": {"hit": 1, "item.in": 2, "item.out": 2, "miss": 1},
                    "scores": {"hit": 1, "item.in": 1, "item.out": 1}}


def test_truncated_shard_becomes_misses(tmp_path):
    root = str(tmp_path / "cache")
    _write(root, ["k1", "k2"], "run-a")
    (bad,) = _write(root, ["k3", "k4"], "run-b")
    with open(bad, "r+b") as f:
        f.truncate(os.path.getsize(bad) // 2)
    counts = _expect(root, ["k1", "k2", "k3", "k4"], hits=["k1", "k2"])
    assert counts["corrupt"] > 0 and counts["miss"] == 2


def test_row_with_bad_checksum_is_a_miss(tmp_path):
    root = str(tmp_path / "cache")
    os.makedirs(os.path.join(root, STAGE))
    rows = {"key": ["good", "bad"], "value": [_value("good"), b"tampered"],
            "checksum": [checksum(_value("good")), checksum(_value("bad"))]}
    pq.write_table(pa.Table.from_pydict(rows, schema=CACHE_SCHEMA),
                   os.path.join(root, STAGE, "hand-00000-of-00001.parquet"))
    counts = _expect(root, ["good", "bad"], hits=["good"])
    assert counts["corrupt"] == 1


def test_two_runs_with_the_same_key_give_one_hit(tmp_path):
    root = str(tmp_path / "cache")
    _write(root, ["k1", "k2"], "run-a")
    _write(root, ["k2"], "run-b")
    counts = _expect(root, ["k2"], hits=["k2"])
    assert counts["hit"] == 1


def test_multi_process_runner_gives_the_same_result(tmp_path):
    root = str(tmp_path / "cache")
    _write(root, ["k1", "k2", "k3"], "run-a", num_shards=2)
    _write(root, ["k3"], "run-b")
    _expect(root, ["k1", "k3", "k7"], hits=["k1", "k3"],
            direct_running_mode="multi_processing", direct_num_workers=2)


# --- prune -----------------------------------------------------------------------------

@pytest.mark.parametrize("record", ["BUILD.json", "MANIFEST.json"])
def test_prune_keeps_referenced_shards_only(tmp_path, capsys, record):
    """A release's build record (BUILD.json; MANIFEST.json for a release built before
    builds kept one apart) names the shards its build read or wrote."""
    root, out = str(tmp_path / "out" / ".cache"), str(tmp_path / "out")
    kept = _write(root, ["k1"], "run-a")
    dropped = _write(root, ["k2"], "run-b", num_shards=2)
    release = tmp_path / "out" / "imagecode" / "1.0.0"
    release.mkdir(parents=True)
    (release / record).write_text(
        json.dumps({"version": "1.0.0", "cache_files": [relative_cache_path(root, kept[0])]}))

    args = ["prune", "--cache", root, "--releases", out]
    assert cache_cli.main(args + ["--dry-run"]) == 0
    assert "would remove 2 shard(s) or temp or staging folder(s)" in capsys.readouterr().out
    assert all(os.path.exists(f) for f in kept + dropped)

    assert cache_cli.main(args) == 0
    printed = capsys.readouterr().out
    freed = int(printed.rsplit(", ", 1)[1].split()[0])
    assert freed > 0 and all(f"removed {f}" in printed for f in dropped)
    assert os.path.exists(kept[0]) and not any(os.path.exists(f) for f in dropped)
    assert os.listdir(os.path.join(root, runs.CACHE_RUNS_DIR)) == []   # its own lock is gone
    _expect(root, ["k1", "k2"], hits=["k1"])


@pytest.mark.parametrize("holder", ["this-host", "another-host"])
def test_prune_refuses_to_run_while_a_build_uses_the_cache(tmp_path, capsys, holder):
    """Issue 45: `cache prune` during a build removed the shards that build was reading
    (no release names them until it publishes). A build's live lock in <cache>/.runs/ (or
    one taken on another host, which may be alive) stops prune in one line, exit 2, with
    nothing removed."""
    root, out = str(tmp_path / "out" / ".cache"), str(tmp_path / "out")
    read_by_the_build = _write(root, ["k1"], "run-a")
    os.makedirs(out, exist_ok=True)
    lock = runs.cache_lock_path(root, "imagecode-running")
    os.makedirs(os.path.dirname(lock))
    runs.write_lock(lock)
    if holder == "another-host":
        with open(lock, "w") as f:
            json.dump({**runs.this_process(), "host": "another-host"}, f)
    assert cache_cli.main(["prune", "--cache", root, "--releases", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: a build is using the cache {root} (pid ") and err.count("\n") == 1, err
    assert all(os.path.exists(f) for f in read_by_the_build)
    assert os.listdir(os.path.dirname(lock)) == [os.path.basename(lock)]   # prune's own lock gone


def test_a_build_refuses_to_start_while_prune_runs(tmp_path):
    from pipelines.release.write.assemble import ReleaseError
    root = str(tmp_path / "cache")
    with cache_cli.pruning(root):
        with pytest.raises(ReleaseError, match="cache prune is running on"):
            release_build.build_release(benchmark="demo", out=str(tmp_path / "out"), version="1.0.0",
                                        config=None, execute=lambda staging: None, models={}, inputs={},
                                        tables={}, describe=lambda facts: {}, cache_root=root)
    assert not os.path.exists(tmp_path / "out" / "demo" / "1.0.0")
    assert os.listdir(os.path.join(root, runs.CACHE_RUNS_DIR)) == []
