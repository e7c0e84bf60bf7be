"""Aggregation of crowd labels: one label per task from its workers' answers (any benchmark).

An answer is a (task, worker, label) triple; labels are any sortable values (True/False,
"True"/"False", 0/1). Two methods, named by the config key `crowd.aggregation`:

  majority      the label most workers gave. A tie has no majority: the task gets None,
                and the caller decides (the papers' keep rules drop such an example).
                crowd-kit's MajorityVote breaks a tie by the label order instead; the two
                agree wherever there is no tie (tests/crowd/test_aggregation.py).
  dawid_skene   Dawid & Skene (1979): each worker has a confusion matrix, estimated with
                the task labels by EM, so a worker who is often wrong counts for less than
                one who is often right; a careless worker can no longer outvote two careful
                ones. Own numpy implementation (the same EM as crowd-kit's DawidSkene:
                majority shares as the start, clipped error matrices, a tolerance on the
                evidence lower bound), tested to give crowd-kit's labels. Own rather than
                crowd-kit at run time because crowd-kit pulls transformers and nltk into a
                pipeline that imports neither; crowd-kit stays a test reference only.

Deterministic: tasks, workers and labels are indexed in sorted order, the EM runs at most
`iterations` times and stops once the bound gains less than `tolerance`; a posterior tie
goes to the first label in sorted order, as crowd-kit's idxmax does.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Dict, Hashable, Iterable, List, Optional, Tuple

import apache_beam as beam
import numpy as np

from transforms.crowd.aggregation_config import DAWID_SKENE, MAJORITY, METHODS, CrowdConfig  # noqa: F401
ITERATIONS, TOLERANCE = 100, 1e-5   # crowd-kit's DawidSkene defaults
_EPS = 1e-10                         # floor of an error-matrix cell and a prior (as crowd-kit)

Answer = Tuple[Hashable, Hashable, Hashable]   # (task, worker, label)


def majority_labels(answers: Iterable[Answer]) -> Dict[Hashable, Optional[Hashable]]:
    """{task: the label most of its answers gave, or None on a tie}."""
    counts: Dict[Hashable, Counter] = defaultdict(Counter)
    for task, _, label in answers:
        counts[task][label] += 1
    labels = {}
    for task, per_label in counts.items():
        (first, n_first), *rest = per_label.most_common(2)
        labels[task] = None if rest and rest[0][1] == n_first else first
    return labels


def dawid_skene_labels(answers: Iterable[Answer], iterations: int = ITERATIONS,
                       tolerance: float = TOLERANCE) -> Dict[Hashable, Hashable]:
    """{task: its most probable label under Dawid-Skene}."""
    tasks, labels, posteriors = dawid_skene(answers, iterations, tolerance)
    best = posteriors.argmax(axis=1)   # the first of equal maxima: sorted label order
    return {task: labels[k] for task, k in zip(tasks, best)}


def dawid_skene(answers: Iterable[Answer], iterations: int = ITERATIONS,
                tolerance: float = TOLERANCE):
    """-> (tasks, labels, posteriors[task, label]), tasks and labels in sorted order."""
    answers = list(answers)
    if not answers:
        return [], [], np.zeros((0, 0))
    tasks = sorted({a[0] for a in answers})
    workers = sorted({a[1] for a in answers})
    labels = sorted({a[2] for a in answers})
    t_of = {t: i for i, t in enumerate(tasks)}
    w_of = {w: i for i, w in enumerate(workers)}
    l_of = {l: i for i, l in enumerate(labels)}
    t = np.array([t_of[a[0]] for a in answers])
    w = np.array([w_of[a[1]] for a in answers])
    given = np.array([l_of[a[2]] for a in answers])
    n_tasks, n_workers, n_labels = len(tasks), len(workers), len(labels)

    # start: each task's share of answers per label (a tie splits evenly)
    posteriors = np.zeros((n_tasks, n_labels))
    np.add.at(posteriors, (t, given), 1.0)
    posteriors /= posteriors.sum(axis=1, keepdims=True)
    priors, errors = _m_step(posteriors, t, w, given, n_workers)
    bound = -np.inf
    for _ in range(iterations):
        posteriors = _e_step(priors, errors, t, w, given, n_tasks)
        priors, errors = _m_step(posteriors, t, w, given, n_workers)
        new_bound = _evidence_lower_bound(posteriors, priors, errors, t, w, given) / len(answers)
        if new_bound - bound < tolerance:
            break
        bound = new_bound
    return tasks, labels, posteriors


def _m_step(posteriors, t, w, given, n_workers):
    """priors[label] and errors[worker, given label, true label] = P(given | true)."""
    n_labels = posteriors.shape[1]
    errors = np.zeros((n_workers, n_labels, n_labels))
    np.add.at(errors, (w, given), posteriors[t])
    # a worker's error matrix covers only the labels they gave (crowd-kit's groupby);
    # cells of labels they never gave stay 0 rather than the floor
    gave = np.zeros((n_workers, n_labels), dtype=bool)
    gave[w, given] = True
    errors = np.where(gave[:, :, None], np.maximum(errors, _EPS), 0.0)
    errors /= errors.sum(axis=1, keepdims=True)
    return posteriors.mean(axis=0), errors


def _e_step(priors, errors, t, w, given, n_tasks):
    with np.errstate(divide="ignore"):
        log_errors = np.log2(errors[w, given])   # (answers, true label)
    log_likelihood = np.tile(np.log2(np.maximum(priors, _EPS)), (n_tasks, 1))
    np.add.at(log_likelihood, t, log_errors)
    scaled = np.exp2(log_likelihood - log_likelihood.max(axis=1, keepdims=True))
    return scaled / scaled.sum(axis=1, keepdims=True)


def _evidence_lower_bound(posteriors, priors, errors, t, w, given) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        log_joint = np.log(errors[w, given]) + np.log(np.maximum(priors, _EPS))
        expectation = np.nansum(posteriors[t] * np.where(np.isfinite(log_joint), log_joint, 0.0))
    clipped = np.maximum(posteriors, _EPS)
    return float(expectation - (np.log(clipped) * clipped).sum())


def aggregate(answers: Iterable[Answer], method: str = MAJORITY, iterations: int = ITERATIONS,
              tolerance: float = TOLERANCE) -> Dict[Hashable, Optional[Hashable]]:
    """{task: label} by `method` (one of METHODS)."""
    if method == MAJORITY:
        return majority_labels(answers)
    if method == DAWID_SKENE:
        return dawid_skene_labels(answers, iterations, tolerance)
    raise ValueError(f"crowd.aggregation must be one of {', '.join(METHODS)}, got {method!r}")


def answers_table(answers: Iterable[Answer]) -> List[Answer]:
    """The answers in a stable order (task, worker, label as text): what a global
    aggregation sees is the same whatever order the workers delivered them in."""
    return sorted(answers, key=lambda a: tuple(map(str, a)))


# --- config and Beam -------------------------------------------------------------------

class AggregateLabels(beam.PTransform):
    """Answers (task, worker, label) -> one {task: label} (a singleton PCollection, for a
    side input). Dawid-Skene estimates each worker over all their answers, so it sees the
    whole table at once: answers are few (one small tuple each; VSR's 39,507 votes) next
    to what the pipelines hold per example."""

    def __init__(self, method: str):
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"crowd.aggregation must be one of {', '.join(METHODS)}, got {method!r}")
        self._method = method

    def expand(self, answers):
        method = self._method
        return (answers
                | "All answers" >> beam.combiners.ToList()
                | "Aggregate" >> beam.Map(lambda table: aggregate(answers_table(table), method)))
