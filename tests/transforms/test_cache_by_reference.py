"""Big cache values are looked up by reference (issue 28): the join moves an EntryRef,
the value is read where it is used, and one written one row per row group is read alone."""
import os
import pickle
import tempfile
import uuid

import apache_beam as beam
import numpy as np
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tests.beam_testing import local_test_pipeline
from transforms.cache.store import (HITS, MISSES, CacheEntryChanged, EntryRef, LookupCacheStages,
                                    WriteCache, checksum, decode_array, encode_array,
                                    merge_json_dicts, read_entry)

BIG, SMALL = "frame_embedding", "scores"


def _matrix(key: str) -> bytes:
    seed = sum(map(ord, key))
    return encode_array(np.random.default_rng(seed).random((50, 64), np.float32))


def _write(root, stage, entries, run_id, **options):
    p = local_test_pipeline()
    _ = p | beam.Create(entries) | WriteCache(root, stage, run_id, num_shards=1, **options)
    p.run().wait_until_finish()
    (shard,) = [os.path.join(root, stage, name) for name in os.listdir(os.path.join(root, stage))
                if name.startswith(run_id)]
    return shard


def _save(hit, folder):
    with open(os.path.join(folder, f"{uuid.uuid4().hex}.pkl"), "wb") as f:
        pickle.dump((hit[0], hit[2]), f)


def _look_up(root, requests):
    """{(stage, key): what the join gave for it} of the hits, the misses checked."""
    folder = tempfile.mkdtemp(dir=os.path.dirname(root))
    p = local_test_pipeline()
    out = p | beam.Create(requests) | LookupCacheStages(root, {BIG: None, SMALL: merge_json_dicts},
                                                        by_reference=(BIG,))
    _ = out[HITS] | beam.Map(_save, folder)
    assert_that(out[MISSES] | beam.MapTuple(lambda key, _: key),
                equal_to([key for key, _ in requests if key[1] == "absent"]))
    p.run().wait_until_finish()
    found = {}
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), "rb") as f:
            key, value = pickle.load(f)
        found[key] = value
    return found


def test_a_big_value_hits_as_a_reference_that_reads_back_the_value(tmp_path):
    root = str(tmp_path / "cache")
    shard = _write(root, BIG, [(k, _matrix(k)) for k in ("a", "b", "c")], "run-a", rows_per_group=1)
    _write(root, SMALL, [("a", b'{"1":0.5}')], "run-a")
    found = _look_up(root, [((BIG, "a"), "va"), ((BIG, "c"), "vc"), ((BIG, "absent"), "vx"),
                            ((SMALL, "a"), "va")])
    assert found[(SMALL, "a")] == b'{"1":0.5}'  # small values travel as they are
    for key in ("a", "c"):
        ref = found[(BIG, key)]
        assert isinstance(ref, EntryRef) and ref.path == shard
        assert ref.checksum == checksum(_matrix(key))
        np.testing.assert_array_equal(decode_array(read_entry(ref)), decode_array(_matrix(key)))


def test_rows_per_group_writes_one_value_per_row_group(tmp_path):
    root = str(tmp_path / "cache")
    keys = [f"k{i}" for i in range(5)]
    one = _write(root, BIG, [(k, _matrix(k)) for k in keys], "one", rows_per_group=1)
    default = _write(root, BIG, [(k, _matrix(k)) for k in keys], "default")
    assert pq.ParquetFile(one).num_row_groups == 5
    assert pq.ParquetFile(default).num_row_groups == 1
    found = _look_up(root, [((BIG, k), k) for k in keys])
    # the same key in both shards: the copy picked is the same on every runner
    assert {found[(BIG, k)].path for k in keys} == {min(one, default)}


def test_a_reference_to_an_entry_that_changed_fails_loudly(tmp_path):
    root = str(tmp_path / "cache")
    shard = _write(root, BIG, [("a", _matrix("a"))], "run-a", rows_per_group=1)
    ref = _look_up(root, [((BIG, "a"), "va")])[(BIG, "a")]
    other = EntryRef(checksum(b"something else"), ref.path, ref.row_group, ref.row)
    with pytest.raises(CacheEntryChanged, match="changed after it was looked up"):
        read_entry(other)
    os.remove(shard)
    with pytest.raises(CacheEntryChanged, match="can no longer be read"):
        read_entry(ref)


def test_a_merged_stage_cannot_be_looked_up_by_reference(tmp_path):
    with pytest.raises(ValueError, match="merge their values"):
        LookupCacheStages(str(tmp_path), {SMALL: merge_json_dicts}, by_reference=(SMALL,))
