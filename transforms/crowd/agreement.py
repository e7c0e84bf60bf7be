"""Agreement measures of crowd judgements (any benchmark with crowd rounds).

* Krippendorff's alpha over reliability data (coders x units, NaN = missing), computed
  from the coincidence matrix, vectorised; nominal, ordinal or interval.
* Fleiss' kappa over (items x categories) rating counts.
* Human accuracy: the share of answers that found the target.
* Pool overlap: how far the worker pools of the splits overlap.
"""
from __future__ import annotations

from itertools import combinations
from typing import Iterable, Mapping, Optional

import numpy as np

from schemas.records import SPLITS

LEVELS = ("nominal", "ordinal", "interval")


# --- Krippendorff's alpha ---------------------------------------------------------------

def value_counts(reliability_data, values) -> np.ndarray:
    """(units x values) how many coders gave each value to each unit."""
    data = np.asarray(reliability_data, dtype=float)
    return (data[:, :, None] == np.asarray(values, dtype=float)[None, None, :]).sum(axis=0)


def coincidences(counts: np.ndarray) -> np.ndarray:
    """The coincidence matrix o_ck = sum_u n_uc (n_uk - [c=k]) / (m_u - 1).

    Units with fewer than two values are not pairable and add nothing.
    """
    counts = np.asarray(counts, dtype=float)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    weighted = counts / (m - 1)[:, None]
    return weighted.T @ counts - np.diag(weighted.sum(axis=0))


def distance_matrix(values, level: str, marginals: Optional[np.ndarray] = None) -> np.ndarray:
    """delta^2_ck for the level of measurement (ordinal needs the value marginals n_c)."""
    v = np.asarray(values, dtype=float)
    if level == "nominal":
        return 1.0 - np.eye(len(v))
    if level == "interval":
        return (v[:, None] - v[None, :]) ** 2
    if level == "ordinal":
        n = np.asarray(marginals, dtype=float)
        cum = np.cumsum(n)
        i, j = np.meshgrid(np.arange(len(v)), np.arange(len(v)), indexing="ij")
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        between = cum[hi] - cum[lo] + n[lo]   # sum of n_g for g from c to k
        return (between - (n[:, None] + n[None, :]) / 2.0) ** 2
    raise ValueError(f"level must be one of {LEVELS}, got {level!r}")


def alpha_from_coincidences(o: np.ndarray, values, level: str = "nominal") -> float:
    """alpha = 1 - (n - 1) sum(o * delta) / sum(n_c n_k delta); NaN when undefined."""
    o = np.asarray(o, dtype=float)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    delta = distance_matrix(values, level, n_c)
    expected = (np.outer(n_c, n_c) * delta).sum()
    if n <= 1 or expected == 0:  # no pairable values, or only one value ever used
        return float("nan")
    return float(1.0 - (n - 1) * (o * delta).sum() / expected)


def krippendorff_alpha(reliability_data, level: str = "nominal", values=None) -> float:
    """Krippendorff's alpha of (coders x units) data with NaN for missing values.

    `values` is the value domain; by default the values that occur.
    """
    data = np.asarray(reliability_data, dtype=float)
    if values is None:
        values = np.unique(data[~np.isnan(data)])
    return alpha_from_coincidences(coincidences(value_counts(data, values)), values, level)


# --- Fleiss' kappa ----------------------------------------------------------------------

def fleiss_kappa(counts) -> float:
    """Fleiss' kappa of (items x categories) rating counts; items may have different numbers
    of raters (each item's agreement uses its own n_i; items with fewer than 2 are skipped)."""
    counts = np.asarray(counts, dtype=float)
    n = counts.sum(axis=1)
    counts, n = counts[n >= 2], n[n >= 2]
    if not len(n):
        return float("nan")
    p_i = ((counts * (counts - 1)).sum(axis=1)) / (n * (n - 1))
    p_j = counts.sum(axis=0) / n.sum()
    p_e = float((p_j ** 2).sum())
    if p_e == 1.0:
        return float("nan")
    return float((p_i.mean() - p_e) / (1.0 - p_e))


def human_accuracy(guessed, target) -> float:
    """Share of retrievals whose guess is the target; NaN when there are none."""
    guessed, target = np.asarray(guessed), np.asarray(target)
    return float(np.mean(guessed == target)) if guessed.size else float("nan")


# --- annotator pools --------------------------------------------------------------------


def pool_overlap(workers_by_split: Mapping[str, Iterable[str]]) -> dict:
    """How far the splits' worker pools overlap.

    Returns {"sizes": {split: n}, "jaccard": {"a|b": |A&B| / |A|B|},
    "seen_elsewhere": {split: share of its workers who also worked on another split}}.
    """
    pools = {s: set(w) for s, w in workers_by_split.items()}
    order = _split_order(pools)
    jaccard = {}
    for a, b in combinations(order, 2):
        union = pools[a] | pools[b]
        jaccard[f"{a}|{b}"] = len(pools[a] & pools[b]) / len(union) if union else float("nan")
    seen = {}
    for s in order:
        others = set().union(*(pools[o] for o in order if o != s))
        seen[s] = len(pools[s] & others) / len(pools[s]) if pools[s] else float("nan")
    return {"sizes": {s: len(pools[s]) for s in order}, "jaccard": jaccard, "seen_elsewhere": seen}


# --- Beam -------------------------------------------------------------------------------


def _split_order(splits):
    return sorted(splits, key=lambda s: (SPLITS.index(s) if s in SPLITS else len(SPLITS), s))
