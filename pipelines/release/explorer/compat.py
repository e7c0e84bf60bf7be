"""Where a release explorer row is in the release's compat/ files, the original layout's
(views.Compat declares how a benchmark's table maps onto them).

The row view links each entry: NLVR2's example test1-676-1-0 is line 677 of
compat/test1.json and a line of compat/balanced/balanced_test1.json; an ImageCoDe set is
the member "<set name>" of compat/valid_data.json. The entries of the declared files are
read once, one at a time, into the explorer's row store (rows.RowStore, on disk)
under the text of their matched fields, so memory holds one entry, not a file's worth
of locations, and a row's entries are one indexed lookup.

An entry is a line of a JSON-lines file (.jsonl, or .json whose first line is a whole
JSON object: NLVR2's), a row of a CSV file (its line, the header being line 1), an item
of a JSON list, or a member of a JSON object, whose name is the field "".
"""
from __future__ import annotations

import csv
import glob
import json
import os
from typing import Iterator, List, Optional, Tuple

from pipelines.release.explorer.rows import RowStore
from pipelines.release.explorer.views import Compat

NAME = ""       # the field that is a JSON object member's name
BATCH = 2048    # entries stored at a time


class CompatEntries:
    """A view's compat/ entries, looked up by a row."""

    def __init__(self, store: RowStore, release_dir: str, compat: Compat, tag: str):
        self.store, self.compat = store, compat
        self.fields = [field for field, _ in compat.match]
        self.name = f"{tag}:compat:{json.dumps([compat.files, compat.match])}"
        if self.name not in store:
            files = sorted({os.path.relpath(path, release_dir) for pattern in compat.files
                            for path in glob.glob(os.path.join(release_dir, pattern))
                            if os.path.isfile(path)})
            store.load(self.name, self._batches(release_dir, files),
                       order=lambda entry: (entry["f"], entry["n"]), key=lambda entry: entry["k"])

    def of(self, row: dict) -> List[List[str]]:
        """[file (relative to the release), where in it] of every entry of this row."""
        key = _key(row.get(column) for _, column in self.compat.match)
        return [[entry["f"], entry["at"]] for entry in self.store.get_all(self.name, key)]

    def _batches(self, release_dir: str, files: List[str]) -> Iterator[List[dict]]:
        batch = []
        for rel in files:
            for n, (fields, where) in enumerate(entries(os.path.join(release_dir, rel),
                                                        members=NAME in self.fields)):
                if not isinstance(fields, dict):
                    continue
                batch.append({"k": _key(fields.get(f) for f in self.fields), "f": rel, "n": n,
                              "at": where})
                if len(batch) == BATCH:
                    yield batch
                    batch = []
        yield batch


def entries(path: str, members: bool = False) -> Iterator[Tuple[Optional[dict], str]]:
    """(the entry's fields, where it is) of every entry of a compat/ file; `members`: the
    file is one JSON object whose members are the entries (a member's name is field "")."""
    if path.endswith(".csv"):
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            for row in reader:
                yield row, f"line {reader.line_num}"
        return
    if not path.endswith((".json", ".jsonl")):
        return
    if not members and _json_lines(path):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.strip():
                    yield json.loads(line), f"line {number}"
        return
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    if isinstance(document, dict):
        for name, value in document.items():
            fields = dict(value) if isinstance(value, dict) else {}
            fields[NAME] = name
            yield fields, json.dumps(name, ensure_ascii=False)
    elif isinstance(document, list):
        for number, item in enumerate(document):
            yield item, f"item {number}"


def _json_lines(path: str) -> bool:
    """Whether a .json file is JSON lines: its first line is a whole JSON object (a
    document on one line that is a list holds items, not lines)."""
    if path.endswith(".jsonl"):
        return True
    with open(path, encoding="utf-8") as f:
        first = f.readline()
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        return False


def _key(values) -> str:
    return json.dumps(["" if v is None else str(v) for v in values], ensure_ascii=False)
