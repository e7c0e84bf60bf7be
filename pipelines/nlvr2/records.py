"""NLVR2 (Suhr et al., ACL 2019): the example record every stage hands on, its identifier
and the split names. Its public JSON Lines spelling: pipelines/nlvr2/compat.py; its table
rows: pipelines/nlvr2/tables.py.

An example is one sentence on one pair of images. The collection stages (S1-S9) end in
examples, and so does reading a released file (`PUBLIC=`): everything after - agreement,
human performance, consistency, subsets, the release - sees only `Example`s, whichever way
they were made.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple

# Split names of the public release; the paper's Test-P is test1 and Test-U test2 (§3.4).
SPLITS = ("train", "dev", "test1", "test2")

IDENTIFIER = re.compile(r"^(train|dev|test1|test2)-(\d+)-([0-3])-([01])$")

Judgements = Tuple[Tuple[str, str], ...]   # (worker id, "True"/"False") in the file's order (compat.LABELS)


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
