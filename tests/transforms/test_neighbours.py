"""transforms/vectors/knn.py: sharded exact kNN == one flat FAISS index over everything.

The tie tests use small integer vectors: their float32 squared distances are exact, so
one faiss.IndexFlatL2 over everything, fully ranked by (distance, id), is an
unambiguous reference, and ties (equal distances, identical vectors) are everywhere.
"""
import apache_beam as beam
import faiss
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from schemas.records import ImageEmbedding
from tests.beam_testing import local_test_pipeline
from transforms.vectors.knn import ShardedExactKnn, merge_topk, shard_of, shard_topk


def flat_reference(queries, query_ids, database, db_ids, k, exclude_self):
    """One exact faiss.IndexFlatL2 over the whole database, every row ranked, ordered by
    (distance, id), the query's own id left out when asked, cut to k."""
    index = faiss.IndexFlatL2(database.shape[1])
    index.add(database)
    squared, rows = index.search(queries, len(database))
    return [sorted((float(np.sqrt(np.float64(s))), db_ids[i]) for s, i in zip(squared[r], rows[r])
                   if not (exclude_self and db_ids[i] == query_ids[r]))[:k]
            for r in range(len(queries))]


def grid(n, d=4, seed=0):
    """n vectors with coordinates in {0, 1, 2}: many exact duplicates and equal distances."""
    vectors = np.random.default_rng(seed).integers(0, 3, (n, d)).astype(np.float32)
    return vectors, [f"img{j:03d}" for j in range(n)]


def by_shard(vectors, ids, num_shards):
    shards = {}
    for v, i in zip(vectors, ids):
        shards.setdefault(shard_of(i, num_shards), []).append((v, i))
    return [(np.stack([v for v, _ in s]), [i for _, i in s]) for s in shards.values()]


# ---------------------------------------------------------------- pure functions

@pytest.mark.parametrize("exclude_self", [True, False])
@pytest.mark.parametrize("num_shards", [1, 3, 7, 40])
def test_shards_merged_equal_one_flat_index_with_ties(exclude_self, num_shards):
    database, ids = grid(80)
    queries, query_ids = database[::4], ids[::4]
    k = 9  # with 40 shards of ~2 rows, k is far larger than any shard
    reference = flat_reference(queries, query_ids, database, ids, k, exclude_self)
    per_shard = [shard_topk(queries, query_ids, rows, row_ids, k, exclude_self)
                 for rows, row_ids in by_shard(database, ids, num_shards)]
    merged = [merge_topk([lists[q] for lists in per_shard], k) for q in range(len(queries))]
    assert merged == reference
    assert any(len({d for d, _ in row}) < k for row in reference)  # the data really has ties


def test_many_identical_vectors_are_ranked_by_id():
    """More exact duplicates than k + slack: the shard must widen its search to see them all."""
    database = np.zeros((50, 8), dtype=np.float32)
    database[::7] = 1.0
    ids = [f"z{49 - j:02d}" for j in range(50)]  # ids descend with row order: id order matters
    query = np.zeros((1, 8), dtype=np.float32)
    found = shard_topk(query, ["q"], database, ids, k=5)[0]
    assert found == [(0.0, i) for i in sorted(i for i, v in zip(ids, database) if not v.any())[:5]]
    assert found == flat_reference(query, ["q"], database, ids, 5, False)[0]


@pytest.mark.parametrize("exclude_self", [True, False])
def test_identical_queries_are_ranked_once_and_each_leaves_out_only_itself(exclude_self, monkeypatch):
    """Every row a query, 27 possible vectors for 60 rows: many queries share a vector and
    each is in the database under its own id."""
    from transforms.vectors import knn
    database, ids = grid(60, d=3)
    ranked = []
    exact_ranked = knn._exact_ranked
    monkeypatch.setattr(knn, "_exact_ranked", lambda query, *a: ranked.append(query.tobytes()) or exact_ranked(query, *a))
    found = shard_topk(database, ids, database, ids, 7, exclude_self)
    assert found == flat_reference(database, ids, database, ids, 7, exclude_self)
    distinct = {v.tobytes() for v in database}
    assert len(distinct) < 30 and sorted(ranked) == sorted(distinct)   # one ranking per vector


def test_random_unit_vectors_match_faiss():
    rng = np.random.default_rng(1)
    database = rng.standard_normal((3000, 64)).astype(np.float32)
    database /= np.linalg.norm(database, axis=1, keepdims=True)
    ids = [f"{j:05d}" for j in range(3000)]
    queries, query_ids = database[:50], ids[:50]
    whole = shard_topk(queries, query_ids, database, ids, 9, exclude_self=True)
    per_shard = [shard_topk(queries, query_ids, rows, row_ids, 9, True) for rows, row_ids in by_shard(database, ids, 5)]
    assert [merge_topk([s[q] for s in per_shard], 9) for q in range(50)] == whole
    reference = flat_reference(queries, query_ids, database, ids, 9, True)
    assert [[i for _, i in row] for row in whole] == [[i for _, i in row] for row in reference]
    np.testing.assert_allclose([[d for d, _ in row] for row in whole],
                               [[d for d, _ in row] for row in reference], atol=1e-5)


def test_small_database_and_edge_cases():
    database, ids = grid(5)
    found = shard_topk(database[:1], ids[:1], database, ids, k=9, exclude_self=True)
    assert [i for _, i in found[0]] == [i for _, i in flat_reference(database[:1], ids[:1], database, ids, 9, True)[0]]
    assert len(found[0]) == 4
    assert shard_topk(database[:2], ids[:2], database[:0], [], k=3) == [[], []]
    with pytest.raises(ValueError):
        shard_topk(database[:, :2], ids, database, ids, k=3)


def test_merge_topk_breaks_ties_by_id_and_keeps_extra_fields():
    lists = [[(1.0, "b", "pb"), (2.0, "d", "pd")], [(1.0, "a", "pa")], [], [(0.5, "z", "pz")]]
    assert merge_topk(lists, 3) == [(0.5, "z", "pz"), (1.0, "a", "pa"), (1.0, "b", "pb")]


def test_shard_of_is_stable_and_spreads():
    assert shard_of("0f0565064ea964f8", 8) == shard_of("0f0565064ea964f8", 8)
    assert len({shard_of(f"img{j}", 8) for j in range(100)}) == 8


# ---------------------------------------------------------------- Beam

def embeddings(vectors, ids):
    return [ImageEmbedding(image_id=i, path=f"/images/{i}.jpg", content_sha256=i, embedding=v)
            for v, i in zip(vectors, ids)]


def run_knn(database, ids, query_rows, k, num_shards, **options):
    db = embeddings(database, ids)
    queries = [db[r] for r in query_rows]
    reference = flat_reference(database[query_rows], [ids[r] for r in query_rows], database, ids, k, True)
    expected = [(ids[r], [(d, i, f"/images/{i}.jpg") for d, i in row]) for r, row in zip(query_rows, reference)]
    with local_test_pipeline(**options) as p:
        found = ((p | "Queries" >> beam.Create(queries), p | "Database" >> beam.Create(db))
                 | ShardedExactKnn(k=k, num_shards=num_shards))
        assert_that(found, equal_to(expected))


def test_sharded_knn_on_beam_equals_flat_index():
    database, ids = grid(90, seed=2)
    run_knn(database, ids, list(range(0, 90, 6)), k=9, num_shards=7)   # ~13 rows a shard, ties


@pytest.mark.slow
def test_sharded_knn_with_more_shards_than_neighbours_in_worker_processes():
    database, ids = grid(40, seed=3)
    run_knn(database, ids, [0, 1, 2, 39], k=9, num_shards=16,
            direct_running_mode="multi_processing", direct_num_workers=2)


def test_shards_split_into_many_files_give_the_same_neighbours_and_leave_no_files(tmp_path):
    """A writer that holds 3 vectors at most: every shard spans several files, which a
    task searches one at a time; the files are removed once the search is done."""
    database, ids = grid(90, seed=4)
    db = embeddings(database, ids)
    query_rows = list(range(0, 90, 5))
    reference = flat_reference(database[query_rows], [ids[r] for r in query_rows], database, ids, 9, True)
    expected = [(ids[r], [(d, i, f"/images/{i}.jpg") for d, i in row]) for r, row in zip(query_rows, reference)]
    with local_test_pipeline() as p:
        found = ((p | "Queries" >> beam.Create([db[r] for r in query_rows]), p | "Database" >> beam.Create(db))
                 | ShardedExactKnn(k=9, num_shards=3, scratch_dir=str(tmp_path / "knn"),
                                   file_bytes=3 * database.shape[1] * 4))
        assert_that(found, equal_to(expected))
    assert not (tmp_path / "knn").exists()


def test_every_query_gets_a_row_even_without_neighbours():
    database, ids = grid(3)
    with local_test_pipeline() as p:
        db = p | "Database" >> beam.Create(embeddings(database[:1], ids[:1]))
        found = (p | "Queries" >> beam.Create(embeddings(database[:1], ids[:1])), db) | ShardedExactKnn(3, 2)
        assert_that(found, equal_to([(ids[0], [])]))


def test_read_rows_keeps_the_wanted_ids_and_drops_the_unwanted(tmp_path):
    """ReadRows filters a folder of vector files by a side input of ids: those wanted,
    or all but those named `without` (the FG pool less its duplicates)."""
    from transforms.vectors.vector_files import ReadRows, WriteVectorFiles
    rows = [ImageEmbedding(f"i{n}", f"i{n}.jpg", "", np.full(4, n, np.float32)) for n in range(20)]
    with local_test_pipeline() as p:
        files = (p | beam.Create(rows)
                 | WriteVectorFiles(str(tmp_path / "v"), num_shards=3, max_buffer_bytes=32))
        wanted = beam.pvalue.AsList(p | "Wanted ids" >> beam.Create(["i1", "i2", "i3"]))
        without = beam.pvalue.AsList(p | "Without ids" >> beam.Create(["i2", "i7"]))

        def seen(label, read):
            return files | label >> read | f"{label} as tuples" >> beam.Map(
                lambda e: (e.image_id, e.path, float(e.embedding[0])))

        assert_that(seen("All", ReadRows()), equal_to([(e.image_id, e.path, float(e.embedding[0])) for e in rows]),
                    label="all")
        assert_that(seen("Wanted", ReadRows(wanted)), equal_to([("i1", "i1.jpg", 1.0), ("i2", "i2.jpg", 2.0),
                                                                ("i3", "i3.jpg", 3.0)]), label="wanted")
        assert_that(seen("Without", ReadRows(without=without)) | "Only ids" >> beam.Map(lambda r: r[0]),
                    equal_to([f"i{n}" for n in range(20) if n not in (2, 7)]), label="without")
        assert_that(seen("Both", ReadRows(wanted, without)), equal_to([("i1", "i1.jpg", 1.0), ("i3", "i3.jpg", 3.0)]),
                    label="both")


def test_small_files_are_searched_a_few_at_a_time_in_order(tmp_path):
    """_SearchShard concatenates consecutive files up to a size: every row once, in file
    order, whatever the grouping."""
    from transforms.vectors.knn import _file_groups
    from transforms.vectors.vector_files import write_vector_file
    paths = []
    for f in range(5):
        path = str(tmp_path / f"{f}.npz")
        write_vector_file(path, [f"f{f}r{r}" for r in range(3)], [f"l{f}{r}" for r in range(3)],
                          np.full((3, 4), f, np.float32))
        paths.append(path)
    one_file = 3 * 4 * 4
    for max_bytes, sizes in ((one_file, [3] * 5), (2 * one_file, [6, 6, 3]), (10 * one_file, [15])):
        groups = list(_file_groups(paths, max_bytes))
        assert [len(ids) for ids, _, _ in groups] == sizes
        assert [i for ids, _, _ in groups for i in ids] == [f"f{f}r{r}" for f in range(5) for r in range(3)]
        assert all(len(labels) == len(rows) == len(ids) for ids, labels, rows in groups)
        assert np.concatenate([rows for _, _, rows in groups])[:, 0].tolist() == [f for f in range(5) for _ in range(3)]
