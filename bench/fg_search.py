"""Benchmark of FG's similar-set search and CLIPScore scoring, printed as ratios.

    python -m bench.fg_search [--targets 5000] [--captions 5] [--pool 128000] [--d 512]
                              [--shards 8] [--image-k 20] [--text-k 10]

On generated unit vectors of CLIP ViT-B/32's size (512-d): `targets` target images in a
pool of `pool` images, each target with `captions` text vectors near its image. It times
the searches of F3 (image->image top-k', own image excluded) and F4 (text->image top-k''
per caption) as the pipeline runs them (transforms/vectors/knn.py: shard_topk per shard,
one after the other, then merge_topk) against one flat FAISS index over the whole pool
(one search per query kind: the plain way), and reports
  ratio_sharded_over_raw_flat   total time, sequential shards
  ratio_parallel_over_raw_flat  the slowest shard + merge (the wall time on workers)
  recall                        share of the flat index's neighbours found
  misses_that_are_float32_ties  of those not found, how many the exact (float64) distance
                                shows to be ties with the k-th neighbour returned: FAISS
                                ranks in float32, so at a near-tie in k-th place it may
                                keep another image (must equal `misses`)
and the throughput of CLIPScore (transforms/image/clipscore.py) over (image, text)
embedding pairs and of the coarse test's ranks (pipelines/fg/coarse.own_image_ranks)
for every caption against the whole pool.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from pipelines.fg.coarse import own_image_ranks
from transforms.image.clipscore import clipscore
from transforms.vectors.knn import merge_topk, shard_of, shard_topk


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _search(queries, query_ids, pool, ids, members, k, exclude_self):
    raw_start = time.perf_counter()
    import faiss
    index = faiss.IndexFlatL2(pool.shape[1])
    index.add(pool)
    _, rows = index.search(queries, k + 1 if exclude_self else k)
    raw_s = time.perf_counter() - raw_start
    raw = [[ids[r] for r in row if not exclude_self or ids[r] != q][:k] for row, q in zip(rows, query_ids)]
    shard_s, per_shard = [], []
    for rows_of_shard in members.values():
        start = time.perf_counter()
        per_shard.append(shard_topk(queries, query_ids, pool[rows_of_shard], [ids[j] for j in rows_of_shard],
                                    k, exclude_self=exclude_self))
        shard_s.append(time.perf_counter() - start)
    start = time.perf_counter()
    sharded = [merge_topk([lists[q] for lists in per_shard], k) for q in range(len(query_ids))]
    merge_s = time.perf_counter() - start
    found = sum(len(set(r) & {i for _, i in s}) for r, s in zip(raw, sharded))
    # A neighbour of the flat index that the sharded search lacks is checked exactly: the
    # flat index ranks in float32, our search in float64, so at a near-tie in k-th place
    # the two may keep different images. A miss is a tie when its exact distance is not
    # below (within float32 error) the k-th distance the sharded search returned.
    where = {image_id: j for j, image_id in enumerate(ids)}
    misses = ties = 0
    for q, (r, s) in enumerate(zip(raw, sharded)):
        kth = s[-1][0] if s else float("inf")
        for image_id in set(r) - {i for _, i in s}:
            misses += 1
            exact = float(np.linalg.norm(pool[where[image_id]].astype(np.float64) - queries[q].astype(np.float64)))
            ties += exact >= kth - 1e-4
    return {"queries": len(query_ids), "k": k, "raw_flat_s": round(raw_s, 3),
            "sharded_s": round(sum(shard_s) + merge_s, 3),
            "ratio_sharded_over_raw_flat": round((sum(shard_s) + merge_s) / raw_s, 3),
            "ratio_parallel_over_raw_flat": round((max(shard_s) + merge_s) / raw_s, 3),
            "recall": found / max(1, sum(len(r) for r in raw)),
            "misses": misses, "misses_that_are_float32_ties": ties}


def bench_fg(targets=5000, captions=5, pool=128_000, d=512, shards=8, image_k=20, text_k=10, seed=0) -> dict:
    import faiss
    rng = np.random.default_rng(seed)
    vectors = _unit(rng.standard_normal((pool, d), dtype=np.float32))
    ids = [f"{j:012d}" for j in range(pool)]
    target_rows = np.arange(targets)             # the targets are in the pool (§3.1.1)
    texts = _unit(np.repeat(vectors[target_rows], captions, axis=0)
                  + 0.08 * rng.standard_normal((targets * captions, d), dtype=np.float32))
    text_ids = [f"{ids[t]}#{c}" for t in target_rows for c in range(captions)]
    members = {}
    for j, image_id in enumerate(ids):
        members.setdefault(shard_of(image_id, shards), []).append(j)

    image = _search(vectors[target_rows], [ids[t] for t in target_rows], vectors, ids, members, image_k, True)
    text = _search(texts, text_ids, vectors, ids, members, text_k, False)

    pairs_image = np.repeat(vectors[target_rows], captions, axis=0)
    start = time.perf_counter()
    scores = clipscore(pairs_image, texts)
    score_s = time.perf_counter() - start

    sample = min(len(text_ids), 5000)
    start = time.perf_counter()
    ranks = own_image_ranks(texts[:sample], [t.split("#")[0] for t in text_ids[:sample]], ids, vectors)
    rank_s = time.perf_counter() - start
    return {
        "targets": targets, "captions": captions, "pool": pool, "d": d, "shards": shards,
        "faiss_gpus": faiss.get_num_gpus(), "faiss_threads": faiss.omp_get_max_threads(),
        "image_to_image": image, "text_to_image": text,
        "clipscore_pairs": len(scores), "clipscore_pairs_per_s": round(len(scores) / score_s),
        "coarse_ranks_texts": sample, "coarse_ranks_per_s": round(sample / rank_s, 1),
        "coarse_share_rank_1": round(float(np.mean(np.asarray(ranks) == 1)), 3),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=5000)
    parser.add_argument("--captions", type=int, default=5)
    parser.add_argument("--pool", type=int, default=128_000)
    parser.add_argument("--d", type=int, default=512)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--image-k", type=int, default=20)
    parser.add_argument("--text-k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args(argv)
    print(json.dumps(bench_fg(a.targets, a.captions, a.pool, a.d, a.shards, a.image_k, a.text_k, a.seed),
                     indent=2))


if __name__ == "__main__":
    main()
