"""Agreement and annotator pools of the crowd rounds (ImageCoDe §4.1, Table 3; §3.2 fn. 6).

* Krippendorff's alpha over reliability data (coders x units, NaN = missing), computed
  from the coincidence matrix, vectorised. Units are descriptions, coders retrievers,
  values guessed indices: nominal for static sets, interval for video sets.
* Human accuracy: the share of retrievals that found the target.
* Pool overlap: how far the worker pools of the splits overlap (the paper keeps them
  partly disjoint to avoid annotator bias).

The Beam side needs no global collect: the coincidence matrix is a sum over units, so
`AgreementFn` combines SET_SIZE x SET_SIZE matrices, not the retrievals themselves.
"""
from __future__ import annotations

from itertools import combinations
from typing import Dict, Iterable, Mapping, Optional

import apache_beam as beam
import numpy as np

from pipelines.imagecode.rounds_schema import SET_SIZE, JudgedDescription
from schemas.records import SPLITS

LEVELS = ("nominal", "ordinal", "interval")
LEVEL_FOR_KIND = {"static": "nominal", "video": "interval"}   # §4.1


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


def human_accuracy(guessed, target) -> float:
    """Share of retrievals whose guess is the target; NaN when there are none."""
    guessed, target = np.asarray(guessed), np.asarray(target)
    return float(np.mean(guessed == target)) if guessed.size else float("nan")


# --- annotator pools --------------------------------------------------------------------

def _split_order(splits):
    return sorted(splits, key=lambda s: (SPLITS.index(s) if s in SPLITS else len(SPLITS), s))


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

class AgreementFn(beam.CombineFn):
    """JudgedDescriptions -> accuracy and alpha (nominal, interval) of their retrievals.

    The accumulator is [coincidences (V x V), descriptions, retrievals, correct]:
    bounded by the value domain, whatever the number of descriptions.
    """

    def __init__(self, n_values: int = SET_SIZE):
        self._n = n_values

    def create_accumulator(self):
        return [np.zeros((self._n, self._n)), 0, 0, 0]

    def add_input(self, acc, judged: JudgedDescription):
        guesses = [g for _, g in judged.guesses]
        acc[0] += coincidences(np.bincount(guesses, minlength=self._n)[None, :])
        acc[1] += 1
        acc[2] += len(guesses)
        acc[3] += sum(g == judged.target_index for g in guesses)
        return acc

    def merge_accumulators(self, accs):
        merged = self.create_accumulator()
        for acc in accs:
            for i in range(4):
                merged[i] += acc[i]
        return merged

    def extract_output(self, acc):
        values = np.arange(self._n)
        return {"descriptions": acc[1], "retrievals": acc[2],
                "accuracy": acc[3] / acc[2] if acc[2] else float("nan"),
                "alpha_nominal": alpha_from_coincidences(acc[0], values, "nominal"),
                "alpha_interval": alpha_from_coincidences(acc[0], values, "interval")}


class ComputeAgreement(beam.PTransform):
    """JudgedDescription -> one dict per (split, kind), kind in static, video, all.

    By default only kept descriptions count (the paper reports on its final dataset).
    Each dict: split, kind, descriptions, retrievals, accuracy, alpha_nominal,
    alpha_interval, and for static/video `level` and `alpha` (nominal for static,
    interval for video, §4.1). Alpha is NaN where no description has two retrievals
    (train, with one retriever each): agreement needs pairable values.
    """

    def __init__(self, kept_only: bool = True):
        super().__init__()
        self._kept_only = kept_only

    def expand(self, judged):
        kept_only = self._kept_only

        def keys(j: JudgedDescription):
            if kept_only and not j.kept:
                return
            yield (j.split, "video" if j.is_video else "static"), j
            yield (j.split, "all"), j

        def row(kv):
            (split, kind), stats = kv
            out = dict(split=split, kind=kind, **stats)
            if kind in LEVEL_FOR_KIND:
                out["level"] = LEVEL_FOR_KIND[kind]
                out["alpha"] = stats[f"alpha_{out['level']}"]
            return out

        return (judged | "Key by split, kind" >> beam.FlatMap(keys)
                | beam.CombinePerKey(AgreementFn()) | "Row" >> beam.Map(row))


class _PoolsFn(beam.CombineFn):
    """(role, split, worker) -> {role: {split: set of workers}}; bounded by the workers."""

    def create_accumulator(self):
        return {}

    def add_input(self, acc, item):
        role, split, worker = item
        acc.setdefault(role, {}).setdefault(split, set()).add(worker)
        return acc

    def merge_accumulators(self, accs):
        merged = {}
        for acc in accs:
            for role, by_split in acc.items():
                for split, workers in by_split.items():
                    merged.setdefault(role, {}).setdefault(split, set()).update(workers)
        return merged

    def extract_output(self, acc):
        return acc


def pools_report(pools: Dict[str, Dict[str, set]]) -> dict:
    """{"workers": {role: {split: [sorted workers]}}, "overlap": {role: pool_overlap}}.

    Role "any" pools describers and retrievers together.
    """
    roles = dict(pools)
    anyone: Dict[str, set] = {}
    for by_split in pools.values():
        for split, workers in by_split.items():
            anyone.setdefault(split, set()).update(workers)
    roles["any"] = anyone
    return {"workers": {r: {s: sorted(w) for s, w in by_split.items()} for r, by_split in roles.items()},
            "overlap": {r: pool_overlap(by_split) for r, by_split in roles.items()}}


class WorkerPools(beam.PTransform):
    """{"descriptions": Description, "retrievals": Retrieval} -> one pools_report dict.

    Records which workers described / retrieved in which split, and how far the split
    pools overlap, per role and for anyone.
    """

    def expand(self, inputs):
        describers = inputs["descriptions"] | "Describers" >> beam.Map(
            lambda d: ("describer", d.split, d.worker))
        retrievers = inputs["retrievals"] | "Retrievers" >> beam.Map(
            lambda r: ("retriever", r.split, r.worker))
        return ((describers, retrievers) | beam.Flatten()
                | beam.CombineGlobally(_PoolsFn()) | "Report" >> beam.Map(pools_report))
