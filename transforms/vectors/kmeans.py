"""k-means over a range of k, with the elbow and the silhouette of each k.

Elbow rule: on the inertia curve scaled to [0, 1] on both axes, the k farthest below
the straight line (chord) from the first to the last k - the point where adding
clusters stops paying off (the "kneedle" reading of the elbow).

Each k is fitted on its own (`kmeans_at`), so a pipeline can fit the k values of a curve
as separate elements on separate workers: a fit depends only on the matrix, k and the
seed, never on which other k values run or where.
"""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

from transforms.core.precision import figure


def elbow(ks: Sequence[int], inertias: Sequence[float]) -> int:
    """The k of maximum distance below the chord of the normalised inertia curve."""
    ks, inertias = np.asarray(ks, float), np.asarray(inertias, float)
    if len(ks) == 0:
        raise ValueError("elbow: no k was run")
    if len(ks) < 3:  # no bend to find on one or two points
        return int(ks[-1])
    x = (ks - ks[0]) / (ks[-1] - ks[0])
    span = inertias[0] - inertias[-1]
    y = (inertias - inertias[-1]) / span if span > 0 else np.zeros_like(inertias)
    chord = 1.0 - x                     # the line from (0, 1) to (1, 0)
    return int(ks[int(np.argmax(chord - y))])


def fits(k: int, rows: int) -> bool:
    """Whether k clusters can be fitted on `rows` points (2 <= k < rows)."""
    return 2 <= k < rows


def kmeans_at(matrix: np.ndarray, k: int, seed: int, n_init: int,
              silhouette_sample: int, in_place: bool = False) -> Tuple[dict, np.ndarray]:
    """({"k", "inertia", "silhouette"}, labels) of k-means with k clusters on the rows.

    `in_place`: the caller hands over the matrix (a writable array it will not use again),
    so scikit-learn centres it in place instead of copying it: one matrix in memory, not
    two. The fit is the same (the same centred values); only the matrix's last bits may
    move when the mean is added back, so the silhouette's rows are taken before the fit."""
    import sklearn
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_samples
    # The rows silhouette_score(sample_size=, random_state=seed) would draw, drawn the same way.
    rows = np.random.RandomState(seed).permutation(len(matrix))[:min(silhouette_sample, len(matrix))]
    sample = np.array(matrix[rows], np.float64)
    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed, copy_x=not in_place).fit(matrix)
    labels = km.labels_
    sil = float("nan")
    if len(np.unique(labels)) > 1:
        # Distances in blocks of rows within 64 MiB, not scikit-learn's 1 GiB: each row's
        # sums are computed alike, and the sample's whole distance matrix (5,000 rows:
        # 200 MB) is never held at once.
        with sklearn.config_context(working_memory=64):
            sil = float(np.mean(silhouette_samples(sample, labels[rows], metric="cosine")))
    # Multi-threaded sums, and the float32 encoder before them (whose kernels follow the
    # CPU: ~2e-7 a component), move the last bits of inertia and silhouette; the curve is
    # published, and the elbow read from it, as figures (transforms/core/precision.py).
    return {"k": int(k), "inertia": figure(km.inertia_), "silhouette": figure(sil)}, labels
