"""Euclidean distances between embeddings, as a rule compares and a release publishes them.

Computed in float64 from the (float32) vectors, with exactly rounded operations, then
rounded to the published precision (transforms/core/precision.py): a distance compared
with a threshold is the distance the release shows, and it is the same whatever the
CPU's instructions, the batch or the order of the vectors.
"""
from __future__ import annotations

import numpy as np

from transforms.core.precision import rounded_array


def distances_to(vectors: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """(n,) rounded distances from each row of `vectors` (n, d) to `vector` (d,)."""
    diffs = np.asarray(vectors, dtype=np.float64) - np.asarray(vector, dtype=np.float64)
    return rounded_array(np.sqrt((diffs * diffs).sum(axis=-1)))


def pairwise_distances(vectors: np.ndarray) -> np.ndarray:
    """Rounded distances between all distinct pairs of rows (upper triangle, flattened,
    row by row)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    diffs = vectors[:, None, :] - vectors[None, :, :]
    matrix = np.sqrt((diffs * diffs).sum(axis=-1))
    return rounded_array(matrix[np.triu_indices(len(vectors), k=1)])
