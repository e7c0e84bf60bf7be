"""Crowd task files: what a round asks people to do, one JSON object a line.

    keyed | WriteTaskFiles(folder, always=["writing.jsonl"])

`keyed` holds (file path relative to `folder`, (sort key, task dict)); each file's lines
are in sort-key order, so the same tasks give the same bytes on any runner. Every path in
`always` is written, empty when no task goes there (a round with nothing to do still has
its file).
"""
from __future__ import annotations

import json
from typing import Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems


class WriteTaskFiles(beam.PTransform):
    def __init__(self, folder: str, always: Sequence[str] = ()):
        super().__init__()
        self._folder = folder
        self._always = tuple(always)

    def expand(self, keyed):
        folder = self._folder
        every = keyed.pipeline | "Every file" >> beam.Create([(p, None) for p in self._always])

        def write(path, items):
            lines = [json.dumps(obj, ensure_ascii=False) for _, obj in
                     sorted((i for i in items if i is not None), key=lambda kv: kv[0])]
            full = FileSystems.join(folder, *path.split("/"))
            with FileSystems.create(full, mime_type="application/jsonl") as f:
                f.write(("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
            return full

        return ((keyed, every) | "Flatten" >> beam.Flatten()
                | "Group by file" >> beam.GroupByKey() | "Write" >> beam.MapTuple(write))
