"""transforms/vectors/knn.py: the torch backend returns exactly what FAISS returns (ids
and distances, bit for bit), with ties, duplicates and exclude_self; one FlatSearch is
reused across databases; the device keys are checked; the float32 error is measured."""
import numpy as np
import pytest

from transforms.vectors.knn import (FlatSearch, KnnConfigError, KnnSpec, _REL_TOL, float32_error_bound,
                                    knn_identity, resolve_knn_device, shard_topk)

FAISS, TORCH = KnnSpec("faiss", "cpu"), KnnSpec("torch", "cpu")


def unit_vectors(n, d, seed):
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def both(queries, query_ids, database, ids, k, exclude_self):
    return [shard_topk(queries, query_ids, database, ids, k, exclude_self, FlatSearch(spec))
            for spec in (FAISS, TORCH)]


@pytest.mark.parametrize("exclude_self", [True, False])
def test_torch_equals_faiss_on_random_unit_vectors(exclude_self):
    database = unit_vectors(3000, 64, 0)
    ids = [f"{j:05d}" for j in range(len(database))]
    queries, query_ids = database[::7], ids[::7]
    faiss_lists, torch_lists = both(queries, query_ids, database, ids, 9, exclude_self)
    assert torch_lists == faiss_lists
    assert all(len(row) == 9 for row in torch_lists)
    assert all(q not in {i for _, i in row} for q, row in zip(query_ids, torch_lists)) == exclude_self


@pytest.mark.parametrize("exclude_self", [True, False])
def test_torch_equals_faiss_with_ties_and_duplicates(exclude_self):
    """Integer grid vectors: many identical rows and equal distances; more duplicates of
    one vector than k + slack, so the search must widen to see them all."""
    rng = np.random.default_rng(1)
    database = rng.integers(0, 3, (400, 4)).astype(np.float32)
    database[:60] = database[0]
    ids = [f"img{j:03d}" for j in range(len(database))]
    queries, query_ids = database[::5], ids[::5]
    faiss_lists, torch_lists = both(queries, query_ids, database, ids, 12, exclude_self)
    assert torch_lists == faiss_lists
    assert any(len({d for d, _ in row}) < 12 for row in faiss_lists)   # the data really ties


def test_one_search_reused_across_databases_gives_what_a_fresh_one_gives():
    groups = [unit_vectors(500 + 100 * g, 32, 10 + g) for g in range(3)]
    queries = unit_vectors(40, 32, 99)
    query_ids = [f"q{j}" for j in range(len(queries))]
    for spec in (FAISS, TORCH):
        reused = FlatSearch(spec)
        for group in groups:
            ids = [f"{j:04d}" for j in range(len(group))]
            assert (shard_topk(queries, query_ids, group, ids, 5, False, reused)
                    == shard_topk(queries, query_ids, group, ids, 5, False, FlatSearch(spec)))


def test_torch_blocks_of_queries_give_the_same_lists(monkeypatch):
    """A tiny distance budget makes the torch search run one query at a time: its float32
    distances round differently from the whole batch's (as FAISS's do), the lists do not."""
    import transforms.vectors.knn as knn
    database, queries = unit_vectors(800, 16, 3), unit_vectors(30, 16, 4)
    ids, query_ids = [f"{j:04d}" for j in range(800)], [f"q{j}" for j in range(30)]
    expected = shard_topk(queries, query_ids, database, ids, 10, False, FlatSearch(TORCH))
    monkeypatch.setitem(knn._TORCH_BLOCK_BYTES, "cpu", 1)
    one_at_a_time = FlatSearch(TORCH)
    one_at_a_time.load(database)
    squared, _ = one_at_a_time.search(queries, 10)
    assert squared.shape == (30, 10) and np.all(np.diff(squared, axis=1) >= 0)
    assert shard_topk(queries, query_ids, database, ids, 10, False, one_at_a_time) == expected


def test_the_float32_error_is_measured_and_within_the_assumed_bound():
    database, queries = unit_vectors(2000, 512, 5), unit_vectors(50, 512, 6)
    for spec in (FAISS, TORCH):
        search = FlatSearch(spec)
        search.load(database)
        squared, rows = search.search(queries, 20)
        error = float32_error_bound(queries, database, squared, rows)
        assert 0 < error < _REL_TOL


def test_device_keys_are_checked():
    with pytest.raises(KnnConfigError, match="knn.backend"):
        KnnSpec("annoy", "cpu")
    with pytest.raises(KnnConfigError, match="knn.device"):
        KnnSpec("torch", "gpu")
    import torch
    if not torch.cuda.is_available():
        with pytest.raises(KnnConfigError, match="knn.device is 'cuda'"):
            resolve_knn_device(KnnSpec("torch", "cuda"))
        assert knn_identity(KnnSpec("torch", "auto"))["device"] == "cpu"
    identity = knn_identity(FAISS)
    assert identity["backend"] == "faiss" and identity["faiss_version"] and identity["device"] == "cpu"
