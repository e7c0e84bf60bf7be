"""Benchmark of the sharded exact kNN (transforms/vectors/knn.py), printed as ratios.

    python -m bench.knn [--n 200000] [--d 512] [--queries 4845] [--shards 8] [--k 9]

On random unit vectors (the shape of CLIP ViT-B/16 encodings), with the queries drawn
from the database as in the static sets (each query's own row excluded), it times
  raw_flat   one faiss.IndexFlatL2 over everything, a single search (the plain way)
  flat       shard_topk over everything as one shard (the same exact re-ranking)
  sharded    shard_topk per shard, one after the other, then merge_topk
and reports sharded/flat and sharded/raw_flat time ratios, the slowest shard (the wall
time when the shards run in parallel on workers), and
  recall     share of raw_flat's k neighbours the sharded search returns (must be 1.0)
  identical  sharded == flat, ids and distances (must be True)
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from transforms.vectors.knn import merge_topk, shard_of, shard_topk


def _unit_vectors(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def bench_knn(n: int = 200_000, d: int = 512, queries: int = 4845, shards: int = 8, k: int = 9,
              seed: int = 0) -> dict:
    import faiss
    database = _unit_vectors(n, d, seed)
    ids = [f"{j:016x}" for j in range(n)]
    query_rows = np.random.default_rng(seed + 1).choice(n, size=queries, replace=False)
    q_vectors, q_ids = database[query_rows], [ids[r] for r in query_rows]

    start = time.perf_counter()
    index = faiss.IndexFlatL2(d)
    index.add(database)
    _, rows = index.search(q_vectors, k + 1)
    raw_s = time.perf_counter() - start
    raw = [[ids[r] for r in row if ids[r] != q][:k] for row, q in zip(rows, q_ids)]

    start = time.perf_counter()
    flat = shard_topk(q_vectors, q_ids, database, ids, k, exclude_self=True)
    flat_s = time.perf_counter() - start

    members = {}
    for j, image_id in enumerate(ids):
        members.setdefault(shard_of(image_id, shards), []).append(j)
    shard_s, per_shard = [], []
    for rows_of_shard in members.values():
        start = time.perf_counter()
        per_shard.append(shard_topk(q_vectors, q_ids, database[rows_of_shard],
                                    [ids[j] for j in rows_of_shard], k, exclude_self=True))
        shard_s.append(time.perf_counter() - start)
    start = time.perf_counter()
    sharded = [merge_topk([lists[q] for lists in per_shard], k) for q in range(queries)]
    merge_s = time.perf_counter() - start
    sharded_s = sum(shard_s) + merge_s

    found = sum(len(set(r) & {i for _, i in s}) for r, s in zip(raw, sharded))
    return {
        "n": n, "d": d, "queries": queries, "shards": shards, "k": k,
        "faiss_gpus": faiss.get_num_gpus(), "faiss_threads": faiss.omp_get_max_threads(),
        "raw_flat_s": round(raw_s, 3), "flat_s": round(flat_s, 3), "sharded_s": round(sharded_s, 3),
        "slowest_shard_s": round(max(shard_s), 3), "merge_s": round(merge_s, 3),
        "ratio_sharded_over_flat": round(sharded_s / flat_s, 3),
        "ratio_sharded_over_raw_flat": round(sharded_s / raw_s, 3),
        "ratio_parallel_over_flat": round((max(shard_s) + merge_s) / flat_s, 3),
        "recall": found / (queries * k),
        "identical": sharded == flat,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, default=512)
    parser.add_argument("--queries", type=int, default=4845)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--k", type=int, default=9)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(bench_knn(args.n, args.d, args.queries, args.shards, args.k, args.seed), indent=2))


if __name__ == "__main__":
    main()
