"""Crowd task files: what a round asks people to do, one task a line.

    keyed | WriteTaskFiles(folder, always=["writing.jsonl"])
    keyed | WriteTaskFiles(folder, columns={"tasks.csv": COLUMNS, "tasks.jsonl": COLUMNS})

`keyed` holds (file path relative to `folder`, (sort key, task dict)); each file's lines
are in sort-key order, so the same tasks give the same bytes on any runner and any
number of workers (a file is written by one worker, after a GroupByKey). Every path in
`always` is written, empty when no task goes there (a round with nothing to do still has
its file).

A path ending in `.jsonl` gets one JSON object a line (with `columns[path]`: those keys,
in that order); one ending in `.json` a JSON array of them, one a line (what tools that
import a task list in one document take: Label Studio); one ending in `.csv` a header row of `columns[path]` and a row per task
(booleans `true`/`false`, lists as JSON, the form crowdsourcing tools take in; a text
that a spreadsheet would run as a formula, e.g. a description `=HYPERLINK(...)`, with a
leading `'`: transforms/io/csv_out.py. The `.jsonl` file keeps the text as it is).
"""
from __future__ import annotations

import json
from typing import Mapping, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from transforms.io.csv_out import csv_record, safe_cell


def image_base(url: Optional[str]) -> str:
    """`crowd.image_base_url` as a prefix: "" (release-relative paths) or ending in "/"."""
    if not url:
        return ""
    return url if url.endswith("/") else url + "/"


def csv_cell(value) -> str:
    """A task value as one CSV cell."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value), ensure_ascii=False)
    return str(value)


def csv_line(values) -> str:
    """Cells as one CSV record (quoted where needed), without the line end; a text that
    begins like a spreadsheet formula gets a leading quote (transforms/io/csv_out.py)."""
    return csv_record(csv_cell(safe_cell(v)) for v in values)


def task_lines(path: str, tasks, columns: Optional[Sequence[str]] = None):
    """The lines of one task file (header first for CSV), tasks in the order given."""
    if path.endswith(".csv"):
        if columns is None:
            raise ValueError(f"{path}: a CSV task file needs its columns")
        return [csv_line(columns)] + [csv_line(task[c] for c in columns) for task in tasks]
    if columns is not None:
        tasks = ({c: task[c] for c in columns} for task in tasks)
    lines = [json.dumps(task, ensure_ascii=False) for task in tasks]
    if path.endswith(".json"):
        return ["[" + ",\n".join(lines) + "]"]
    return lines


def _order(item):
    """By sort key; two tasks under one key by their content (never arrival order)."""
    key, task = item
    return key, json.dumps(task, sort_keys=True, ensure_ascii=False, default=str)


class WriteTaskFiles(beam.PTransform):
    def __init__(self, folder: str, always: Sequence[str] = (),
                 columns: Optional[Mapping[str, Sequence[str]]] = None):
        super().__init__()
        self._folder = folder
        self._columns = {path: tuple(cols) for path, cols in (columns or {}).items()}
        self._always = tuple(dict.fromkeys(tuple(always) + tuple(self._columns)))

    def expand(self, keyed):
        folder, columns = self._folder, self._columns
        every = keyed.pipeline | "Every file" >> beam.Create([(p, None) for p in self._always])

        def write(path, items):
            ordered = [obj for _, obj in sorted((i for i in items if i is not None), key=_order)]
            lines = task_lines(path, ordered, columns.get(path))
            full = FileSystems.join(folder, *path.split("/"))
            mime = ("text/csv" if path.endswith(".csv") else
                    "application/json" if path.endswith(".json") else "application/jsonl")
            with FileSystems.create(full, mime_type=mime) as f:
                f.write(("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
            return full

        return ((keyed, every) | "Flatten" >> beam.Flatten()
                | "Group by file" >> beam.GroupByKey() | "Write" >> beam.MapTuple(write))
