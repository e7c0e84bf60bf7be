"""The public ImageCoDe annotation files, beside compat/image-sets/:

    compat/train_data.json           {set name: {"<target index>": description}}
    compat/valid_data.json           same shape
    compat/test_data_unlabeled.json  {set name: [descriptions]}   (no targets)

A JSON file is one object, so each split is grouped onto one worker (a split's text is a
few MB even for the full benchmark). The public layout holds one description per
(set, target); when several were kept for the same target, the one with the smallest
description id goes to the JSON file and all of them stay in parquet/descriptions/.
"""
from __future__ import annotations

import json
from typing import Iterable, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

PUBLIC_FILES = {"train": "train_data.json", "valid": "valid_data.json",
                "test": "test_data_unlabeled.json"}


def labelled_layout(rows: Iterable[Tuple[str, str, int, str]]) -> dict:
    """(description id, set, target, text) rows -> {set: {"<target>": text}}."""
    layout: dict = {}
    for _, set_name, target, text in sorted(rows):  # smallest id first: it wins
        layout.setdefault(set_name, {}).setdefault(str(target), text)
    return {name: dict(sorted(targets.items(), key=lambda kv: int(kv[0])))
            for name, targets in sorted(layout.items())}


def unlabelled_layout(rows: Iterable[Tuple[str, str, int, str]]) -> dict:
    """(description id, set, target, text) rows -> {set: [texts]} in description-id order."""
    layout: dict = {}
    for _, set_name, _, text in sorted(rows):
        layout.setdefault(set_name, []).append(text)
    return dict(sorted(layout.items()))


class WritePublicAnnotations(beam.PTransform):
    """Kept descriptions -> the three public JSON files under `<staging>/compat/`.

    Elements need description_id, set_name, target_index, text and split attributes.
    Every split's file is written, empty ({}) when the split has no description.
    """

    def __init__(self, staging_dir: str):
        super().__init__()
        self._compat = FileSystems.join(staging_dir, "compat")

    def expand(self, descriptions):
        keyed = descriptions | "Key by split" >> beam.Map(
            lambda d: (d.split, (d.description_id, d.set_name, int(d.target_index), d.text)))
        every_split = (keyed.pipeline | "Splits" >> beam.Create([(s, None) for s in PUBLIC_FILES]))
        return ((keyed, every_split)
                | "Flatten" >> beam.Flatten()
                | "Group by split" >> beam.GroupByKey()
                | "Write" >> beam.MapTuple(self._write))

    def _write(self, split: str, rows) -> str:
        rows = [r for r in rows if r is not None]
        layout = unlabelled_layout(rows) if split == "test" else labelled_layout(rows)
        path = FileSystems.join(self._compat, PUBLIC_FILES[split])
        with FileSystems.create(path, mime_type="application/json") as f:
            f.write(json.dumps(layout, ensure_ascii=False, indent=1).encode("utf-8"))
        return path
