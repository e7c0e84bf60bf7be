"""BD2BB inputs: the crowd tuples (JSON Lines) and MS-COCO captions (captions_train2014.json).

A tuple line is {"image": ..., "intention": ..., "action": ..., "annotator": ...} with an
optional "id"; the intention and action are the texts typed after "If I" and "I will"
(§3.1). Without an id, the tuple's id is a hash of its four fields, so the same answer
twice is one tuple (the second is a duplicate_tuple reject).
"""
from __future__ import annotations

import hashlib
import json
from typing import Iterator, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from schemas.bd2bb import BD2BBTuple, coco_image_id
from schemas.records import Reject
from transforms.inputs import parse_record
from transforms.stage import MAIN, REJECTS, StageCounts

REQUIRED = ("image", "intention", "action")


def parse_tuple_line(line: str):
    """A BD2BBTuple, or (reason, detail)."""
    try:  # a COCO id may come as a number: read it as the string the tuple keeps
        raw = json.loads(line)
        if isinstance(raw, dict) and isinstance(raw.get("image"), int) and not isinstance(raw["image"], bool):
            raw["image"] = str(raw["image"])
            line = json.dumps(raw)
    except json.JSONDecodeError:
        pass  # parse_record names the problem
    record = parse_record(line, REQUIRED)
    if isinstance(record, tuple):
        return record
    annotator = record.get("annotator", "")
    if not isinstance(annotator, (str, int)):
        return reasons.BAD_FIELD, "annotator must be a string"
    if coco_image_id(record["image"]) is None:
        return reasons.BAD_FIELD, f"image {record['image']!r} holds no COCO image id"
    fields = [record["image"].strip(), record["intention"].strip(), record["action"].strip(),
              str(annotator).strip()]
    tuple_id = record.get("id")
    if tuple_id is None:
        tuple_id = hashlib.sha256("\x00".join(fields).encode("utf-8")).hexdigest()[:16]
    return BD2BBTuple(str(tuple_id), *fields)


class _ParseLine(beam.DoFn):
    def __init__(self):
        self.counts = StageCounts("read")

    def process(self, line: str):
        if line.strip():  # blank lines are layout, not items
            yield self._judge(line)

    def _judge(self, line: str):
        self.counts.seen(level="line")
        parsed = parse_tuple_line(line)
        if isinstance(parsed, BD2BBTuple):
            return self.counts.passed(parsed, level="line")
        return self.counts.rejected(Reject(stage="read", level="line", reason=parsed[0],
                                           item_id=line.strip()[:200], detail=parsed[1]))


class _KeepOne(beam.DoFn):
    """Tuples sharing an id: keep the smallest by content, so every runner keeps the same."""

    def __init__(self):
        self.counts = StageCounts("dedupe")

    def process(self, kv):
        _, group = kv
        group = sorted(group, key=lambda t: (t.image, t.intention, t.action, t.annotator))
        self.counts.seen(len(group), level="tuple")
        yield self.counts.passed(group[0], level="tuple")
        for t in group[1:]:
            yield self.counts.rejected(Reject(stage="dedupe", level="tuple",
                                              reason=reasons.DUPLICATE_TUPLE, item_id=t.tuple_id,
                                              source=t.image, detail=t.action[:200]))


class ReadTuples(beam.PTransform):
    """tuples.jsonl -> BD2BBTuple (main), line and duplicate rejects."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, pbegin):
        parsed = (pbegin | "Read lines" >> beam.io.ReadFromText(self.path)
                  | "Parse" >> beam.ParDo(_ParseLine()).with_outputs(REJECTS, main=MAIN))
        unique = (parsed[MAIN] | "Key by id" >> beam.Map(lambda t: (t.tuple_id, t))
                  | "Group ids" >> beam.GroupByKey()
                  | "Keep one" >> beam.ParDo(_KeepOne()).with_outputs(REJECTS, main=MAIN))
        rejects = (parsed[REJECTS], unique[REJECTS]) | "Input rejects" >> beam.Flatten()
        return {MAIN: unique[MAIN], REJECTS: rejects}


def iter_captions(path: str) -> Iterator[Tuple[int, str]]:
    """(image id, caption) of a COCO captions file ({"annotations": [{"image_id", "caption"}]})."""
    with FileSystems.open(path, compression_type="uncompressed") as f:
        data = json.load(f)
    for ann in data.get("annotations", []):
        yield int(ann["image_id"]), str(ann["caption"])


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
