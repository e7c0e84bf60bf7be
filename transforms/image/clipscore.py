"""CLIPScore (Hessel et al. 2021) over embeddings that are already L2-normalised.

The reference implementation (github.com/jmhessel/clipscore) prefixes every candidate
text with "A photo depicts " before it goes through CLIP's text tower, and scores
    CLIPScore(image, text) = w * max(cos(image, text), 0),   w = 2.5.
This module holds only that formula and the prefix; the encoders that produce the
vectors are in transforms/image/encoders.py and transforms/image/text_encoders.py.
"""
from __future__ import annotations

import numpy as np

PREFIX = "A photo depicts "
WEIGHT = 2.5


def with_prefix(text: str, prefix: str = PREFIX) -> str:
    """The text as the reference code encodes it."""
    return prefix + text


def clipscore(image: np.ndarray, text: np.ndarray, weight: float = WEIGHT) -> np.ndarray:
    """Row-wise CLIPScore of paired unit vectors: (n, d) x (n, d) -> (n,), or one pair of
    (d,) vectors -> a float. Computed in float64 so the value is the same whatever batch
    a pair was scored in."""
    image = np.asarray(image, dtype=np.float64)
    text = np.asarray(text, dtype=np.float64)
    cos = np.einsum("...d,...d->...", image, text)
    return weight * np.maximum(cos, 0.0)
