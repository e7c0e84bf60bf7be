"""Benchmark of BD2BB decoy selection (pipelines/bd2bb/decoys.py), printed as a growth ratio.

    python -m bench.bd2bb_decoys [--sizes 10000 100000] [--clusters 60] [--pool 100] [--dim 384]

Generates N unique actions (random unit vectors around `clusters` centres, random
code1/code3 verbs and code2/code4 nouns from small vocabularies so that the filters
reject a realistic share), builds the pool and selects 2 language + 2 vision decoys for
every action as target, cluster by cluster, exactly as the pipeline's DoFn does. Prints
seconds per size and the ratio of the largest to the smallest against the size ratio:
near 1x the size ratio is linear growth, near its square is quadratic.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from pipelines.bd2bb.decoys import build_pool, select_for_cluster, target_seed
from pipelines.bd2bb.records import Codes


def generate(n: int, clusters: int, dim: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    assign = rng.integers(clusters, size=n)
    vectors = centres[assign] + 0.8 * rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    verbs, nouns = rng.integers(400, size=(n, 2)), rng.integers(3000, size=(n, 2))
    return [(f"{i:012x}", f"action {i}", int(assign[i]),
             Codes(f"v{verbs[i, 0]}", (f"n{nouns[i, 0]}",), f"v{verbs[i, 1]}", (f"n{nouns[i, 1]}",)),
             vectors[i]) for i in range(n)]


def bench(n: int, clusters: int, pool_size: int, dim: int) -> dict:
    entries = generate(n, clusters, dim)
    start = time.perf_counter()
    pool = build_pool(entries)
    built = time.perf_counter() - start
    missing = 0
    start = time.perf_counter()
    for cluster, first in pool.start.items():
        rows = np.arange(first, first + pool.size[cluster])
        seeds = np.array([target_seed(0, pool.keys[r]) for r in rows], np.uint64)
        lan, vis = select_for_cluster(pool, cluster, rows, seeds, pool_size)
        missing += int(((lan < 0).any(1) | (vis < 0).any(1)).sum())
    selected = time.perf_counter() - start
    return {"n": n, "pool_build_s": built, "select_s": selected, "total_s": built + selected,
            "no_decoys": missing}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--clusters", type=int, default=60)     # the paper's k (§3.2)
    parser.add_argument("--pool", type=int, default=100)        # pipelines/bd2bb/configs/paper.yaml decoys.pool_size
    parser.add_argument("--dim", type=int, default=384)         # all-MiniLM-L6-v2
    args = parser.parse_args(argv)
    results = [bench(n, args.clusters, args.pool, args.dim) for n in args.sizes]
    print(f"BD2BB decoy selection: {args.clusters} clusters, pool {args.pool}, dim {args.dim}")
    print(f"{'actions':>9} {'pool build s':>13} {'selection s':>12} {'total s':>8} {'us/target':>10} {'no_decoys':>10}")
    for r in results:
        print(f"{r['n']:>9} {r['pool_build_s']:>13.2f} {r['select_s']:>12.2f} {r['total_s']:>8.2f} "
              f"{1e6 * r['total_s'] / r['n']:>10.1f} {r['no_decoys']:>10}")
    small, large = results[0], results[-1]
    size_ratio = large["n"] / small["n"]
    time_ratio = large["total_s"] / small["total_s"]
    print(f"time ratio {time_ratio:.1f}x for {size_ratio:.0f}x the actions "
          f"(linear: {size_ratio:.0f}x, quadratic: {size_ratio ** 2:.0f}x)")


if __name__ == "__main__":
    main()
