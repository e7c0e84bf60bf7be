"""Topic clusters of the actions (§3.2 "Topic", A.3) and the manual review step.

k-means runs for every k of a range; k is chosen by the elbow method (§3.2 fn. 5) and
the silhouette is reported beside each k (transforms/vectors/kmeans.py). The paper's k
is 60; `fixed_k` forces a k and still reports the curve.

k-means is a global step: each fit needs every point at once. It runs on the embedding
matrix (one row per unique action: ~10k x 384 float64 = 30 MB for BD2BB), rows sorted by
action key so the result depends only on the data and the seed, never on arrival order.
Each k is fitted on its own (`kmeans_at`) and the curve is read from all of them
(`choose_clustering`): pipelines/bd2bb/topic_clusters.py fits the k values as separate
elements; `cluster_actions` fits them in turn, in process.

Review (the paper's manual step: 2 authors labelled 54 of 60 clusters, dropped 6, moved
and removed actions). The build exports `review/cluster_review.csv` (a seeded sample of
actions per cluster) and ingests a decisions CSV with the header `decision,cluster,action,
to_cluster,label`:
    label,12,,,tennis           name cluster 12
    drop,7,,,                   drop cluster 7 (its datapoints: cluster_dropped)
    move,,hit the ball,3,       move an action (any cluster) to cluster 3
    remove,,buy a dog,,         remove an action (its datapoints: action_dropped)
    clustering,,,,3f2a...       the clustering the decisions were made for (required)
Cluster numbers are k-means' raw labels, so a decision is only meaningful for the
clustering it was written against. The sheet carries the clustering's fingerprint (a hash
of the sorted (action key, cluster) assignment) in its `clustering` column, and
`review/decisions_template.csv` starts with the `clustering` row. A decisions file must
carry that row; a fingerprint that differs from this build's (other inputs, encoder, k
range, seed: the numbers may now name other topics), or a decision naming a cluster this
clustering does not have, stops the build with an error naming `clusters.review`.
"""
from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from transforms.core.errors import ConfigError
from transforms.core.sampling import priority
from transforms.text.tokens import normalise_text
from transforms.vectors.kmeans import elbow, fits, kmeans_at

DECISIONS = ("clustering", "label", "drop", "move", "remove")
REVIEW_HEADER = ["cluster", "cluster_size", "action_key", "action", "suggested_label", "clustering"]
DECISIONS_HEADER = ["decision", "cluster", "action", "to_cluster", "label"]


@dataclass(frozen=True)
class ClusteringParams:
    """How the actions are clustered and the review sheet drawn (config `clusters.*` and
    `seed`), built once from the config and handed whole to the clustering step."""
    ks: Tuple[int, ...]                  # the k range the elbow is taken over
    seed: int
    fixed_k: Optional[int] = None        # force this k (the curve is still reported)
    n_init: int = 3                      # k-means restarts per k
    silhouette_sample: int = 5000        # points the silhouette is computed on
    review_per_cluster: int = 20         # actions per cluster on the review sheet

    @classmethod
    def from_config(cls, cfg) -> "ClusteringParams":
        """From a BD2BBConfig (validated: its k range and counts are sound)."""
        c = cfg.clusters
        return cls(tuple(cfg.k_values()), cfg.seed, c.k, c.n_init, c.silhouette_sample,
                   c.review_per_cluster)


@dataclass
class ClusterResult:
    k: int
    method: str                          # "elbow" or "fixed"
    curve: List[dict]                    # per k: inertia, silhouette
    assignments: Dict[str, int]          # action key -> cluster
    sizes: Dict[int, int] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        return clustering_fingerprint(self.assignments)


def clustering_fingerprint(assignments: Dict[str, int]) -> str:
    """A hash of the sorted (action key, cluster) assignment: review decisions name
    clusters by number, and this says which numbering they meant."""
    text = "\n".join(f"{key}\t{int(cluster)}" for key, cluster in sorted(assignments.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def wanted_ks(ks: Sequence[int], fixed_k: Optional[int] = None) -> List[int]:
    """The k values fitted: the range, and a forced k."""
    return sorted(set(ks) | ({fixed_k} if fixed_k else set()))


def action_matrix(items: Sequence[Tuple[str, np.ndarray]]) -> Tuple[List[str], np.ndarray]:
    """(keys sorted, float64 matrix with one row per key in that order)."""
    items = sorted(items, key=lambda kv: kv[0])
    keys = [k for k, _ in items]
    # float64: k-means in float32 sums in a thread-dependent order and its last bits
    # (inertia, and in a near tie a label) vary between runs; in float64 they do not.
    matrix = (np.stack([np.asarray(v, np.float64) for _, v in items]) if items
              else np.zeros((0, 0), np.float64))
    return keys, matrix


def choose_clustering(keys: Sequence[str], fitted: Sequence[Tuple[dict, np.ndarray]],
                      ks: Sequence[int], fixed_k: Optional[int] = None) -> ClusterResult:
    """The clustering of the `keys` (rows of the matrix) from the fits of every k that
    fits (kmeans_at: (curve row, labels)), in any order: the forced k, or the elbow of
    the curve over the range."""
    if not keys:
        return ClusterResult(0, "none", [], {})
    fitted = sorted(fitted, key=lambda f: f[0]["k"])
    curve = [row for row, _ in fitted]
    labels = {row["k"]: lab for row, lab in fitted}
    if not curve:  # fewer actions than any k: one cluster
        return ClusterResult(1, "single", [], {k: 0 for k in keys}, {0: len(keys)})
    on_range = [c for c in curve if c["k"] in set(ks)] or curve
    if fixed_k and fixed_k in labels:
        k, method = fixed_k, "fixed"
    else:
        k, method = elbow([c["k"] for c in on_range], [c["inertia"] for c in on_range]), "elbow"
    chosen = labels[k]
    sizes = {int(c): int(n) for c, n in zip(*np.unique(chosen, return_counts=True))}
    return ClusterResult(int(k), method, curve, {key: int(c) for key, c in zip(keys, chosen)}, sizes)


def cluster_actions(items: Sequence[Tuple[str, np.ndarray]], ks: Sequence[int], seed: int,
                    fixed_k: Optional[int] = None, n_init: int = 3,
                    silhouette_sample: int = 5000) -> ClusterResult:
    """(action key, unit vector) pairs -> clusters, every k fitted in this process."""
    keys, matrix = action_matrix(items)
    fitted = [kmeans_at(matrix, k, seed, n_init, silhouette_sample)
              for k in wanted_ks(ks, fixed_k) if fits(k, len(matrix))]
    return choose_clustering(keys, fitted, ks, fixed_k)


# --- review ------------------------------------------------------------------------------

def review_rows(texts: Dict[str, str], result: ClusterResult, per_cluster: int, seed: int) -> List[list]:
    """The review sheet: up to `per_cluster` actions per cluster, drawn by hash(seed, key)."""
    by_cluster: Dict[int, List[str]] = {}
    for key, cluster in result.assignments.items():
        by_cluster.setdefault(cluster, []).append(key)
    rows = []
    fingerprint = result.fingerprint
    for cluster in sorted(by_cluster):
        keys = sorted(by_cluster[cluster], key=lambda k: priority(seed, k))[:per_cluster]
        rows += [[cluster, len(by_cluster[cluster]), k, texts[k], "", fingerprint] for k in keys]
    return rows


def decisions_template(result: ClusterResult) -> List[list]:
    """review/decisions_template.csv's rows: the `clustering` row the decisions must keep."""
    return [["clustering", "", "", "", result.fingerprint]]


@dataclass
class Review:
    labels: Dict[int, str] = field(default_factory=dict)
    dropped: frozenset = frozenset()
    moves: Dict[str, int] = field(default_factory=dict)      # normalised action -> cluster
    removed: frozenset = frozenset()                         # normalised actions
    clustering: Optional[str] = None                         # fingerprint the decisions were made for

    def empty(self) -> bool:
        return not (self.labels or self.dropped or self.moves or self.removed)

    def clusters_named(self) -> set:
        return set(self.labels) | set(self.dropped) | set(self.moves.values())

    def decide(self, action: str, cluster: int) -> Tuple[str, int]:
        """("keep" | "cluster_dropped" | "action_dropped", final cluster) for one action."""
        text = normalise_text(action)
        if text in self.removed:
            return "action_dropped", cluster
        cluster = self.moves.get(text, cluster)
        if cluster in self.dropped:
            return "cluster_dropped", cluster
        return "keep", cluster


def parse_review(text: str) -> Review:
    """Read a decisions CSV; a malformed row is a ValueError naming its line."""
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or [f.strip() for f in reader.fieldnames] != DECISIONS_HEADER:
        raise ValueError(f"cluster review decisions: header must be {','.join(DECISIONS_HEADER)}")
    review = Review()
    dropped, removed = set(), set()
    for line, row in enumerate(reader, 2):
        row = {k: (v or "").strip() for k, v in row.items()}
        decision = row["decision"]
        try:
            if decision == "clustering":
                review.clustering = _need(row, "label")
            elif decision == "label":
                review.labels[int(row["cluster"])] = row["label"]
            elif decision == "drop":
                dropped.add(int(row["cluster"]))
            elif decision == "move":
                review.moves[normalise_text(_need(row, "action"))] = int(row["to_cluster"])
            elif decision == "remove":
                removed.add(normalise_text(_need(row, "action")))
            else:
                raise ValueError(f"unknown decision {decision!r} (one of {', '.join(DECISIONS)})")
        except (ValueError, KeyError) as e:
            raise ValueError(f"cluster review decisions line {line}: {e}") from None
    review.dropped, review.removed = frozenset(dropped), frozenset(removed)
    return review


def check_review(review: Review, result: ClusterResult, key: str = "clusters.review",
                 actions: Optional[Iterable[str]] = None) -> None:
    """The decisions fit this clustering (and, given the clustered `actions`, move or
    remove only actions it has), or a ConfigError naming the config key (it runs inside
    the pipeline, where the clusters are known; the runner reports it as one line)."""
    if review.empty():
        return
    if not review.clustering:
        raise ConfigError(
            f"{key}: the decisions have no `clustering,,,,<fingerprint>` row; copy it from "
            "review/decisions_template.csv of the build whose review/cluster_review.csv you reviewed "
            f"(this build's clustering is {result.fingerprint})")
    if review.clustering != result.fingerprint:
        raise ConfigError(
            f"{key}: the decisions were written for clustering {review.clustering}, but this build's "
            f"clustering is {result.fingerprint} (review/cluster_review.csv): inputs, embed.model, "
            "clusters.k*/n_init or seed changed, so cluster numbers may name other topics; review "
            "this build's sheet, or rebuild with the settings the decisions were made for")
    unknown = sorted(c for c in review.clusters_named() if c not in result.sizes)
    if unknown:
        raise ConfigError(f"{key}: the decisions name clusters {unknown} that clustering "
                         f"{result.fingerprint} does not have (clusters: {sorted(result.sizes)})")
    if actions is not None:
        known = {normalise_text(a) for a in actions}
        missing = sorted(a for a in set(review.moves) | set(review.removed) if a not in known)
        if missing:
            raise ConfigError(f"{key}: the decisions move or remove actions that no tuple of "
                             f"this build has: {missing[:5]}" + (" ..." if len(missing) > 5 else ""))


def _need(row: dict, name: str) -> str:
    if not row.get(name):
        raise ValueError(f"{row['decision']} needs {name}")
    return row[name]
