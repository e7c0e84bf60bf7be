"""Beam side of the topic clusters (§3.2, A.3): k-means over a k range, then the review.

    (key, text, vector) -> vector files -> one matrix file (rows sorted by key)
                        -> one element per k: kmeans_at on the matrix (spread over workers)
                        -> all k: the curve, the elbow -> ClusterResult singleton + review sheet rows
    Datapoint + ClusterResult + Review -> Datapoint(cluster, label) | cluster_dropped | action_dropped

The vectors never travel as one element or a side input: they are written to files where
they are embedded, and each k's fit loads the matrix from its file (a fit needs every
point: ~N x d float64, BD2BB's ~10k x 384 = 30 MB). What goes on as the singleton is
per action a key, a text and a cluster number.
"""
from __future__ import annotations

import dataclasses
import io
import json

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipelines.bd2bb import reasons
from pipelines.bd2bb.clustering import (ClusteringParams, ClusterResult, Review, action_matrix, check_review,
                                        choose_clustering, review_rows, wanted_ks)
from pipelines.bd2bb.records import Datapoint
from transforms.core.stage import StageFn, stage_pardo
from transforms.text.tokens import normalise_text
from transforms.vectors.kmeans import fits, kmeans_at
from transforms.vectors.vector_files import RemoveFolderWhenDone, WriteVectorFiles, read_vector_file


def _write_matrix(files, folder: str) -> dict:
    """The actions' vector files -> one float64 matrix file (rows sorted by key) and the
    keys and texts in that order; returns where they are and the number of rows."""
    items, texts = [], {}
    for f in files:
        ids, labels, vectors = read_vector_file(f.path)
        items += zip(ids, vectors)
        texts.update(zip(ids, labels))
    keys, matrix = action_matrix(items)
    del items
    paths = {"matrix": FileSystems.join(folder, "matrix.npy"), "keys": FileSystems.join(folder, "keys.json")}
    with FileSystems.create(paths["matrix"], compression_type=CompressionTypes.UNCOMPRESSED) as out:
        np.save(out, matrix)   # straight into the file: no second copy of the matrix in memory
    with FileSystems.create(paths["keys"], compression_type=CompressionTypes.UNCOMPRESSED) as out:
        out.write(json.dumps({"keys": keys, "texts": [texts[k] for k in keys]}).encode("utf-8"))
    return {**paths, "rows": len(keys)}


def _load_matrix(path: str) -> np.ndarray:
    """The matrix as a writable array of this fit's own, which k-means centres in place."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        # A local file is read straight into the array; an object store's stream is not
        # seekable, so it is read whole first.
        return np.load(f if not FileSystems.get_scheme(path) else io.BytesIO(f.read()), allow_pickle=False)


def _load_keys(path: str) -> dict:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return json.loads(f.read().decode("utf-8"))


class _FitK(beam.DoFn):
    """One k (an element) -> (curve row, labels) of k-means on the whole matrix, loaded
    from its file here; nothing for a k the matrix is too small for."""

    def __init__(self, params: ClusteringParams):
        self.params = params

    def process(self, k: int, matrix: dict):
        if not fits(k, matrix["rows"]):
            return
        p = self.params
        row, labels = kmeans_at(_load_matrix(matrix["matrix"]), k, p.seed, p.n_init, p.silhouette_sample,
                                in_place=True)
        yield row, np.asarray(labels, np.int32)


def _choose(fitted, matrix: dict, params: ClusteringParams) -> dict:
    named = _load_keys(matrix["keys"]) if matrix["rows"] else {"keys": [], "texts": []}
    result = choose_clustering(named["keys"], fitted, params.ks, params.fixed_k)
    texts = dict(zip(named["keys"], named["texts"]))
    return {"result": result,
            "sheet": review_rows(texts, result, params.review_per_cluster, params.seed),
            "actions": sorted(texts.values())}


class ClusterActions(beam.PTransform):
    """(action key, text, vector) -> one dict {"result": ClusterResult, "sheet": rows,
    "actions": the clustered texts}, the same as `cluster_actions` on the same vectors
    in float32 (the encoder's precision: the files hold float32). The vectors are written
    under `scratch_dir` and removed once the clustering is chosen."""

    def __init__(self, params: ClusteringParams, scratch_dir: str):
        super().__init__()
        self.params, self.scratch_dir = params, scratch_dir

    def expand(self, items):
        params, folder = self.params, self.scratch_dir
        files = items | "Vectors to files" >> WriteVectorFiles(
            FileSystems.join(folder, "actions"), row_of=lambda item: item)
        matrix = (files | "File list" >> beam.combiners.ToList()
                  | "One matrix" >> beam.Map(_write_matrix, folder))
        fitted = (items.pipeline | "k values" >> beam.Create(wanted_ks(params.ks, params.fixed_k))
                  | "One k a worker" >> beam.Reshuffle()
                  | "k-means" >> beam.ParDo(_FitK(params), beam.pvalue.AsSingleton(matrix)))
        clustered = (fitted | "Every k" >> beam.combiners.ToList()
                     | "Curve and elbow" >> beam.Map(_choose, beam.pvalue.AsSingleton(matrix), params))
        _ = clustered | "Remove vector files" >> RemoveFolderWhenDone(folder)
        return clustered


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
            yield self.reject(reason, d.tuple.tuple_id, source=d.tuple.image, **d.tuple.place,
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
