"""BD2BB inputs: the crowd tuples (JSON Lines) and MS-COCO captions (captions_train2014.json).

A tuple line is {"image": ..., "intention": ..., "action": ..., "annotator": ...} with an
optional "id"; the intention and action are the texts typed after "If I" and "I will"
(§3.1). Without an id, the tuple's id is a hash of its content key. A line that is not
UTF-8, not JSON or lacks a field is a line-level reject naming its file and line
(transforms/io/lines.py); so is one whose text holds a control character
(control_character) or whose intention or action begins like a spreadsheet formula
(`=`, `+`, `-`, `@`: formula_text, since compat/*.csv publishes them verbatim;
transforms/io/free_text.py).

§4.1: each sample is a unique <image, intention, action>. The content key is (COCO image
id, normalised intention, normalised action) - not the annotator, not the input id, not
the image's spelling - so two annotators typing the same answer, or the same answer under
two ids, is one tuple. Of tuples sharing a content key the one with the smallest
(id, image, intention, action, annotator) is kept, on every runner; the others are
duplicate_tuple rejects. Then tuples sharing an input id with different content: the
smallest by content is kept, the others are duplicate_tuple too (an id names one tuple).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Iterator, Tuple, Union

import apache_beam as beam

from pipelines.bd2bb import reasons
from pipelines.bd2bb.records import BD2BBTuple, coco_image_id
from schemas.coco import is_file_name
from transforms.core.errors import InputError
from transforms.core.stage import MAIN, REJECTS, KeepFirst, StageFn, stage_pardo
from transforms.io import strict_json
from transforms.io.free_text import formula_problem
from transforms.io.lines import (ReadNumberedLines, SourceLine, parse_json_object,
                                 required_strings_problem)
from transforms.io.strict_json import printable
from transforms.text.tokens import normalise_text

REQUIRED = ("image", "intention", "action")
_COCO_ID = re.compile(r"[0-9]{1,12}")


def parse_tuple_line(line: Union[SourceLine, str]):
    """A BD2BBTuple, or (reason, detail)."""
    record = parse_json_object(line)
    if isinstance(record, tuple):
        return record
    image = record.get("image")
    if isinstance(image, int) and not isinstance(image, bool):
        record["image"] = str(image)   # a COCO id may come as a number: kept as its string
    problem = required_strings_problem(record, REQUIRED)
    if problem:
        return problem
    annotator = record.get("annotator", "")
    if not isinstance(annotator, (str, int)):
        return reasons.BAD_FIELD, "annotator must be a string"
    if not is_image_reference(record["image"].strip()):
        # it is published (the image column) and, for a user, a path: nothing else passes
        return reasons.BAD_FIELD, (f"image {printable(record['image'])!r} is neither a plain "
                                   "COCO file name (COCO_train2014_000000123456.jpg) nor a COCO id")
    fields = [record["image"].strip(), record["intention"].strip(), record["action"].strip(),
              str(annotator).strip()]
    for name, text in (("intention", fields[1]), ("action", fields[2])):
        # published verbatim in compat/*.csv for the original loaders, so never neutralised
        # there: none of the 61,590 texts of the public BD2BB.csv begins like a formula
        problem = formula_problem(f"field '{name}'", text)
        if problem:
            return problem
    tuple_id = record.get("id")
    if tuple_id is None:
        tuple_id = hashlib.sha256("\x00".join(map(str, content_key_of(*fields[:3]))).encode("utf-8")
                                  ).hexdigest()[:16]
    return BD2BBTuple(str(tuple_id), *fields)


def is_image_reference(image: str) -> bool:
    """A plain COCO file name (schemas.coco.FILE_NAME: no folder, no `..`) or a COCO
    image id of at most 12 digits (COCO's ids have 12)."""
    return is_file_name(image) or _COCO_ID.fullmatch(image) is not None


def content_key_of(image: str, intention: str, action: str) -> tuple:
    """§4.1's identity of a datapoint: (COCO image id, normalised intention, normalised action)."""
    return (coco_image_id(image), normalise_text(intention), normalise_text(action))


def content_key(t: BD2BBTuple) -> tuple:
    return content_key_of(t.image, t.intention, t.action)


def _order(t: BD2BBTuple) -> tuple:
    return (t.tuple_id, t.image, t.intention, t.action, t.annotator, t.file, t.line)


class _ParseLine(StageFn):
    stage, level = "read", "line"

    def judge(self, line: SourceLine):
        parsed = parse_tuple_line(line)
        if isinstance(parsed, BD2BBTuple):
            yield dataclasses.replace(parsed, file=line.path, line=line.number)
            return
        reason, detail = parsed
        yield self.reject(reason, line.text.strip()[:200] or line.where, detail=detail,
                          file=line.path, line=line.number)


def _same_content(t: BD2BBTuple, kept: BD2BBTuple) -> dict:
    return dict(reason=reasons.DUPLICATE_TUPLE, item_id=t.tuple_id, source=t.image, **t.place,
                detail=f"same image, intention and action as {kept.tuple_id}: {t.action[:200]}")


def _same_id(t: BD2BBTuple, kept: BD2BBTuple) -> dict:
    return dict(reason=reasons.DUPLICATE_TUPLE, item_id=t.tuple_id, source=t.image, **t.place,
                detail=f"id {t.tuple_id} already names another tuple: {t.action[:200]}")


class ReadTuples(beam.PTransform):
    """tuples.jsonl (a path or glob) -> BD2BBTuple (main), line and duplicate rejects.

    Dedupe (stage dedupe, level tuple): of the tuples sharing a content key, then of the
    content-unique ones sharing an input id, the smallest by (id, content) is kept."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, pbegin):
        parsed = (pbegin | "Read lines" >> ReadNumberedLines(self.path)
                  | "Parse" >> stage_pardo(_ParseLine()))
        by_content = parsed[MAIN] | "Keep one content" >> KeepFirst(
            "dedupe", "tuple", key=content_key, order=_order, why=_same_content,
            counted_in=False, counts_out=False)
        unique = by_content[MAIN] | "Keep one" >> KeepFirst(
            "dedupe", "tuple", key=lambda t: t.tuple_id, order=_order, why=_same_id)
        rejects = ((parsed[REJECTS], by_content[REJECTS], unique[REJECTS])
                   | "Input rejects" >> beam.Flatten())
        return {MAIN: unique[MAIN], REJECTS: rejects}


def load_captions(path: str) -> dict:
    """A COCO captions file as its JSON object; InputError naming the file when it is not
    UTF-8 JSON of that shape (transforms/io/strict_json.py: a key twice, a lone surrogate,
    an id beyond 64 bits stop it too). One JSON document cannot be read line by line, so
    a bad file is a whole-file problem: preflight calls this before any work."""
    try:
        data = strict_json.load_document(path)
    except strict_json.JsonProblem as e:
        raise InputError(e.detail) from None   # the detail names the file
    except OSError as e:
        raise InputError(f"{path}: cannot read it ({e.strerror or e})") from None
    annotations = data.get("annotations") if isinstance(data, dict) else None
    if not isinstance(annotations, list):
        raise InputError(f'{path} is not a COCO captions file: no "annotations" list')
    for i, ann in enumerate(annotations):
        if not (isinstance(ann, dict) and isinstance(ann.get("caption"), str)
                and isinstance(ann.get("image_id"), int) and not isinstance(ann["image_id"], bool)):
            raise InputError(f'{path}: annotations[{i}] needs an integer "image_id" and a '
                             f'string "caption", got {json.dumps(ann)[:200]}')
    return data


def iter_captions(path: str) -> Iterator[Tuple[int, str]]:
    """(image id, caption) of a COCO captions file ({"annotations": [{"image_id", "caption"}]})."""
    for ann in load_captions(path)["annotations"]:
        yield ann["image_id"], ann["caption"]


class ReadCaptions(beam.PTransform):
    """captions JSON -> (COCO image id, caption). One JSON document is read by one worker
    (COCO's train2014 file is ~20 MB); the pairs are then spread for the join."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, pbegin):
        return (pbegin | "Path" >> beam.Create([self.path])
                | "Read" >> beam.FlatMap(iter_captions)
                | "Spread" >> beam.Reshuffle())
