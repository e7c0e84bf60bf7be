"""BD2BB release files beyond the tables: the public layout (compat/) and the review sheet.

compat/ holds the public SWAG-style CSVs (pipelines/bd2bb/compat.py) and `bd2bb.json`, one
item per sample: the target (intention, action, image) and its four decoys. A CSV file
has one writer, so the samples are gathered (small text rows: ~10k for BD2BB) and ids
count from 1 in sample-id order, the same on every runner.
"""
from __future__ import annotations

import json
from typing import List

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.bd2bb import compat
from pipelines.bd2bb.clustering import DECISIONS_HEADER, REVIEW_HEADER, csv_text, decisions_template
from pipelines.bd2bb.schema import TARGET, Sample

COMPAT_JSON = "bd2bb.json"


def _write(path: str, text: str, mime: str) -> str:
    with FileSystems.create(path, mime_type=mime) as f:
        f.write(text.encode("utf-8"))
    return path


def compat_item(compat_id: int, s: Sample) -> dict:
    t, codes = s.datapoint.tuple, s.datapoint.codes
    return {"id": compat_id, "sample_id": s.sample_id, "split": s.split, "hard_test": s.hard_test,
            "target": {"image": t.image, "intention": t.intention, "action": t.action,
                       "annotator": t.annotator, "cluster": s.datapoint.cluster,
                       "cluster_label": s.datapoint.cluster_label,
                       "codes": {"code1": codes.code1, "code2": list(codes.code2),
                                 "code3": codes.code3, "code4": list(codes.code4)}},
            "decoys": [{"action": a, "type": k} for a, k in zip(s.endings, s.ending_types) if k != TARGET],
            "label": s.label}


def write_compat(samples: List[Sample], folder: str) -> List[str]:
    samples = sorted(samples, key=lambda s: s.sample_id)
    numbered = list(enumerate(samples, 1))
    groups = {"all": numbered, "hard": [(i, s) for i, s in numbered if s.hard_test]}
    for split in ("train", "val", "test"):
        groups[split] = [(i, s) for i, s in numbered if s.split == split]
    paths = [_write(FileSystems.join(folder, compat.FILES[name]),
                    compat.csv_text(compat.to_row(i, s) for i, s in rows), "text/csv")
             for name, rows in groups.items()]
    items = [compat_item(i, s) for i, s in numbered]
    paths.append(_write(FileSystems.join(folder, COMPAT_JSON),
                        json.dumps(items, indent=1, ensure_ascii=False), "application/json"))
    return paths


class WriteCompat(beam.PTransform):
    """Samples (with split) -> compat/*.csv + compat/bd2bb.json."""

    def __init__(self, staging_dir: str):
        super().__init__()
        self.folder = FileSystems.join(staging_dir, "compat")

    def expand(self, samples):
        folder = self.folder
        return (samples | "Gather" >> beam.combiners.ToList()
                | "Write" >> beam.Map(lambda xs: write_compat(xs, folder)))


class WriteReviewSheet(beam.PTransform):
    """The clustering result -> review/cluster_review.csv (a seeded sample of actions per
    cluster, with the clustering's fingerprint) and review/decisions_template.csv (the
    header the build ingests and the `clustering` row the decisions must keep)."""

    def __init__(self, staging_dir: str):
        super().__init__()
        self.folder = FileSystems.join(staging_dir, "review")

    def expand(self, clustered):
        folder = self.folder

        def write(c):
            return [_write(FileSystems.join(folder, "cluster_review.csv"),
                           csv_text(REVIEW_HEADER, c["sheet"]), "text/csv"),
                    _write(FileSystems.join(folder, "decisions_template.csv"),
                           csv_text(DECISIONS_HEADER, decisions_template(c["result"])), "text/csv")]

        return clustered | "Write sheet" >> beam.Map(write)


def cluster_report(clustered) -> dict:
    """stats/clusters.json: the k curve, the chosen k and the k-means cluster sizes."""
    r = clustered["result"]
    return {"k": r.k, "method": r.method, "curve": r.curve, "fingerprint": r.fingerprint,
            "sizes": {str(c): n for c, n in sorted(r.sizes.items())}, "actions": len(r.assignments)}
