"""F7 (§3.2.1): coarse-grained text detection.

A caption is fine-grained when CLIP ranks its own image first among the retrieval pool,
coarse otherwise. "First" is strict: another image scoring the same as the own image
(a tie, within float32 rounding) makes the caption coarse, since the text does not
single its image out. The
pool is the old test set or the new pool (`coarse.pool`; unspecified in the paper).
"""
from __future__ import annotations

from typing import List, Sequence

import apache_beam as beam
import numpy as np

from pipelines.fg import reasons
from pipelines.fg.records import Caption
from transforms.core.stage import StageFn

FINE = "fine"   # tagged output: the fine-grained captions (F12 learns from them)


_TOL = 1e-4   # float32 dot-product error bound for unit vectors of CLIP's sizes
TIE = 1e-6    # cosines this close are a tie (the encoders compute in float32), as in renovate.py


def _exact(rows: np.ndarray, text: np.ndarray) -> np.ndarray:
    # per-row float64 dot products: the same value whatever batch a caption is in
    return np.einsum("ij,j->i", rows.astype(np.float64), text.astype(np.float64))


def own_image_ranks(texts: np.ndarray, owns: Sequence[str], ids: Sequence[str],
                    matrix: np.ndarray) -> List[int]:
    """Per text, 1 + the number of other pool images whose cosine to it is >= its own
    image's (within TIE). float32 GEMM proposes; every score within float32 error of the own score
    is recomputed exactly, so ranks do not depend on how captions were batched."""
    where = {i: n for n, i in enumerate(ids)}
    texts = np.asarray(texts, dtype=np.float32).reshape(len(owns), -1)
    fast = np.asarray(matrix, dtype=np.float32) @ texts.T          # (pool, texts)
    ranks = []
    for col, own in enumerate(owns):
        own_row = where[own]
        own_score = float(_exact(matrix[own_row:own_row + 1], texts[col])[0])
        column = fast[:, col]
        above = column > own_score + _TOL
        near = np.flatnonzero(np.abs(column - own_score) <= _TOL)
        near = near[near != own_row]
        exact_near = _exact(matrix[near], texts[col]) >= own_score - TIE if len(near) else np.zeros(0, bool)
        ranks.append(1 + int(above.sum()) + int(exact_near.sum()))
    return ranks


class DetectCoarse(StageFn):
    """batches of Captions (with retrieval embeddings) -> coarse Captions (rank >= 2,
    main), or a reject `not_coarse` plus the caption on the FINE output. The retrieval
    pool is a side input of (image id, embedding)."""
    stage, level = "coarse", "caption"
    counts_in = False   # a batch comes in; its captions are counted one by one

    def __init__(self):
        self._cache = (None, [], np.zeros((0, 0), np.float32))

    def _pool(self, pool):
        if self._cache[0] is not pool:
            items = sorted(pool, key=lambda kv: kv[0])
            self._cache = (pool, [i for i, _ in items],
                           np.stack([np.asarray(v, np.float32) for _, v in items]))
        return self._cache[1], self._cache[2]

    def judge(self, batch: List[Caption], pool):
        ids, matrix = self._pool(pool)
        self.counts.seen(len(batch), level=self.level)
        ranks = own_image_ranks(np.stack([c.embedding for c in batch]),
                                [c.image_id for c in batch], ids, matrix)
        for caption, rank in zip(batch, ranks):
            caption.rank = rank
            if rank == 1:
                yield self.reject(reasons.NOT_COARSE, caption.key,
                                  detail=f"own image ranked 1 of {len(ids)}: fine-grained, kept as is")
                yield beam.pvalue.TaggedOutput(FINE, caption)
            else:
                yield caption
