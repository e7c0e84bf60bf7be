"""Language- and vision-based decoys (§4), vectorised per cluster.

For each target datapoint (§4):
  language  draw `pool_size` candidate actions at random from the OTHER clusters; keep
            those sharing no code2/code4 noun with the target; take the 2 with the
            HIGHEST cosine to the target (similar wording, another topic, other objects).
  vision    draw `pool_size` candidates from the SAME cluster (all of it when it is not
            larger); keep those sharing no code1/code3 verb; take the 2 with the LOWEST
            cosine (same topic, other verbs, different meaning).
A target that cannot get 2 + 2 is dropped (no_decoys; the paper lost 22 of 10,287).

Candidates are unique actions (the same action typed twice is one candidate), each
shown in one canonical spelling, normalise_text's (lower case, single spaces, as in the
public CSVs) - the target too, so casing or spacing never marks it. The draws
for a target depend only on (seed, target id) and the pool - a hash per (target, draw
number) mapped into the candidate range - never on arrival order or batch layout.
The pool is ordered by (cluster, action key), so a cluster is a contiguous block and
"any row outside cluster c" is one index shift: no per-cluster index lists.

Cost: O(targets x pool_size x dim) matrix products in chunks, plus the hashes; no
Python loop over candidates. bench/bd2bb_decoys.py measures it at 10k and 100k actions.

In the pipeline the pool is one file (one row per unique action: BD2BB's ~10k x 384
float32, 15 MB), written from vector files where the actions arrive and loaded once per
worker; targets come in batches, never grouped whole by cluster, and a batch is scored
cluster by cluster. No collection is an element or a pickled side input; the draws do
not depend on how targets are batched.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipelines.bd2bb import reasons
from pipelines.bd2bb.argument_codes import nouns_of, verbs_of
from pipelines.bd2bb.records import CANDIDATES, LANGUAGE, TARGET, VISION, Codes, Sample
from transforms.core.sampling import priority
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo
from transforms.vectors.vector_files import RemoveFolderWhenDone, WriteVectorFiles, read_vector_file

CHUNK = 64           # targets per matrix product (memory: CHUNK x pool_size x dim floats)
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass
class DecoyPool:
    """Every candidate action, rows sorted by (cluster, key)."""
    keys: List[str]
    texts: List[str]
    clusters: np.ndarray        # (N,) int64
    embeddings: np.ndarray      # (N, d) float32, unit rows
    verbs: np.ndarray           # (N, V) int64 ids of code1/code3, -1 = none
    nouns: np.ndarray           # (N, M) int64 ids of code2/code4 nouns, -1 = none
    row_of: Dict[str, int]
    start: Dict[int, int]       # cluster -> first row
    size: Dict[int, int]        # cluster -> rows

    def __len__(self):
        return len(self.keys)


def _ids(sets: Sequence[frozenset]) -> np.ndarray:
    vocabulary = {w: i for i, w in enumerate(sorted(set().union(*sets)))} if sets else {}
    width = max([len(s) for s in sets] + [1])
    out = np.full((len(sets), width), -1, np.int64)
    for r, words in enumerate(sets):
        ids = sorted(vocabulary[w] for w in words)
        out[r, :len(ids)] = ids
    return out


def build_pool(entries: Sequence[Tuple[str, str, int, Codes, np.ndarray]]) -> DecoyPool:
    """(action key, text, cluster, codes, unit vector) per unique action -> the pool."""
    return _pool_of_words([(key, text, cluster, verbs_of(codes), nouns_of(codes), vector)
                           for key, text, cluster, codes, vector in entries])


def _pool_of_words(entries: Sequence[Tuple[str, str, int, frozenset, frozenset, np.ndarray]]) -> DecoyPool:
    """(key, text, cluster, verbs, nouns, vector) per unique action -> the pool."""
    entries = sorted(entries, key=lambda e: (e[2], e[0]))
    clusters = np.array([e[2] for e in entries], np.int64)
    dim = len(entries[0][5]) if entries else 0
    return _indexed(keys=[e[0] for e in entries], texts=[e[1] for e in entries], clusters=clusters,
                    embeddings=np.stack([np.asarray(e[5], np.float32) for e in entries]) if entries
                    else np.zeros((0, dim), np.float32),
                    verbs=_ids([frozenset(e[3]) for e in entries]), nouns=_ids([frozenset(e[4]) for e in entries]))


def _indexed(keys, texts, clusters, embeddings, verbs, nouns) -> DecoyPool:
    """The pool with its row and cluster lookups (rows sorted by (cluster, key))."""
    start, size = {}, {}
    if len(keys):
        values, first, counts = np.unique(clusters, return_index=True, return_counts=True)
        start = {int(c): int(f) for c, f in zip(values, first)}
        size = {int(c): int(n) for c, n in zip(values, counts)}
    return DecoyPool(keys=list(keys), texts=list(texts), clusters=clusters, embeddings=embeddings,
                     verbs=verbs, nouns=nouns, row_of={k: i for i, k in enumerate(keys)}, start=start, size=size)


def pool_entry_row(entry) -> Tuple[str, str, np.ndarray]:
    """A pool entry (key, text, cluster, codes, vector) as a vector file row: its key, its
    text, cluster, verbs and nouns as the JSON label, its vector."""
    key, text, cluster, codes, vector = entry
    return key, json.dumps([text, int(cluster), sorted(verbs_of(codes)), sorted(nouns_of(codes))]), vector


def write_pool(pool: DecoyPool, path: str) -> None:
    """The pool as one .npz (numpy arrays, no pickles; keys and texts as UTF-8 JSON)."""
    meta = json.dumps({"keys": pool.keys, "texts": pool.texts}).encode("utf-8")
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        np.savez(f, embeddings=pool.embeddings, clusters=pool.clusters, verbs=pool.verbs,
                 nouns=pool.nouns, meta=np.frombuffer(meta, np.uint8))


def read_pool(path: str) -> DecoyPool:
    """The pool write_pool wrote, with its row and cluster lookups."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        # A local file is read an array at a time; an object store's stream is not
        # seekable, so it is read whole first.
        source = f if not FileSystems.get_scheme(path) else io.BytesIO(f.read())
        with np.load(source, allow_pickle=False) as data:
            arrays = {name: data[name] for name in ("embeddings", "clusters", "verbs", "nouns")}
            meta = json.loads(data["meta"].tobytes().decode("utf-8"))
    return _indexed(meta["keys"], meta["texts"], **arrays)


def _write_pool_file(files, path: str) -> str:
    """The pool entries' vector files -> the pool, as one file; returns its path."""
    entries = []
    for f in files:
        ids, labels, vectors = read_vector_file(f.path)
        for key, label, vector in zip(ids, labels, vectors):
            text, cluster, verbs, nouns = json.loads(label)
            entries.append((key, text, cluster, frozenset(verbs), frozenset(nouns), vector))
    write_pool(_pool_of_words(entries), path)
    return path


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """A bijective 64-bit mixer (SplitMix64's finaliser): hash -> uniform draws."""
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK64
        x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK64
        x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK64
        return x ^ (x >> np.uint64(31))


def draws(seeds: np.ndarray, n: int, upper: int) -> np.ndarray:
    """(B, n) integers in [0, upper): draw j of target b from hash(seed_b, j)."""
    j = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        mixed = _splitmix64(seeds.astype(np.uint64)[:, None] * np.uint64(0x100000001B3) + j[None, :])
    return (mixed % np.uint64(max(upper, 1))).astype(np.int64)


def _cosines(emb_t: np.ndarray, embeddings: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(B, d) targets x (B, P) candidate rows -> (B, P) dot products (cosines of unit rows)."""
    return np.matmul(embeddings[rows], emb_t[:, :, None])[:, :, 0]


def _shares(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(B, W) target ids vs (B, P, W) candidate ids -> (B, P): any id in common (-1 = none)."""
    eq = (b[:, :, :, None] == a[:, None, None, :]) & (a[:, None, None, :] >= 0)
    return eq.any(axis=(2, 3))


def _best_two(rows: np.ndarray, score: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(B, 2) rows of the two highest-scoring valid, distinct candidates; -1 when missing."""
    s = np.where(valid, score, -np.inf)
    order = np.argsort(-s, axis=1, kind="stable")
    rows, s = np.take_along_axis(rows, order, 1), np.take_along_axis(s, order, 1)
    ok = np.isfinite(s)
    first = np.where(ok[:, 0], rows[:, 0], -1)
    other = ok & (rows != first[:, None])
    second = np.where(other.any(1), rows[np.arange(len(rows)), other.argmax(1)], -1)
    return np.stack([first, np.where(first >= 0, second, -1)], axis=1)


def select_for_cluster(pool: DecoyPool, cluster: int, target_rows: np.ndarray,
                       target_seeds: np.ndarray, pool_size: int) -> Tuple[np.ndarray, np.ndarray]:
    """Language and vision decoys for targets of one cluster: two (B, 2) arrays of pool
    rows (-1 where a decoy is missing). `target_seeds` are per-target uint64 hashes."""
    n, start, size = len(pool), pool.start[cluster], pool.size[cluster]
    lan = np.full((len(target_rows), 2), -1, np.int64)
    vis = np.full((len(target_rows), 2), -1, np.int64)
    for lo in range(0, len(target_rows), CHUNK):
        t = target_rows[lo:lo + CHUNK]
        seeds = target_seeds[lo:lo + CHUNK]
        emb_t = pool.embeddings[t]
        if n > size:   # language: uniform over rows outside [start, start + size)
            r = draws(seeds, pool_size, n - size)
            rows = r + (r >= start) * size
            cos = _cosines(emb_t, pool.embeddings, rows)
            valid = ~_shares(pool.nouns[t], pool.nouns[rows])
            lan[lo:lo + CHUNK] = _best_two(rows, cos, valid)
        if size - 1 <= pool_size:   # vision: the whole cluster when it fits in the pool
            rows = np.broadcast_to(np.arange(start, start + size), (len(t), size))
        else:
            rows = start + draws(seeds ^ np.uint64(0x5DEECE66D), pool_size, size)
        cos = _cosines(emb_t, pool.embeddings, rows)
        valid = (rows != t[:, None]) & ~_shares(pool.verbs[t], pool.verbs[rows])
        vis[lo:lo + CHUNK] = _best_two(rows, -cos, valid)   # lowest cosine first
    return lan, vis


def target_seed(seed: int, sample_id: str) -> int:
    return priority(seed, "decoys/" + sample_id)


def shuffle(seed: int, sample_id: str, target: str, lan: Sequence[str],
            vis: Sequence[str]) -> Tuple[List[str], List[str], int]:
    """The 5 candidates in a seeded random order; returns (endings, types, label). The
    decoys keep this order; the target is later moved to a position balanced per split
    (pipelines/bd2bb/positions.py)."""
    candidates = [(target, TARGET)] + [(a, LANGUAGE) for a in lan] + [(a, VISION) for a in vis]
    assert len(candidates) == CANDIDATES
    order = np.random.default_rng(priority(seed, "order/" + sample_id)).permutation(CANDIDATES)
    shown = [candidates[i] for i in order]
    return [a for a, _ in shown], [k for _, k in shown], int(np.flatnonzero(order == 0)[0])


def position_uniformity(labels: Sequence[int]) -> dict:
    """Counts of the target position and Pearson's chi-square p-value against uniform."""
    counts = np.bincount(np.asarray(labels, np.int64), minlength=CANDIDATES)[:CANDIDATES]
    return uniformity_of_counts(counts)


def uniformity_of_counts(counts: Sequence[int]) -> dict:
    """position_uniformity from the number of targets at each position."""
    from scipy.stats import chisquare
    counts = np.asarray(counts, np.int64)
    p = float(chisquare(counts).pvalue) if counts.sum() else float("nan")
    return {"counts": [int(c) for c in counts], "chi2_p": p, "n": int(counts.sum())}


# --- Beam ----------------------------------------------------------------------------------


BATCH = 2048   # targets per call: scored cluster by cluster, CHUNK at a time


class _DecoysForBatch(StageFn):
    """A batch of targets, scored cluster by cluster; counts each target in."""
    stage, level = "decoys", "sample"
    counts_in = False

    def __init__(self, seed: int, pool_size: int):
        self.seed, self.pool_size = seed, pool_size
        self._pool_path, self._pool = None, None

    def _load(self, path: str) -> DecoyPool:
        if path != self._pool_path:   # once per worker (the DoFn instance is reused)
            self._pool, self._pool_path = read_pool(path), path
        return self._pool

    def judge(self, batch, pool_path: str):
        pool = self._load(pool_path)
        by_cluster: Dict[int, list] = {}
        for d in batch:
            by_cluster.setdefault(d.cluster, []).append(d)
        for cluster in sorted(by_cluster):
            yield from self._cluster(pool, cluster, sorted(by_cluster[cluster], key=lambda d: d.tuple.tuple_id))

    def _cluster(self, pool: DecoyPool, cluster: int, datapoints):
        rows = np.array([pool.row_of[d.tuple.action_key] for d in datapoints], np.int64)
        seeds = np.array([target_seed(self.seed, d.tuple.tuple_id) for d in datapoints], np.uint64)
        lan, vis = select_for_cluster(pool, cluster, rows, seeds, self.pool_size)
        for d, l_rows, v_rows in zip(datapoints, lan, vis):
            self.counts.seen(level="sample")
            if (l_rows < 0).any() or (v_rows < 0).any():
                yield self.reject(
                    reasons.NO_DECOYS, d.tuple.tuple_id, source=d.tuple.image, **d.tuple.place,
                    detail=f"{int((l_rows >= 0).sum())}/2 language, {int((v_rows >= 0).sum())}/2 vision "
                           f"decoys for {d.tuple.action[:200]!r}")
                continue
            # One spelling per action key in all five endings (the pool's normalise_text
            # form, lower case like the public CSVs): a typed target must not stand out.
            endings, types, label = shuffle(self.seed, d.tuple.tuple_id, pool.texts[pool.row_of[d.tuple.action_key]],
                                            [pool.texts[r] for r in l_rows], [pool.texts[r] for r in v_rows])
            yield Sample(d.tuple.tuple_id, d, tuple(endings), tuple(types), label)


class SelectDecoys(beam.PTransform):
    """{"datapoints": Datapoint (clustered), "pool": (key, text, cluster, codes, vector) per
    unique action} -> Sample / no_decoys.

    The pool is written to one file under `scratch_dir` (removed when the decoys are
    chosen) and loaded once per worker, because language decoys may come from any other
    cluster; targets come in batches."""

    def __init__(self, seed: int, pool_size: int, scratch_dir: str):
        super().__init__()
        self.seed, self.pool_size, self.scratch_dir = seed, pool_size, scratch_dir

    def expand(self, inputs):
        folder = self.scratch_dir
        pool_file = (inputs["pool"]
                     | "Pool to files" >> WriteVectorFiles(FileSystems.join(folder, "entries"), row_of=pool_entry_row)
                     | "File list" >> beam.combiners.ToList()
                     | "One pool file" >> beam.Map(_write_pool_file, FileSystems.join(folder, "pool.npz")))
        selected = (inputs["datapoints"]
                    | "Batch targets" >> beam.BatchElements(min_batch_size=1, max_batch_size=BATCH)
                    | "Select" >> stage_pardo(_DecoysForBatch(self.seed, self.pool_size),
                                              beam.pvalue.AsSingleton(pool_file)))
        _ = ((selected[MAIN], selected[REJECTS]) | "Chosen" >> beam.Flatten()
             | "Remove pool files" >> RemoveFolderWhenDone(folder))
        return selected
