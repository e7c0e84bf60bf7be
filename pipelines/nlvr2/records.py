"""NLVR2 (Suhr et al., ACL 2019): the example record every stage hands on, and the public
JSON Lines layout (../shared/specs/nlvr2.md, "The public layout").

An example is one sentence on one pair of images. The collection stages (S1-S9) end in
examples, and so does reading a released file (`PUBLIC=`): everything after - agreement,
human performance, consistency, subsets, the release - sees only `Example`s, whichever way
they were made.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Optional, Tuple

# Split names of the public release; the paper's Test-P is test1 and Test-U test2 (§3.4).
SPLITS = ("train", "dev", "test1", "test2")

# Keys of a public line, in the order every released line writes them; train lines add
# `directory` (one of 100 image folders; the rule is not published).
PUBLIC_KEYS = ("validation", "sentence", "left_url", "writer", "label", "right_url", "synset",
               "query", "identifier", "extra_validations")
TRAIN_KEY = "directory"

IDENTIFIER = re.compile(r"^(train|dev|test1|test2)-(\d+)-([0-3])-([01])$")

LABELS = ("True", "False")   # labels and judgements are these strings in the public files

Judgements = Tuple[Tuple[str, str], ...]   # (worker id, "True"/"False") in the file's order


def identifier(split: str, set_id: int, pair: int, sentence_id: int) -> str:
    """`split-set-pair-sentence`: set ids run 0..n-1 within a split, 4 pairs a set (§3.2),
    2 sentences a set (two writing tasks per set, §3.2)."""
    return f"{split}-{set_id}-{pair}-{sentence_id}"


@dataclass(frozen=True)
class Example:
    """One (sentence, image pair) example, as released.

    `validation` is the writer-time judgement (one worker, §3.3) and `label` equals it;
    `extra_validations` are the 4 extra judgements of dev and test (§3.4), empty for train.
    `left_image`/`right_image` are local image files when the build has them (the
    collection stages do; a released file has only URLs). `origin` is (file, line) of the
    line an example was read from, for rejects and reports."""
    split: str
    set_id: int
    pair: int
    sentence_id: int
    sentence: str
    left_url: str
    right_url: str
    writer: str
    validation: Judgements
    label: bool
    synset: str
    query: str
    extra_validations: Judgements = ()
    directory: Optional[int] = None
    left_image: Optional[str] = None
    right_image: Optional[str] = None
    origin: Optional[Tuple[str, int]] = None

    @property
    def identifier(self) -> str:
        return identifier(self.split, self.set_id, self.pair, self.sentence_id)

    @property
    def group(self) -> Tuple[str, int, int]:
        """A consistency group (spec S11): the examples of one sentence on one set."""
        return (self.split, self.set_id, self.sentence_id)


def image_file(split: str, set_id: int, pair: int, side: int) -> str:
    """The public image file of one side of a pair, `split-set-pair-img{0,1}.png` (the
    public repository's README: the name, not the format - not every file is a PNG)."""
    return f"{split}-{set_id}-{pair}-img{side}.png"


def public_row(example: Example) -> dict:
    """The example as a public line's object: PUBLIC_KEYS in order, judgements as
    {worker: "True"/"False"} in their order, `label` a string; train rows end with
    `directory` (where the public train file puts it is not checked here: the train file
    is not among the files the tests read)."""
    row = {"validation": dict(example.validation), "sentence": example.sentence,
           "left_url": example.left_url, "writer": example.writer,
           "label": LABELS[0] if example.label else LABELS[1], "right_url": example.right_url,
           "synset": example.synset, "query": example.query, "identifier": example.identifier,
           "extra_validations": dict(example.extra_validations)}
    if example.directory is not None:
        row[TRAIN_KEY] = example.directory
    return row


def public_line(example: Example) -> str:
    """The public line of an example, without its newline: `json.dumps` with the default
    separators and ASCII escapes, as every line of the released files is written."""
    return json.dumps(public_row(example))
