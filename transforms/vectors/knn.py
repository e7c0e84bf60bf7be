"""Exact k-nearest-neighbour search over a database held as files, one shard at a time.

Nearest-image sets over a large collection (Open Images has 1.74M images) need an exact
search over a database too large for one worker, so:

  1. the database is written, where its vectors are made, into files of one shard each
     (a stable hash of the id; transforms/vectors/vector_files.py), and so are the queries;
  2. each task pairs one shard with one file of queries: it loads the queries, then the
     shard's files a few at a time (up to SEARCH_BYTES of vectors), builds a flat
     (exact) FAISS index per group, and keeps each query's top-k over the shard;
  3. a combiner merges the shards' lists per query into the global top-k.
A worker holds one file of queries and one group of database files at a time: memory is
bounded by SEARCH_BYTES, whatever the size of the collection, and no collection is ever
one element or a side input (only file references are).

The result is exactly that of one flat index over everything, by construction:
- FAISS ranks candidates in float32 (BLAS: |q|^2 + |x|^2 - 2 q.x), whose rounding depends
  on the batch it runs in; so FAISS only proposes candidates, and every candidate within
  float32 error of the k-th has its distance recomputed per pair in float64, which no
  batch, file or shard layout can change.
- A search asks FAISS for more candidates until the last one is clearly (beyond float32
  error) farther than the k-th: so no true neighbour is ever cut off, whatever the ties.
- Every list is ordered by (distance, id): ties break the same way in a file, a shard, the
  merge and in the reference, on any runner and any number of shards or files.
- Queries with identical vectors share one search and one float64 ranking (their exact
  distances are the same); each then leaves out only its own id.
Distances are Euclidean (the square root of the float64 squared distance).

Who proposes the float32 candidates is config (KnnSpec): FAISS or torch (a matrix
product and top-k, for a GPU machine with torch and no FAISS), on the CPU or a GPU. The
argument above holds for each, so all four return the same lists, bit for bit; the
float32 error bound (_REL_TOL) is measured per device by bench/gpu.py
(float32_error_bound; docs/benchmarks.md), not only assumed.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import islice
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from transforms.core.devices import strict_float32, torch_threads_within_openmp_limit
from transforms.core.errors import UserError
from transforms.vectors.vector_files import (MAX_BUFFER_BYTES, RemoveFolderWhenDone, WriteVectorFiles,
                                             read_vector_file, scratch_folder, shard_of)  # noqa: F401 (shard_of: part of this API)

Neighbour = Tuple[float, str]  # (Euclidean distance, image id); entries may carry more after these
_SLACK = 8                     # extra candidates asked of FAISS, so one search is usually enough
_REL_TOL = 1e-4                # float32 distance error bound, relative to |q|^2 + max |x|^2
_GPU_MAX_K = 2048              # FAISS GPU flat search returns at most this many per query
SEARCH_BYTES = 64 << 20       # database vectors searched at once (several small files)


# ---------------------------------------------------------------------------- pure search

BACKENDS = ("auto", "faiss", "torch")
DEVICES = ("auto", "cpu", "cuda")
_TORCH_BLOCK_BYTES = {"cpu": 256 << 20, "cuda": 2 << 30}   # float32 distances computed at once


@dataclass(frozen=True)
class KnnSpec:
    """Where the float32 candidates are proposed; mirrors a benchmark's kNN config keys.

    backend  "faiss" (IndexFlatL2, GpuIndexFlatL2 on a GPU), "torch" (a matrix product
             and top-k on the device: for a machine with torch and no FAISS GPU build), or
             "auto": FAISS where it sees a GPU, else torch where torch sees one, else FAISS
             on the CPU (torch when FAISS is not installed); resolve_knn
    device   "auto" (the GPU when the backend sees one), "cpu" or "cuda"
    Either way the float64 re-rank below decides the lists: every backend and device
    returns the same neighbours and distances, bit for bit (tests/transforms/test_knn_backends.py).
    """
    backend: str = "auto"
    device: str = "auto"

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise KnnConfigError(f"knn.backend: {self.backend!r} is not one of {BACKENDS}")
        if self.device not in DEVICES:
            raise KnnConfigError(f"knn.device: {self.device!r} is not one of {DEVICES}")


class KnnConfigError(UserError, ValueError):
    """The kNN cannot run as configured; the message names the config key."""


def _faiss():
    import faiss
    return faiss


def _faiss_installed() -> bool:
    import importlib.util
    return importlib.util.find_spec("faiss") is not None


def _faiss_gpus() -> int:
    faiss = _faiss()
    return faiss.get_num_gpus() if hasattr(faiss, "StandardGpuResources") else 0


def _torch_sees_a_gpu() -> bool:
    import torch
    return torch.cuda.is_available()


def resolve_knn(spec: KnnSpec) -> KnnSpec:
    """The backend and device `spec` means on this machine, both concrete. `auto` puts the
    search on a GPU wherever one is usable: FAISS's GPU build first (its flat search runs
    near the GPU's peak), else torch on CUDA; without a GPU, FAISS on the CPU."""
    backend = spec.backend
    if backend == "auto":
        if not _faiss_installed():
            backend = "torch"
        elif spec.device != "cpu" and _faiss_gpus() == 0 and _torch_sees_a_gpu():
            backend = "torch"
        else:
            backend = "faiss"
    concrete = KnnSpec(backend, spec.device)
    return KnnSpec(backend, resolve_knn_device(concrete))


def resolve_knn_device(spec: KnnSpec) -> str:
    """"cpu" or "cuda": what `spec.device` means on this machine for its backend."""
    spec = spec if spec.backend != "auto" else resolve_knn(spec)
    if spec.backend == "faiss":
        available = _faiss_gpus() > 0
        why = "this FAISS build sees no GPU (faiss-cpu, or no CUDA device)"
    else:
        import torch
        torch_threads_within_openmp_limit()
        available = torch.cuda.is_available()
        why = "torch sees no CUDA device"
    if spec.device == "auto":
        return "cuda" if available else "cpu"
    if spec.device == "cuda" and not available:
        raise KnnConfigError(f"knn.device is 'cuda' but {why}; use 'auto' or 'cpu'")
    return spec.device


def knn_identity(spec: KnnSpec) -> Dict[str, Any]:
    """What the manifest records about the search: backend, device and library versions,
    as this process resolves them (a worker resolves `auto` the same way on its machine)."""
    resolved = resolve_knn(spec)
    device = resolved.device
    out: Dict[str, Any] = {"backend_setting": spec.backend, "backend": resolved.backend,
                           "device_setting": spec.device, "device": device}
    if resolved.backend == "faiss":
        out["faiss_version"] = _faiss().__version__
    else:
        import torch
        out["torch_version"] = torch.__version__
    if device == "cuda":
        from transforms.core.devices import cuda_versions
        out.update(cuda_versions())
    out["rerank"] = "float64"
    return out


@functools.lru_cache(maxsize=1)
def _gpu_resources():
    """FAISS's GPU scratch memory and streams: one per process, shared by every index."""
    return _faiss().StandardGpuResources()


class FlatSearch:
    """An exact flat L2 search that proposes candidates in float32, reused over the
    database groups of a task (and the tasks of a worker): `load` swaps the database in,
    `search` returns (squared float32 distances, rows), each row of the result ascending.

    FAISS on a GPU keeps one GpuIndexFlatL2 (and the process's one set of GPU resources)
    and refills it per group, rather than setting up a GPU index per group."""

    def __init__(self, spec: KnnSpec = KnnSpec()):
        self.spec = resolve_knn(spec)     # concrete backend and device
        self.device = self.spec.device
        self._database: Optional[np.ndarray] = None
        self._index = None          # FAISS: the index holding `_database` on `device`
        self._cpu_index = None      # FAISS on a GPU: a CPU index, made only for k > _GPU_MAX_K
        self._rows = self._norms = None   # torch: the database and its squared norms on `device`

    def load(self, database: np.ndarray) -> None:
        self._database, self._cpu_index = database, None
        if self.spec.backend == "torch":
            import torch
            self._rows = self._norms = None                       # the last group freed first
            self._rows = torch.from_numpy(database).to(self.device)
            self._norms = torch.einsum("ij,ij->i", self._rows, self._rows)
            return
        faiss = _faiss()
        d = database.shape[1]
        if self._index is None or self._index.d != d:
            self._index = (faiss.GpuIndexFlatL2(_gpu_resources(), d) if self.device == "cuda"
                           else faiss.IndexFlatL2(d))
        self._index.reset()
        self._index.add(database)

    def search(self, queries: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        if self.spec.backend == "torch":
            return self._torch_search(queries, k)
        if self.device == "cuda" and k > _GPU_MAX_K:
            if self._cpu_index is None:
                self._cpu_index = _faiss().IndexFlatL2(self._database.shape[1])
                self._cpu_index.add(self._database)
            return self._cpu_index.search(queries, k)
        return self._index.search(queries, k)

    def _torch_search(self, queries: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        # |q|^2 + |x|^2 - 2 q.x in float32, as FAISS ranks; a block of queries at a time
        # so the (queries x rows) distances stay within _TORCH_BLOCK_BYTES.
        import torch
        n = len(self._rows)
        block = max(1, _TORCH_BLOCK_BYTES[self.device] // (4 * n))
        distances, rows = [], []
        with strict_float32(), torch.inference_mode():
            for start in range(0, len(queries), block):
                q = torch.from_numpy(queries[start:start + block]).to(self.device)
                d = torch.einsum("ij,ij->i", q, q)[:, None] + self._norms[None, :] - 2 * (q @ self._rows.T)
                found = torch.topk(d, k, dim=1, largest=False, sorted=True)
                distances.append(found.values.cpu())
                rows.append(found.indices.cpu())
        return torch.cat(distances).numpy(), torch.cat(rows).numpy().astype(np.int64, copy=False)


def float32_error_bound(queries: np.ndarray, database: np.ndarray, squared: np.ndarray,
                        rows: np.ndarray) -> float:
    """The largest error of float32 squared distances that a search returned, relative
    to |q|^2 + max |x|^2 (the scale _REL_TOL assumes): measured against float64."""
    q = queries.astype(np.float64)[:, None, :]
    exact = np.square(database[rows].astype(np.float64) - q).sum(axis=2)
    scale = float(np.max(np.einsum("ij,ij->i", database, database).astype(np.float64)))
    scale = scale + np.einsum("ij,ij->i", queries.astype(np.float64), queries.astype(np.float64))
    return float(np.max(np.abs(squared.astype(np.float64) - exact) / scale[:, None]))


def _as_matrix(x, label: str) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"{label} must be a 2-d array (rows are vectors), got shape {x.shape}")
    return x


def shard_topk(queries, query_ids: Sequence[str], database, db_ids: Sequence[str], k: int,
               exclude_self: bool = False, search: Optional[FlatSearch] = None) -> List[List[Neighbour]]:
    """Per query, its k nearest database rows as (Euclidean distance, id), ordered by
    (distance, id). `exclude_self` drops the database row whose id is the query's own id.
    Fewer than k when the database holds fewer. `search` proposes the candidates (default:
    FAISS, on its GPU when it has one); a caller searching several groups passes one."""
    return [[(d, i) for d, i, _ in found]
            for found in shard_topk_rows(queries, query_ids, database, db_ids, k, exclude_self, search)]


def shard_topk_rows(queries, query_ids: Sequence[str], database, db_ids: Sequence[str], k: int,
                    exclude_self: bool = False,
                    search: Optional[FlatSearch] = None) -> List[List[Tuple[float, str, int]]]:
    """shard_topk with each neighbour's database row: (distance, id, row)."""
    queries, database = _as_matrix(queries, "queries"), _as_matrix(database, "database")
    if len(query_ids) != len(queries) or len(db_ids) != len(database):
        raise ValueError("ids and rows differ in number")
    if k < 1 or len(database) == 0 or len(queries) == 0:
        return [[] for _ in range(len(queries))]
    if queries.shape[1] != database.shape[1]:
        raise ValueError(f"queries have {queries.shape[1]} dimensions, database {database.shape[1]}")
    # Identical query vectors (a stand-in encoder gives one vector to many texts, and it
    # may tie with every row) have the same exact distances: each is searched once, and
    # each of its queries takes the first k of its list other than itself.
    distinct, vector_of = np.unique(queries, axis=0, return_inverse=True)
    ranked = _ranked_candidates(search or FlatSearch(), distinct, database, db_ids,
                                k + 1 if exclude_self else k)
    return [list(islice((found for found in ranked[vector]
                         if not (exclude_self and found[1] == query_id)), k))
            for vector, query_id in zip(vector_of.reshape(-1).tolist(), query_ids)]


def _ranked_candidates(index: FlatSearch, queries: np.ndarray, database: np.ndarray,
                       db_ids: Sequence[str], want: int) -> List[List[Tuple[float, str, int]]]:
    """Per query, its exact `want` nearest rows as (distance, id, row), ordered by
    (distance, id). With `exclude_self`, want is k + 1: ids are unique in a database, so a
    query's own id takes at most one of them."""
    index.load(database)
    n = len(database)
    tol = _REL_TOL * (float(np.max(np.einsum("ij,ij->i", database, database)))
                      + np.einsum("ij,ij->i", queries, queries)) + 1e-12
    results: List[List[Tuple[float, str, int]]] = [[] for _ in range(len(queries))]
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
            # Only candidates within float32 error of the want-th can be among the exact
            # top `want` (the bound that settles the unseen rows settles these too); on
            # data with many near ties the rest would be most of the float64 work.
            near = (i_row >= 0) & (d_row <= d_row[cut] + tol[q])
            # Cut to `want` now: every distinct query's list is held until all are ranked.
            results[q] = _exact_ranked(queries[q], database, db_ids, i_row[near])[:want]
        pending = np.asarray(unsettled, dtype=np.int64)
        k_search = min(n, 2 * k_search)
    return results


def _exact_ranked(query: np.ndarray, database: np.ndarray, db_ids: Sequence[str],
                  rows: np.ndarray) -> List[Tuple[float, str, int]]:
    # Per-pair float64: the same value whichever shard or batch the pair is in.
    diff = database[rows].astype(np.float64) - query.astype(np.float64)
    distances = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    # Ranked by the reported distance itself, so a shard and the merge use one key.
    return sorted(zip(distances.tolist(), (db_ids[r] for r in rows), rows.tolist()))


def merge_topk(lists: Iterable[Sequence[Tuple]], k: int) -> List[Tuple]:
    """The k best of several (distance, id, ...) lists, ordered by (distance, id)."""
    merged = sorted((entry for entry in (tuple(e) for lst in lists for e in lst)),
                    key=lambda e: (e[0], e[1]))
    return merged[:k]


# ---------------------------------------------------------------------------- Beam

class ShardedExactKnn(beam.PTransform):
    """(queries, database) -> (query_id, [(distance, neighbour_id, neighbour_path), ...]).

    Both inputs hold ImageEmbedding (or anything with image_id, path, embedding). Every
    query gets exactly one output, with at most k neighbours ordered by (distance, id);
    fewer when the database is smaller. `exclude_self` leaves the query's own id out.
    Both sides are written to files in `scratch_dir` (this search's alone; default: a new
    folder under the pipeline's --temp_location, else the local temp folder; see
    vector_files.scratch_folder), which is removed when the search is done. `file_bytes` bounds the vectors a writer holds
    and so a database file (vector_files.MAX_BUFFER_BYTES). `spec` picks the backend and
    device that propose candidates (KnnSpec); the lists do not depend on it.
    """

    def __init__(self, k: int, num_shards: int, exclude_self: bool = True,
                 scratch_dir: Optional[str] = None, file_bytes: int = MAX_BUFFER_BYTES,
                 spec: KnnSpec = KnnSpec()):
        super().__init__()
        if k < 1 or num_shards < 1:
            raise ValueError("k and num_shards must be >= 1")
        self.k, self.num_shards, self.exclude_self = k, num_shards, exclude_self
        self.scratch_dir, self.file_bytes, self.spec = scratch_dir, file_bytes, spec

    def expand(self, inputs):
        queries, database = inputs
        folder = scratch_folder(database.pipeline, self.scratch_dir)
        files = database | "Database to files" >> WriteVectorFiles(FileSystems.join(folder, "database"),
                                                                   self.num_shards, max_buffer_bytes=self.file_bytes)
        found = ((queries, files) | "Search files" >> SearchVectorFiles(
            self.k, FileSystems.join(folder, "queries"), self.exclude_self, self.spec))
        _ = found | "Remove files" >> RemoveFolderWhenDone(folder)
        return found


class SearchVectorFiles(beam.PTransform):
    """(queries, VectorFile of a database) -> (query_id, [(distance, id, label), ...]):
    ShardedExactKnn over a database already written (WriteVectorFiles), so that several
    searches can share it. The queries are written under `query_folder`; removing it and
    the database's files is the caller's (RemoveFolderWhenDone on this output)."""

    def __init__(self, k: int, query_folder: str, exclude_self: bool = True, spec: KnnSpec = KnnSpec()):
        super().__init__()
        if k < 1:
            raise ValueError("k must be >= 1")
        self.k, self.query_folder, self.exclude_self, self.spec = k, query_folder, exclude_self, spec

    def expand(self, inputs):
        queries, files = inputs
        query_files = queries | "Queries to files" >> WriteVectorFiles(self.query_folder)
        tasks = (files | "By shard" >> beam.Map(lambda f: (f.shard, f.path))
                 | "Group shards" >> beam.GroupByKey()
                 | "Shard x query file" >> beam.FlatMap(_tasks, beam.pvalue.AsList(query_files))
                 | "Spread tasks" >> beam.Reshuffle())
        found = tasks | "Search" >> beam.ParDo(_SearchShard(self.k, self.exclude_self, self.spec))
        # An empty list per query, so a query no shard answered still has its (empty) row.
        empty = queries | "Empty lists" >> beam.Map(lambda e: (e.image_id, []))
        return ((found, empty)
                | "All lists" >> beam.Flatten()
                | "Merge shards" >> beam.CombinePerKey(_MergeTopK(self.k)))


def _tasks(shard_files, query_files) -> List[Tuple[Tuple[str, ...], str]]:
    """One task per (shard, file of queries): (the shard's file paths, the query file)."""
    _, paths = shard_files
    paths = tuple(sorted(paths))
    return [(paths, q.path) for q in query_files]


class _SearchShard(beam.DoFn):
    """One shard against one file of queries, the shard's files loaded one at a time.
    One FlatSearch per DoFn instance: on a GPU, one index set up once and refilled for
    every group of every task this instance runs."""

    def __init__(self, k: int, exclude_self: bool, spec: KnnSpec = KnnSpec()):
        self._k, self._exclude_self, self._spec = k, exclude_self, spec
        self._search: Optional[FlatSearch] = None

    def setup(self):
        self._search = FlatSearch(self._spec)

    def process(self, task):
        paths, query_path = task
        query_ids, _, queries = read_vector_file(query_path)
        best: List[List[Tuple]] = [[] for _ in query_ids]
        for ids, labels, rows in _file_groups(paths):
            found = shard_topk_rows(queries, query_ids, rows, ids, self._k, self._exclude_self, self._search)
            for n, neighbours in enumerate(found):
                if neighbours:
                    best[n] = merge_topk([best[n], [(d, i, labels[r]) for d, i, r in neighbours]], self._k)
            del rows
        return [(query_id, neighbours) for query_id, neighbours in zip(query_ids, best) if neighbours]


def _file_groups(paths, max_bytes: int = SEARCH_BYTES):
    """The rows of consecutive files, concatenated up to `max_bytes` of vectors: writers
    keep files small for their own memory, and a search per file has a per-query cost
    (the float64 recomputation), so small files are searched a few at a time."""
    group: List[Tuple[List[str], List[str], np.ndarray]] = []
    size = 0
    for path in paths:
        part = read_vector_file(path)
        group.append(part)
        size += part[2].nbytes
        if size >= max_bytes:
            merged, group, size = _concatenated(group), [], 0   # the parts freed before the search
            yield merged
    if group:
        merged, group = _concatenated(group), []
        yield merged


def _concatenated(group):
    if len(group) == 1:
        return group[0]
    return ([i for ids, _, _ in group for i in ids], [lb for _, labels, _ in group for lb in labels],
            np.concatenate([rows for _, _, rows in group]))


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
