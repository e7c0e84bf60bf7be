"""The figures of §4-§5 and Table 4, computed on examples (spec S10-S12), each a small
report under stats/ that the data card reads (pipelines/nlvr2/datacard.py).

    agreement      Fleiss' kappa and Krippendorff's alpha over the labels of each example
                   (the writer-time judgement + the extra ones), before and after the
                   paper's rules (§4: 0.814 / 0.906 before, 0.889 / 0.912 after)
    human          §5, Table 6: per worker, the share of their extra judgements that equal
                   the label, their own sentences excluded, over workers with at least
                   `analysis.min_worker_judgements` such judgements; mean and population sd
                   per split
    table4         Table 4 per split: examples, (set, sentence) groups (the paper's "unique
                   sentences"), distinct sentence strings, distinct images (URLs), sets
    groups         consistency groups (S11): examples per group and their True/False mix
    synsets        sets and examples per synset
    leakage        image URLs (and aHash values, when the build has the images) in two or
                   more splits, and URLs in two or more sets
    subsets        balanced / unbalanced subset sizes (release.py writes the files)

Every combiner keeps a bounded accumulator or works on distinct keys, so the figures are
the same on any runner and number of workers.
"""
from __future__ import annotations

import math
from typing import Iterable, List, Tuple

import apache_beam as beam
import numpy as np

from pipelines.nlvr2.records import SPLITS, Example
from transforms.crowd.agreement import fleiss_kappa, krippendorff_alpha

Histogram = List[Tuple[Tuple[int, int], int]]   # ((n_true, n_false), examples)


def split_order(split: str):
    return (SPLITS.index(split) if split in SPLITS else len(SPLITS), split)


# --- agreement --------------------------------------------------------------------------

def label_counts(example: Example) -> Tuple[int, int]:
    """(True, False) among the writer-time judgement and the extra judgements."""
    judgements = [j for _, j in example.validation + example.extra_validations]
    return judgements.count("True"), judgements.count("False")


def agreement_figures(histogram: Histogram, raters: int) -> dict:
    """Fleiss' kappa over the examples with exactly `raters` labels (Fleiss' kappa assumes
    a fixed number of raters: 1 + 4 extra, §3.4), Krippendorff's alpha (nominal) over every
    example with 2 labels or more (alpha allows missing values)."""
    fixed = [(c, n) for c, n in histogram if sum(c) == raters]
    pairable = [(c, n) for c, n in histogram if sum(c) >= 2]
    per_size = {}
    for c, n in histogram:
        per_size[str(sum(c))] = per_size.get(str(sum(c)), 0) + n
    return {"examples": sum(n for _, n in histogram),
            "examples_by_labels": dict(sorted(per_size.items())),
            "examples_with_all_labels": sum(n for _, n in fixed),
            "labels_per_example": raters,
            "fleiss_kappa": _nan_to_none(fleiss_kappa(_expand(fixed))) if fixed else None,
            "krippendorff_alpha": _alpha(pairable, raters) if pairable else None}


def _expand(histogram: Histogram) -> np.ndarray:
    counts = np.array([c for c, _ in histogram], dtype=float)
    return np.repeat(counts, [n for _, n in histogram], axis=0)


def _alpha(histogram: Histogram, raters: int):
    """Alpha from the (units x labels) counts: each unit as a column of `raters` coders
    (True = 1, False = 0, the rest missing); the coders' identities do not enter nominal
    alpha, only which values each unit got."""
    width = max(raters, max(sum(c) for c, _ in histogram))
    columns = [[1.0] * t + [0.0] * f + [math.nan] * (width - t - f) for (t, f), _ in histogram]
    data = np.repeat(np.array(columns), [n for _, n in histogram], axis=0).T
    return _nan_to_none(krippendorff_alpha(data, "nominal", values=[0.0, 1.0]))


def _nan_to_none(value: float):
    return None if value is None or math.isnan(value) else value


class Agreement(beam.PTransform):
    """Examples -> one report {"stage": when, figures} (see agreement_figures)."""

    def __init__(self, when: str, raters: int):
        super().__init__()
        self._when, self._raters = when, raters

    def expand(self, examples):
        when, raters = self._when, self._raters
        return (examples
                | "Label counts" >> beam.Map(label_counts)
                | "Count" >> beam.combiners.Count.PerElement()
                | "Histogram" >> beam.combiners.ToList()
                | "Figures" >> beam.Map(lambda h: {"when": when, **agreement_figures(sorted(h), raters)}))


# --- human performance (§5, Table 6) ------------------------------------------------------

def worker_judgements(example: Example) -> Iterable[Tuple[Tuple[str, str], Tuple[int, int]]]:
    """((split, worker), (correct, 1)) per extra judgement not on the worker's own sentence."""
    label = "True" if example.label else "False"
    for worker, judgement in example.extra_validations:
        if worker != example.writer:
            yield (example.split, worker), (int(judgement == label), 1)


def human_performance(per_worker: Iterable[Tuple[Tuple[str, str], Tuple[int, int]]],
                      min_judgements: int) -> dict:
    """{split: {workers, judgements, mean, sd}} in percent, sd the population sd (the
    paper's Table 6 gives 96.2 +- 2.1 where these files give 96.28 +- 2.13: it truncates)."""
    by_split = {}
    for (split, _), (correct, n) in per_worker:
        by_split.setdefault(split, []).append((correct, n))
    out = {}
    for split in sorted(by_split, key=split_order):
        kept = [(c, n) for c, n in by_split[split] if n >= min_judgements]
        accuracy = np.array([100.0 * c / n for c, n in kept])
        out[split] = {"workers": len(by_split[split]), "workers_counted": len(kept),
                      "judgements_counted": sum(n for _, n in kept),
                      "mean": float(accuracy.mean()) if len(kept) else None,
                      "sd": float(accuracy.std()) if len(kept) else None}
    return out


class HumanPerformance(beam.PTransform):
    def __init__(self, min_judgements: int):
        super().__init__()
        self._min = min_judgements

    def expand(self, examples):
        least = self._min
        return (examples
                | "Judgements" >> beam.FlatMap(worker_judgements)
                | "Per worker" >> beam.CombinePerKey(lambda pairs: tuple(map(sum, zip(*pairs))) or (0, 0))
                | "Workers" >> beam.combiners.ToList()
                | "Figures" >> beam.Map(lambda rows: {"min_judgements": least,
                                                      "splits": human_performance(sorted(rows), least)}))


# --- Table 4, groups, synsets ---------------------------------------------------------------

TABLE4_KINDS = ("examples", "sets", "groups", "sentences", "images")


def table4_keys(example: Example):
    """((split, kind), value) for each thing Table 4 counts distinct values of."""
    s = example.split
    yield (s, "examples"), example.identifier
    yield (s, "sets"), str(example.set_id)
    yield (s, "groups"), f"{example.set_id}-{example.sentence_id}"
    yield (s, "sentences"), example.sentence
    yield (s, "images"), example.left_url
    yield (s, "images"), example.right_url
    yield ("all", "images"), example.left_url
    yield ("all", "images"), example.right_url


def _nested(rows) -> dict:
    out = {}
    for (split, kind), n in sorted(rows):
        out.setdefault(split, {})[kind] = n
    return out


class Table4(beam.PTransform):
    def expand(self, examples):
        return (examples
                | "Keys" >> beam.FlatMap(table4_keys)
                | "Distinct" >> beam.Distinct()
                | "Kinds" >> beam.Keys()
                | "Count" >> beam.combiners.Count.PerElement()
                | "All" >> beam.combiners.ToList()
                | "Report" >> beam.Map(lambda rows: {"table4": _nested(rows)}))


class GroupShapes(beam.PTransform):
    """Consistency groups (S11): {split: {"<n> examples, <t> True": groups}}."""

    def expand(self, examples):
        return (examples
                | "By group" >> beam.Map(lambda x: (x.group, int(x.label)))
                | "Group" >> beam.CombinePerKey(lambda labels: _pair_sum(labels))
                | "Shape" >> beam.MapTuple(lambda key, tn: (key[0], tn[1], tn[0]))
                | "Count" >> beam.combiners.Count.PerElement()
                | "All" >> beam.combiners.ToList()
                | "Report" >> beam.Map(_group_report))


def _pair_sum(labels) -> Tuple[int, int]:
    """(True, examples) over labels (ints) or partial (True, examples) pairs."""
    t = n = 0
    for x in labels:
        if isinstance(x, tuple):
            t, n = t + x[0], n + x[1]
        else:
            t, n = t + x, n + 1
    return t, n


def _group_report(rows) -> dict:
    shapes = {}
    for (split, size, n_true), groups in sorted(rows, key=lambda r: (split_order(r[0][0]), r[0][1:])):
        shapes.setdefault(split, []).append({"examples": size, "true": n_true, "groups": groups})
    return {"shapes": shapes}


class SynsetCounts(beam.PTransform):
    """{synset: {"sets": n, "examples": n}} over every split."""

    def expand(self, examples):
        sets = (examples
                | "Set synsets" >> beam.Map(lambda x: ((x.split, x.set_id), x.synset))
                | "Distinct sets" >> beam.Distinct()
                | "Synset of set" >> beam.MapTuple(lambda _, synset: (synset, "sets")))
        each = examples | "Example synsets" >> beam.Map(lambda x: (x.synset, "examples"))
        return ((sets, each) | "Both" >> beam.Flatten()
                | "Count" >> beam.combiners.Count.PerElement()
                | "All" >> beam.combiners.ToList()
                | "Report" >> beam.Map(_synset_report))


def _synset_report(rows) -> dict:
    out = {}
    for (synset, kind), n in sorted(rows):
        out.setdefault(synset, {"sets": 0, "examples": 0})[kind] = n
    return {"synsets": out}


# --- leakage ------------------------------------------------------------------------------

LEAKAGE_EXAMPLES = 20   # shared images listed by name in the report (all are counted)


class ImageLeakage(beam.PTransform):
    """(image key, split, set) triples -> {kind: figures}: keys in two or more splits (the
    splits are set-disjoint, §3.4, but an image may come back in another set) and keys in
    two or more sets. `kind` is "url" or "ahash"."""

    def __init__(self, kind: str):
        super().__init__()
        self._kind = kind

    def expand(self, triples):
        kind = self._kind
        return (triples
                | "Distinct" >> beam.Distinct()
                | "By image" >> beam.MapTuple(lambda key, split, set_id: (key, (split, set_id)))
                | "Group" >> beam.GroupByKey()
                | "Spread" >> beam.MapTuple(lambda key, places: (
                    key, sorted({s for s, _ in places}, key=split_order), len(set(places))))
                | "Shared" >> beam.Filter(lambda row: row[2] > 1)
                | "All" >> beam.combiners.ToList()
                | "Report" >> beam.Map(lambda rows: {"kind": kind, **leakage_figures(rows)}))


def leakage_figures(rows) -> dict:
    """rows: (image key, [splits], sets) of every image in two or more sets."""
    across = sorted((key, splits) for key, splits, _ in rows if len(splits) > 1)
    pairs = {}
    for _, splits in across:
        for i, a in enumerate(splits):
            for b in splits[i + 1:]:
                pairs[f"{a}|{b}"] = pairs.get(f"{a}|{b}", 0) + 1
    return {"in_several_sets": len(rows), "in_several_splits": len(across),
            "by_split_pair": dict(sorted(pairs.items())),
            "examples": [{"image": k, "splits": s} for k, s in across[:LEAKAGE_EXAMPLES]]}


def url_places(example: Example):
    for url in (example.left_url, example.right_url):
        yield url, example.split, example.set_id
