"""BD2BB release files beyond the tables: the public layout (compat/) and the review sheet.

compat/ holds the public SWAG-style CSVs (pipelines/bd2bb/compat.py) and `BD2BB.json`, the
file the original loader (code/datasets/BD2BBDataset.py) and the baselines' prepare_inputs
read next to them: {csv id: [{"target_item", "lang_decoy1", "lang_decoy2", "vis_decoy1",
"vis_decoy2"}]}, each item {intention, action, image_url}. A CSV file
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
from pipelines.bd2bb.schema import LANGUAGE, TARGET, VISION, Sample, coco_image_id

COMPAT_JSON = "BD2BB.json"
COCO_IMAGE_URL = "http://images.cocodataset.org/train2014/COCO_train2014_{:012d}.jpg"
# The original's item names: decoys in shown order within their type.
ITEM_NAMES = {TARGET: ("target_item",), LANGUAGE: ("lang_decoy1", "lang_decoy2"),
              VISION: ("vis_decoy1", "vis_decoy2")}


def _write(path: str, text: str, mime: str) -> str:
    with FileSystems.create(path, mime_type=mime) as f:
        f.write(text.encode("utf-8"))
    return path


def image_url(image: str) -> str:
    """The COCO train2014 URL of an image reference (a file name or id); the reference
    itself when it names no COCO id (a URL or path given by the input)."""
    image_id = coco_image_id(image)
    return COCO_IMAGE_URL.format(image_id) if image_id is not None else str(image)


def compat_item(s: Sample) -> list:
    """The original loader's entry for one sample: a one-element list holding the target
    and its four decoys, each {intention, action, image_url}. A decoy is shown against
    the target's intention and image (§4: it differs from the target in language or in
    vision, not in context), so it carries them; its own action is the CSV ending."""
    t = s.datapoint.tuple
    seen = {kind: 0 for kind in ITEM_NAMES}
    entry = {}
    for action, kind in zip(s.endings, s.ending_types):
        entry[ITEM_NAMES[kind][seen[kind]]] = {"intention": t.intention, "action": action,
                                               "image_url": image_url(t.image)}
        seen[kind] += 1
    return [{name: entry[name] for names in ITEM_NAMES.values() for name in names}]


def write_compat(samples: List[Sample], folder: str) -> List[str]:
    samples = sorted(samples, key=lambda s: s.sample_id)
    numbered = list(enumerate(samples, 1))
    groups = {"all": numbered, "hard": [(i, s) for i, s in numbered if s.hard_test]}
    for split in ("train", "val", "test"):
        groups[split] = [(i, s) for i, s in numbered if s.split == split]
    paths = [_write(FileSystems.join(folder, compat.FILES[name]),
                    compat.csv_text(compat.to_row(i, s) for i, s in rows), "text/csv")
             for name, rows in groups.items()]
    # Keyed by the CSVs' id, as a string (JSON object keys are strings).
    whole = {str(i): compat_item(s) for i, s in numbered}
    paths.append(_write(FileSystems.join(folder, COMPAT_JSON),
                        json.dumps(whole, indent=1, ensure_ascii=False), "application/json"))
    return paths


class WriteCompat(beam.PTransform):
    """Samples (with split) -> compat/*.csv + compat/BD2BB.json."""

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
