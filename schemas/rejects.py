"""A reject: something that did not make it into a release, and why (every benchmark).

Every stage sends what it drops to a tagged output as a Reject (transforms.core.stage);
the release writes them all to `rejects/`, one row each (REJECT_SCHEMA), so nothing
disappears silently. `reason` is a code of the closed vocabulary (schemas.reasons and
the benchmark's own reasons module).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pyarrow as pa

from schemas.columns import described


@dataclass(frozen=True)
class Reject:
    """Something that did not make it into the release, and why."""
    stage: str        # "manifest", "decode", "shots", "mining", "sampling"
    level: str        # "video", "shot", "frame", "set", "line"
    reason: str       # one of schemas.reasons
    item_id: str      # e.g. "msr-vtt/video12/shot3/frame120"
    source: str = ""
    video_id: str = ""
    split: str = ""
    detail: str = ""
    file: str = ""    # the input file, for problems found in one line of it
    line: int = 0     # 1-based line number in `file`; 0: not a line-level reject


_REJECT_TYPES = {"line": pa.int64()}  # every other field is a string


REJECT_SCHEMA = described(pa.schema(
    [pa.field(f.name, _REJECT_TYPES.get(f.name, pa.string()), nullable=False)
     for f in dataclasses.fields(Reject)]), {
    "stage": "the stage that dropped the item",
    "level": "what the item is at that stage (video, frame, line, example, vote, ...)",
    "reason": "why: a code of the benchmark's closed vocabulary",
    "item_id": "the item (paths in it relative to the release folder or the input root)",
    "source": "the item's source (collection, configuration) when it has one",
    "video_id": "the item's video when it has one",
    "split": "the item's split when it had one",
    "detail": "what was found, in words (paths relative to the release folder or the input root)",
    "file": "the input file the item was read from, relative to the input root "
            "(MANIFEST.json input_root); empty when not read from one line of a file",
    "line": "its 1-based line in that file; 0 when not a line of a file",
})


def reject_to_row(reject: Reject) -> dict:
    """A Reject as a row of REJECT_SCHEMA."""
    return {f.name: int(getattr(reject, f.name)) if f.name in _REJECT_TYPES
            else str(getattr(reject, f.name)) for f in dataclasses.fields(Reject)}
