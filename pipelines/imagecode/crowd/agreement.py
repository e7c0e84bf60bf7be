"""Agreement and annotator pools of ImageCoDe's crowd rounds (§4.1, Table 3; §3.2 fn. 6).

Units are descriptions, coders retrievers, values guessed indices: Krippendorff's alpha
nominal for static sets, interval for video sets (transforms/crowd/agreement.py); human
accuracy is the share of retrievals that found the target; pool overlap says how far the
worker pools of the splits overlap (the paper keeps them partly disjoint to avoid
annotator bias).

The Beam side needs no global collect: the coincidence matrix is a sum over units, so
`AgreementFn` combines SET_SIZE x SET_SIZE matrices, not the retrievals themselves.
"""
from __future__ import annotations

from typing import Dict

import apache_beam as beam
import numpy as np

from pipelines.imagecode.crowd.records import SET_SIZE, JudgedDescription
from transforms.crowd.agreement import alpha_from_coincidences, coincidences, pool_overlap

LEVEL_FOR_KIND = {"static": "nominal", "video": "interval"}   # §4.1


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
