"""The public BD2BB layout (github.com/sandropezzelle/bd2bb, data/*.csv): SWAG-style CSVs.

    id,sent1,sent2,ending0,...,ending4,end0type,...,end4type,label

`sent1` is the intention (the text after "If I"), `sent2` is empty, `ending<k>` the
candidate actions (after "I will") in shown order, `end<k>type` one of targ / lan / vis,
and `label` the position of the target. Files: BD2BB.csv (all samples), train.csv,
val.csv, test.csv and hard_unseen_test.csv; ids count from 1 over BD2BB.csv.

Beside them, `BD2BB.json`: the file the original loader (code/datasets/BD2BBDataset.py)
and the baselines' prepare_inputs read: {csv id: [{"target_item", "lang_decoy1",
"lang_decoy2", "vis_decoy1", "vis_decoy2"}]}, each item {intention, action, image_url}.
The files are written by release.write_numbered.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Dict, Iterable, List, TextIO

from pipelines.bd2bb.records import CANDIDATES, LANGUAGE, TARGET, VISION, Sample, coco_image_id
from transforms.core.errors import InputError
from transforms.io.csv_out import CsvWriter as RowWriter

HEADER = (["id", "sent1", "sent2"] + [f"ending{k}" for k in range(CANDIDATES)]
          + [f"end{k}type" for k in range(CANDIDATES)] + ["label"])
FILES = {"all": "BD2BB.csv", "train": "train.csv", "val": "val.csv", "test": "test.csv",
         "hard": "hard_unseen_test.csv"}
TYPE_COUNTS = {TARGET: 1, LANGUAGE: 2, VISION: 2}

COMPAT_JSON = "BD2BB.json"
COCO_IMAGE_URL = "http://images.cocodataset.org/train2014/COCO_train2014_{:012d}.jpg"
# The original's item names: decoys in shown order within their type.
ITEM_NAMES = {TARGET: ("target_item",), LANGUAGE: ("lang_decoy1", "lang_decoy2"),
              VISION: ("vis_decoy1", "vis_decoy2")}


def to_row(compat_id: int, sample: Sample) -> Dict[str, object]:
    row = {"id": compat_id, "sent1": sample.datapoint.tuple.intention, "sent2": "",
           "label": sample.label}
    for k in range(CANDIDATES):
        row[f"ending{k}"] = sample.endings[k]
        row[f"end{k}type"] = sample.ending_types[k]
    return row


class CsvWriter:
    """A public-layout CSV written a row at a time (the header first), cells verbatim for
    the original loaders: an intention or action that a spreadsheet would run as a
    formula never gets here (inputs.py rejects it as formula_text; transforms/io/csv_out.py)."""

    def __init__(self, out: TextIO):
        self._writer = RowWriter(out, HEADER, verbatim=True)

    def write(self, row: Dict[str, object]) -> None:
        self._writer.row([row[c] for c in HEADER])


def csv_text(rows: Iterable[Dict[str, object]]) -> str:
    out = io.StringIO()
    writer = CsvWriter(out)
    for row in rows:
        writer.write(row)
    return out.getvalue()


def read_rows(text: str, name: str = "text") -> List[Dict[str, str]]:
    """The rows of a public-layout CSV; an InputError naming `name` when its header is
    not the public one."""
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames != HEADER:
        raise InputError(f"{name}: not a BD2BB CSV: header {reader.fieldnames}, "
                         f"expected {','.join(HEADER)}")
    return list(reader)


def read_file(path: str) -> List[Dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return read_rows(f.read(), path)


def problems(row: Dict[str, str]) -> List[str]:
    """What breaks the format's invariants: one targ, two lan, two vis, label = targ's
    position, five non-empty endings."""
    out = []
    types = [row[f"end{k}type"] for k in range(CANDIDATES)]
    for kind, n in TYPE_COUNTS.items():
        if types.count(kind) != n:
            out.append(f"id {row['id']}: {types.count(kind)} {kind} endings, expected {n}")
    if set(types) - set(TYPE_COUNTS):
        out.append(f"id {row['id']}: unknown ending types {sorted(set(types) - set(TYPE_COUNTS))}")
    try:
        label = int(row["label"])
    except ValueError:
        return out + [f"id {row['id']}: label {row['label']!r} is not an integer"]
    if not 0 <= label < CANDIDATES or types[label] != TARGET:
        out.append(f"id {row['id']}: label {label} is not the targ position")
    if any(not row[f"ending{k}"].strip() for k in range(CANDIDATES)):
        out.append(f"id {row['id']}: empty ending")
    return out


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
