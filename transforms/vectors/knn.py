"""Exact k-nearest-neighbour search, sharded so no worker holds more than one shard.

Nearest-image sets over a large collection (Open Images has 1.74M images) need an exact
search over a database too large for one worker, so:

  1. the database is split into `num_shards` shards by a stable hash of image_id;
  2. each shard builds a flat (exact) FAISS index and searches all queries (a side input:
     the queries are sampled first, so they are few), keeping its own top-k per query;
  3. a combiner merges the shards' lists per query into the global top-k.

The result is exactly that of one flat index over everything, by construction:
- FAISS ranks candidates in float32 (BLAS: |q|^2 + |x|^2 - 2 q.x), whose rounding depends
  on the batch it runs in; so FAISS only proposes candidates, and every candidate's
  distance is recomputed per pair in float64, which no batch or shard layout can change.
- A shard asks FAISS for more candidates until the last one is clearly (beyond float32
  error) farther than the k-th: so no true neighbour is ever cut off, whatever the ties.
- Every list is ordered by (distance, id): ties break the same way in a shard, in the
  merge and in the reference, on any runner and any number of shards.
Distances are Euclidean (the square root of the float64 squared distance).
"""
from __future__ import annotations

import hashlib
from typing import Iterable, List, Sequence, Tuple

import apache_beam as beam
import numpy as np

Neighbour = Tuple[float, str]  # (Euclidean distance, image id); entries may carry more after these
_SLACK = 8                     # extra candidates asked of FAISS, so one search is usually enough
_REL_TOL = 1e-4                # float32 distance error bound, relative to |q|^2 + max |x|^2
_GPU_MAX_K = 2048              # FAISS GPU flat search returns at most this many per query


# ---------------------------------------------------------------------------- pure search

def _faiss():
    import faiss
    return faiss


class _FlatIndex:
    """An exact L2 index over `database`: on a GPU when faiss has one, on the CPU otherwise."""

    def __init__(self, database: np.ndarray):
        faiss = _faiss()
        self.cpu = faiss.IndexFlatL2(database.shape[1])
        self.cpu.add(database)
        self.gpu = None
        if hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0:
            self._resources = faiss.StandardGpuResources()
            self.gpu = faiss.index_cpu_to_gpu(self._resources, 0, self.cpu)

    def search(self, queries: np.ndarray, k: int):
        index = self.gpu if self.gpu is not None and k <= _GPU_MAX_K else self.cpu
        return index.search(queries, k)


def _as_matrix(x, label: str) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"{label} must be a 2-d array (rows are vectors), got shape {x.shape}")
    return x


def shard_topk(queries, query_ids: Sequence[str], database, db_ids: Sequence[str], k: int,
               exclude_self: bool = False) -> List[List[Neighbour]]:
    """Per query, its k nearest database rows as (Euclidean distance, id), ordered by
    (distance, id). `exclude_self` drops the database row whose id is the query's own id.
    Fewer than k when the database holds fewer."""
    queries, database = _as_matrix(queries, "queries"), _as_matrix(database, "database")
    if len(query_ids) != len(queries) or len(db_ids) != len(database):
        raise ValueError("ids and rows differ in number")
    if k < 1 or len(database) == 0 or len(queries) == 0:
        return [[] for _ in range(len(queries))]
    if queries.shape[1] != database.shape[1]:
        raise ValueError(f"queries have {queries.shape[1]} dimensions, database {database.shape[1]}")
    index = _FlatIndex(database)
    n = len(database)
    want = k + 1 if exclude_self else k          # the query itself may take one slot
    tol = _REL_TOL * (float(np.max(np.einsum("ij,ij->i", database, database)))
                      + np.einsum("ij,ij->i", queries, queries)) + 1e-12
    results: List[List[Neighbour]] = [[] for _ in range(len(queries))]
    pending = np.arange(len(queries))
    k_search = min(n, want + _SLACK)
    while len(pending):
        distances, rows = index.search(queries[pending], k_search)
        unsettled = []
        for q, d_row, i_row in zip(pending, distances, rows):
            cut = min(want, k_search) - 1
            # Settled when the shard is exhausted or the last candidate is beyond any
            # float32 error of the want-th: nothing unseen can be nearer.
            if k_search < n and d_row[-1] <= d_row[cut] + tol[q]:
                unsettled.append(q)
                continue
            results[q] = _exact_topk(queries[q], query_ids[q], database, db_ids,
                                     i_row[i_row >= 0], k, exclude_self)
        pending = np.asarray(unsettled, dtype=np.int64)
        k_search = min(n, 2 * k_search)
    return results


def _exact_topk(query: np.ndarray, query_id: str, database: np.ndarray, db_ids: Sequence[str],
                rows: np.ndarray, k: int, exclude_self: bool) -> List[Neighbour]:
    if exclude_self:
        rows = np.asarray([r for r in rows if db_ids[r] != query_id], dtype=np.int64)
    if len(rows) == 0:
        return []
    # Per-pair float64: the same value whichever shard or batch the pair is in.
    diff = database[rows].astype(np.float64) - query.astype(np.float64)
    distances = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    # Ranked by the reported distance itself, so a shard and the merge use one key.
    return sorted(zip(distances.tolist(), (db_ids[r] for r in rows)))[:k]


def merge_topk(lists: Iterable[Sequence[Tuple]], k: int) -> List[Tuple]:
    """The k best of several (distance, id, ...) lists, ordered by (distance, id)."""
    merged = sorted((entry for entry in (tuple(e) for lst in lists for e in lst)),
                    key=lambda e: (e[0], e[1]))
    return merged[:k]


def shard_of(image_id: str, num_shards: int) -> int:
    """A stable shard number for an id (Python's hash() differs between processes)."""
    digest = hashlib.sha256(image_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % num_shards


# ---------------------------------------------------------------------------- Beam

class ShardedExactKnn(beam.PTransform):
    """(queries, database) -> (query_id, [(distance, neighbour_id, neighbour_path), ...]).

    Both inputs hold ImageEmbedding (or anything with image_id, path, embedding). Every
    query gets exactly one output, with at most k neighbours ordered by (distance, id);
    fewer when the database is smaller. `exclude_self` leaves the query's own id out.
    """

    def __init__(self, k: int, num_shards: int, exclude_self: bool = True):
        super().__init__()
        if k < 1 or num_shards < 1:
            raise ValueError("k and num_shards must be >= 1")
        self.k, self.num_shards, self.exclude_self = k, num_shards, exclude_self

    def expand(self, inputs):
        queries, database = inputs
        num_shards = self.num_shards
        query_vectors = queries | "Query vectors" >> beam.Map(
            lambda e: (e.image_id, np.asarray(e.embedding, dtype=np.float32)))
        found = (database
                 | "Key by shard" >> beam.Map(lambda e: (shard_of(e.image_id, num_shards), e))
                 | "Group shards" >> beam.GroupByKey()
                 | "Search shard" >> beam.ParDo(_SearchShard(self.k, self.exclude_self),
                                                beam.pvalue.AsList(query_vectors)))
        # An empty list per query, so a query no shard answered still has its (empty) row.
        empty = query_vectors | "Empty lists" >> beam.Map(lambda kv: (kv[0], []))
        return ((found, empty)
                | "All lists" >> beam.Flatten()
                | "Merge shards" >> beam.CombinePerKey(_MergeTopK(self.k)))


class _SearchShard(beam.DoFn):
    def __init__(self, k: int, exclude_self: bool):
        self._k, self._exclude_self = k, exclude_self

    def process(self, shard, query_vectors):
        _, members = shard
        if not query_vectors:
            return []
        members = list(members)  # one shard: the most any worker holds
        query_ids = [q for q, _ in query_vectors]
        found = shard_topk(np.stack([v for _, v in query_vectors]), query_ids,
                           np.stack([m.embedding for m in members]), [m.image_id for m in members],
                           self._k, self._exclude_self)
        paths = {m.image_id: m.path for m in members}
        return [(query_id, [(d, i, paths[i]) for d, i in neighbours])
                for query_id, neighbours in zip(query_ids, found) if neighbours]


class _MergeTopK(beam.CombineFn):
    """Top-k per query across shards: the accumulator never holds more than k entries."""

    def __init__(self, k: int):
        self._k = k

    def create_accumulator(self):
        return []

    def add_input(self, accumulator, neighbours):
        return merge_topk([accumulator, neighbours], self._k)

    def merge_accumulators(self, accumulators):
        return merge_topk(accumulators, self._k)

    def extract_output(self, accumulator):
        return accumulator
