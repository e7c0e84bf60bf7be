"""Beam side of the topic clusters (§3.2, A.3): one global k-means step, then the review.

    (key, text, vector) -> gathered -> cluster_actions (k range, elbow, silhouette)
                        -> ClusterResult singleton + review sheet rows
    Datapoint + ClusterResult + Review -> Datapoint(cluster, label) | cluster_dropped | action_dropped

Gathering is deliberate: k-means needs every point at once; the gathered matrix is one
row per unique action (BD2BB: ~10k x 384 float32, 15 MB).
"""
from __future__ import annotations

import dataclasses

import apache_beam as beam

from pipelines.bd2bb import reasons
from pipelines.bd2bb.clustering import (ClusteringParams, ClusterResult, Review, check_review,
                                        cluster_actions, review_rows)
from pipelines.bd2bb.schema import Datapoint
from transforms.core.stage import StageFn, stage_pardo
from transforms.text.tokens import normalise_text


def _cluster(items, params: ClusteringParams):
    result = cluster_actions([(k, v) for k, _, v in items], params.ks, params.seed, params.fixed_k,
                             params.n_init, params.silhouette_sample)
    texts = {k: t for k, t, _ in items}
    return {"result": result,
            "sheet": review_rows(texts, result, params.review_per_cluster, params.seed),
            "actions": sorted(texts.values())}


class ClusterActions(beam.PTransform):
    """(action key, text, vector) -> one dict {"result": ClusterResult, "sheet": rows,
    "actions": the clustered texts}."""

    def __init__(self, params: ClusteringParams):
        super().__init__()
        self.params = params

    def expand(self, items):
        return (items | "Gather" >> beam.combiners.ToList()
                | "k-means" >> beam.Map(_cluster, self.params))


class _Apply(StageFn):
    stage, level = "clusters", "tuple"

    def __init__(self, review: Review):
        self.review = review

    def judge(self, d: Datapoint, clustered):
        result: ClusterResult = clustered["result"]
        key = d.tuple.action_key
        if key not in result.assignments:
            raise KeyError(f"action {d.tuple.action!r} was not clustered")
        verdict, cluster = self.review.decide(d.tuple.action, result.assignments[key])
        if verdict == "keep":
            label = self.review.labels.get(cluster, "")
            yield dataclasses.replace(d, cluster=cluster, cluster_label=label)
        else:
            reason = reasons.CLUSTER_DROPPED if verdict == "cluster_dropped" else reasons.ACTION_DROPPED
            yield self.reject(reason, d.tuple.tuple_id, source=d.tuple.image,
                              detail=f"cluster {cluster}: {normalise_text(d.tuple.action)[:200]}")


class ApplyClusters(beam.PTransform):
    """Datapoint -> Datapoint with its (reviewed) cluster and label; review rejects."""

    def __init__(self, review: Review, clustered):
        super().__init__()
        self.review, self.clustered = review, clustered

    def expand(self, datapoints):
        review = self.review
        checked = self.clustered | "Check review" >> beam.Map(_checked, review)
        return datapoints | stage_pardo(_Apply(self.review), beam.pvalue.AsSingleton(checked))


def _checked(clustered, review: Review):
    """The decisions must name this clustering (its fingerprint) and its clusters: a
    ValueError starting "clusters.review:" otherwise (pipelines/bd2bb/pipeline.py reports it as a
    config error)."""
    check_review(review, clustered["result"], actions=clustered["actions"])
    return clustered
