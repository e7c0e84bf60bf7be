"""k-means over a range of k, with the elbow and the silhouette of each k.

Elbow rule: on the inertia curve scaled to [0, 1] on both axes, the k farthest below
the straight line (chord) from the first to the last k - the point where adding
clusters stops paying off (the "kneedle" reading of the elbow).
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np


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


def kmeans_curve(matrix: np.ndarray, ks: Sequence[int], seed: int, n_init: int,
                 silhouette_sample: int) -> Tuple[List[dict], Dict[int, np.ndarray]]:
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score
    curve, labels = [], {}
    for k in ks:
        if not 2 <= k < len(matrix):
            continue
        km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(matrix)
        labels[k] = km.labels_
        sample = min(silhouette_sample, len(matrix))
        sil = silhouette_score(matrix, km.labels_, metric="cosine", sample_size=sample,
                               random_state=seed) if len(set(km.labels_)) > 1 else float("nan")
        # Multi-threaded sums (and a float32 encoder before them) move the last bits of
        # inertia and silhouette from run to run; at 6 significant digits the curve, and
        # the elbow read from it, are the same on every run.
        curve.append({"k": int(k), "inertia": _figure(km.inertia_), "silhouette": _figure(sil)})
    return curve, labels


def _figure(x) -> float:
    return float(f"{float(x):.6g}")
