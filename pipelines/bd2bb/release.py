"""BD2BB release files beyond the tables: the public layout (compat/: the SWAG-style CSVs
and BD2BB.json, their format in pipelines/bd2bb/compat.py), the cluster review sheet and
the cluster report.

A compat/ file has one writer and ids count from 1 in sample-id order, the same on every
runner: the samples reach that writer merged from sorted run files
(transforms/io/sorted_runs.py), one at a time.
"""
from __future__ import annotations

import contextlib
import io
from typing import Iterable, List

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.bd2bb import compat
from pipelines.bd2bb.clustering import DECISIONS_HEADER, REVIEW_HEADER, decisions_template
from pipelines.bd2bb.records import Sample
from transforms.io.csv_out import csv_text
from transforms.io.sorted_runs import WriteSortedRuns, merge_runs
from transforms.vectors.vector_files import RemoveFolderWhenDone


def _write(path: str, text: str, mime: str) -> str:
    with FileSystems.create(path, mime_type=mime) as f:
        f.write(text.encode("utf-8"))
    return path


def write_numbered(ordered: Iterable[Sample], folder: str) -> List[str]:
    """The public layout (compat/) of samples given in sample-id order: each is numbered
    from 1 as it comes and written at once into every file it belongs to."""
    names = ["all", "train", "val", "test", "hard"]
    paths = [FileSystems.join(folder, compat.FILES[name]) for name in names]
    json_path = FileSystems.join(folder, compat.COMPAT_JSON)
    with contextlib.ExitStack() as files:
        writers = {name: compat.CsvWriter(_text_file(files, path, "text/csv")) for name, path in zip(names, paths)}
        whole = compat.JsonObjectWriter(_text_file(files, json_path, "application/json"))
        for number, s in enumerate(ordered, 1):
            row = compat.to_row(number, s)
            for name in ("all", s.split, "hard" if s.hard_test else None):
                if name in writers:
                    writers[name].write(row)
            # Keyed by the CSVs' id, as a string (JSON object keys are strings).
            whole.write(str(number), compat.compat_item(s))
        whole.close()
    return paths + [json_path]


def _text_file(files: contextlib.ExitStack, path: str, mime: str) -> io.TextIOWrapper:
    raw = files.enter_context(FileSystems.create(path, mime_type=mime))
    return files.enter_context(io.TextIOWrapper(raw, encoding="utf-8", newline=""))


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
