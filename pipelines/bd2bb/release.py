"""BD2BB release files beyond the tables: the public layout (compat/) and the review sheet.

compat/ holds the public SWAG-style CSVs (pipelines/bd2bb/compat.py) and `BD2BB.json`, the
file the original loader (code/datasets/BD2BBDataset.py) and the baselines' prepare_inputs
read next to them: {csv id: [{"target_item", "lang_decoy1", "lang_decoy2", "vis_decoy1",
"vis_decoy2"}]}, each item {intention, action, image_url}. A CSV file has one writer and
ids count from 1 in sample-id order, the same on every runner: the samples reach that
writer merged from sorted run files (transforms/io/sorted_runs.py), one at a time.
"""
from __future__ import annotations

import contextlib
import io
import json
from typing import Iterable, List

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.bd2bb import compat
from pipelines.bd2bb.clustering import DECISIONS_HEADER, REVIEW_HEADER, decisions_template
from pipelines.bd2bb.records import LANGUAGE, TARGET, VISION, Sample, coco_image_id
from transforms.io.csv_out import csv_text
from transforms.io.sorted_runs import WriteSortedRuns, merge_runs
from transforms.vectors.vector_files import RemoveFolderWhenDone

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


def write_numbered(ordered: Iterable[Sample], folder: str) -> List[str]:
    """The public layout (compat/) of samples given in sample-id order: each is numbered
    from 1 as it comes and written at once into every file it belongs to."""
    names = ["all", "train", "val", "test", "hard"]
    paths = [FileSystems.join(folder, compat.FILES[name]) for name in names]
    json_path = FileSystems.join(folder, COMPAT_JSON)
    with contextlib.ExitStack() as files:
        writers = {name: compat.CsvWriter(_text_file(files, path, "text/csv")) for name, path in zip(names, paths)}
        whole = JsonObjectWriter(_text_file(files, json_path, "application/json"))
        for number, s in enumerate(ordered, 1):
            row = compat.to_row(number, s)
            for name in ("all", s.split, "hard" if s.hard_test else None):
                if name in writers:
                    writers[name].write(row)
            # Keyed by the CSVs' id, as a string (JSON object keys are strings).
            whole.write(str(number), compat_item(s))
        whole.close()
    return paths + [json_path]


def _text_file(files: contextlib.ExitStack, path: str, mime: str) -> io.TextIOWrapper:
    raw = files.enter_context(FileSystems.create(path, mime_type=mime))
    return files.enter_context(io.TextIOWrapper(raw, encoding="utf-8", newline=""))


class JsonObjectWriter:
    """Writes {key: value, ...} one member at a time, byte for byte what
    json.dumps(whole, indent=1, ensure_ascii=False) gives for the whole dict."""

    def __init__(self, out: io.TextIOBase):
        self.out, self.members = out, 0

    def write(self, key: str, value) -> None:
        # A member of the top level is indented by one space, and so is every line of its
        # value (json.dumps escapes newlines inside strings, so each "\n" is a line break).
        text = json.dumps(value, indent=1, ensure_ascii=False).replace("\n", "\n ")
        self.out.write(("{\n " if not self.members else ",\n ") + json.dumps(key, ensure_ascii=False) + ": " + text)
        self.members += 1

    def close(self) -> None:
        self.out.write("\n}" if self.members else "{}")


class WriteCompat(beam.PTransform):
    """Samples (with split) -> compat/*.csv + compat/BD2BB.json. The samples are written
    to sorted run files under `scratch_dir` and merged by sample id in the one step that
    writes the files (one writer per file), never gathered."""

    def __init__(self, staging_dir: str, scratch_dir: str):
        super().__init__()
        self.folder, self.scratch_dir = FileSystems.join(staging_dir, "compat"), scratch_dir

    def expand(self, samples):
        folder = self.folder
        written = (samples | "Sorted runs" >> WriteSortedRuns(self.scratch_dir, lambda s: s.sample_id)
                   | "Run list" >> beam.combiners.ToList()
                   | "Write" >> beam.Map(lambda runs: write_numbered(merge_runs(runs), folder)))
        _ = written | "Remove runs" >> RemoveFolderWhenDone(self.scratch_dir)
        return written


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
