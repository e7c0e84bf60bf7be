"""F7 (§3.2.1): coarse-grained text detection.

A caption is fine-grained when CLIP ranks its own image first among the retrieval pool,
coarse otherwise. "First" is strict: another image scoring the same as the own image
(a tie, within float32 rounding) makes the caption coarse, since the text does not
single its image out. The
pool is the old test set or the new pool (`coarse.pool`; unspecified in the paper).

Every caption is scored against every pool image (the rank is released): the work is
captions x pool images, as float32 matrix products over blocks of the pool, the pool read
as vector files one at a time (never a side input of vectors), each caption's own score
computed once, and only the rows within float32 error of it recomputed in float64, once
per distinct text vector.
"""
from __future__ import annotations

from typing import List, Sequence

import apache_beam as beam
import numpy as np

from pipelines.fg import reasons
from pipelines.fg.records import Caption
from transforms.core.stage import StageFn
from transforms.vectors.vector_files import read_vector_file

FINE = "fine"   # tagged output: the fine-grained captions (F12 learns from them)


_TOL = 1e-4   # float32 dot-product error bound for unit vectors of CLIP's sizes
TIE = 1e-6    # cosines this close are a tie (the encoders compute in float32), as in renovate.py
_BLOCK = 4096  # pool rows scored against a batch of captions at once (memory: _BLOCK x batch floats)


def _exact(rows: np.ndarray, text: np.ndarray) -> np.ndarray:
    # per-row float64 dot products: the same value whatever batch a caption is in
    return np.einsum("ij,j->i", rows.astype(np.float64), text.astype(np.float64))


def own_scores(texts: np.ndarray, own_vectors: np.ndarray) -> np.ndarray:
    """Per text, the exact (float64) cosine to its own image's vector."""
    texts = np.asarray(texts, dtype=np.float32).reshape(len(own_vectors), -1)
    own_vectors = np.asarray(own_vectors, dtype=np.float32).reshape(len(texts), -1)
    return np.array([_exact(own_vectors[n:n + 1], texts[n])[0] for n in range(len(texts))], np.float64)


def count_at_least_own(texts: np.ndarray, owns: Sequence[str], scores: np.ndarray,
                       ids: Sequence[str], matrix: np.ndarray) -> np.ndarray:
    """Per text, how many rows of this part of the pool other than its own image score at
    least its own image's `scores` (within TIE). A float32 GEMM proposes: a row above the
    own score by more than float32 error counts, a row within that error is recomputed
    exactly, and the others cannot count; so the count is the same whatever the batch,
    block or part a row is scored in, and parts of the pool add up.

    Identical text vectors are scored once: the GEMM runs over the distinct vectors, and
    each distinct vector's near rows are recomputed once for all its texts. (A stand-in
    encoder gives one vector to every text without a colour word, and that vector ties
    with every image: recomputing per text made the test captions x pool in float64.)"""
    texts = np.asarray(texts, dtype=np.float32).reshape(len(owns), -1)
    matrix = np.asarray(matrix, dtype=np.float32).reshape(len(ids), -1)
    scores = np.asarray(scores, dtype=np.float64)
    # As Python would compare a float32 score with the float own_score (+ _TOL): in float32.
    above_at, own32, tol32 = (scores + _TOL).astype(np.float32), scores.astype(np.float32), np.float32(_TOL)
    distinct, vector_of = np.unique(texts, axis=0, return_inverse=True)
    vector_of = vector_of.reshape(-1)
    rows_of = {}
    for row, image_id in enumerate(ids):
        rows_of.setdefault(image_id, []).append(row)
    own_pairs = [(row, text) for text, own in enumerate(owns) for row in rows_of.get(own, ())]
    own_rows, own_texts = np.array(own_pairs, dtype=np.int64).reshape(-1, 2).T
    counts = np.zeros(len(owns), np.int64)
    for lo in range(0, len(ids), _BLOCK):
        block = matrix[lo:lo + _BLOCK]
        fast = (block @ distinct.T)[:, vector_of]               # (rows, texts)
        counts += (fast > above_at).sum(axis=0)
        near = np.abs(fast - own32) <= tol32
        here = (own_rows >= lo) & (own_rows < lo + len(block))
        near[own_rows[here] - lo, own_texts[here]] = False      # the own image is not "another"
        near_texts = np.flatnonzero(near.any(axis=0))
        for vector in np.unique(vector_of[near_texts]):
            texts_of = near_texts[vector_of[near_texts] == vector]
            rows = np.flatnonzero(near[:, texts_of].any(axis=1))
            exact = _exact(block[rows], distinct[vector])       # once per row and distinct vector
            at_least = exact[:, None] >= scores[texts_of] - TIE
            counts[texts_of] += (near[np.ix_(rows, texts_of)] & at_least).sum(axis=0)
    return counts


def own_image_ranks(texts: np.ndarray, owns: Sequence[str], ids: Sequence[str],
                    matrix: np.ndarray) -> List[int]:
    """Per text, 1 + the number of other pool images whose cosine to it is >= its own
    image's (within TIE); the pool (`ids`, `matrix`) holds every own image. Ranks do not
    depend on how captions were batched or the pool split (count_at_least_own)."""
    where = {i: n for n, i in enumerate(ids)}
    matrix = np.asarray(matrix, dtype=np.float32)
    scores = own_scores(texts, matrix[[where[own] for own in owns]])
    return [1 + int(n) for n in count_at_least_own(texts, owns, scores, ids, matrix)]


class DetectCoarse(StageFn):
    """batches of Captions (with retrieval embeddings) -> coarse Captions (rank >= 2,
    main), or a reject `not_coarse` plus the caption on the FINE output. Side inputs: the
    retrieval pool as vector files (transforms/vectors/vector_files.py; a batch reads one
    file at a time) and the target images' vectors by id (each caption's own image)."""
    stage, level = "coarse", "caption"
    counts_in = False   # a batch comes in; its captions are counted one by one

    def judge(self, batch: List[Caption], pool_files, images):
        self.counts.seen(len(batch), level=self.level)
        texts = np.stack([c.embedding for c in batch])
        owns = [c.image_id for c in batch]
        scores = own_scores(texts, np.stack([images[own] for own in owns]))
        above = np.zeros(len(batch), np.int64)
        pool_size = 0
        for vector_file in sorted(pool_files, key=lambda f: f.path):
            ids, _, matrix = read_vector_file(vector_file.path)
            above += count_at_least_own(texts, owns, scores, ids, matrix)
            pool_size += len(ids)
        for caption, n in zip(batch, above):
            caption.rank = rank = 1 + int(n)
            if rank == 1:
                yield self.reject(reasons.NOT_COARSE, caption.key,
                                  detail=f"own image ranked 1 of {pool_size}: fine-grained, kept as is")
                yield beam.pvalue.TaggedOutput(FINE, caption)
            else:
                yield caption
