"""VSR's public JSON Lines layout (the public repository's data/ folder), so its loaders
work on compat/: the file names, the fields of a line, and a line written or a vote list
read as the public files hold them. The files are written by release.WriteCompat.

    compat/all_vsr_validated_data.jsonl            every kept example
    compat/splits/random/{train,dev,test}.jsonl    the random split (§3.4)
    compat/splits/zeroshot/{train,dev,test}.jsonl  the concept zero-shot split (§3.4)

One JSON object per line with the public fields plus subj and obj; vote lists are JSON
arrays (`release.stringify_votes: true` writes the v2 strings instead; pipelines/vsr/README.md
says why the default does not).
"""
from __future__ import annotations

import json
from typing import List

from pipelines.vsr.records import VotedExample
from transforms.io import strict_json

COMPAT_ALL = "all_vsr_validated_data.jsonl"

# The fields of the public raw file, in its order; the validated file adds reference_frame.
PUBLIC_FIELDS = ("image", "image_link", "caption", "label", "relation", "annotator_id",
                 "vote_true_validator_id", "vote_false_validator_id")


def compat_path(scheme: str, split: str) -> str:
    """Relative to compat/: splits/<scheme>/<split>.jsonl."""
    return f"splits/{scheme}/{split}.jsonl"


def to_public_line(voted: VotedExample, stringify_votes: bool = False) -> dict:
    """One line of the public split files. Worker ids are strings, as in every other file
    of the release (Parquet, TFRecord): one id has one type wherever a user joins on it,
    also when the input gave integers (the public files do). Vote lists are JSON arrays;
    the public v2 files hold them as strings ("[2, 10, 1]"), which `stringify_votes`
    mimics with a JSON list of the string ids ('["2", "10", "1"]')."""
    e = voted.example
    votes = {"vote_true_validator_id": [str(x) for x in voted.vote_true],
             "vote_false_validator_id": [str(x) for x in voted.vote_false]}
    if stringify_votes:
        votes = {k: json.dumps(v) for k, v in votes.items()}
    return {"image": e.image, "image_link": e.image_link, "caption": e.caption,
            "label": int(e.label), "relation": e.relation, "annotator_id": str(e.annotator_id),
            **votes, "reference_frame": e.reference_frame, "subj": e.subj, "obj": e.obj}


def parse_vote_list(value) -> List:
    """A vote list as the public files hold it: a JSON array, or (v2) its string "[1, 2]",
    decoded under the same rules as the line (transforms/io/strict_json.py: a JsonProblem
    is a ValueError)."""
    if isinstance(value, str):
        value = strict_json.loads(value)
    if not isinstance(value, list) or not all(
            isinstance(x, (int, str)) and not isinstance(x, bool) for x in value):
        raise ValueError("expected a list of validator ids")
    return value
