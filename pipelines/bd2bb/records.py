"""BD2BB records (Pezzelle et al. 2020, §3-§4): the records that flow between the stages,
the split names and the ending types. The release table's Arrow schema:
pipelines/bd2bb/tables.py; the public layout: pipelines/bd2bb/compat.py.

A tuple is one crowd answer: an image, an intention written after "If I", an action
written after "I will", and its annotator. It becomes a `Datapoint` that the stages
fill in (parse and argument codes, embedding cluster), and each surviving datapoint the
target of one `Sample` with four decoy actions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Tuple

from transforms.text.tokens import Token, text_key

SPLITS = ("train", "val", "test")   # the public file names: train.csv, val.csv, test.csv
CANDIDATES = 5                      # target + 2 language + 2 vision decoys (§4)
TARGET, LANGUAGE, VISION = "targ", "lan", "vis"   # end<k>type values of the public CSVs


_DIGITS = re.compile(r"(\d+)(?=\D*$)")


def coco_image_id(image: str) -> Optional[int]:
    """The COCO image id of an image reference: an int, "123456", or a file name such as
    COCO_train2014_000000123456.jpg (the last run of digits). None when there is none."""
    match = _DIGITS.search(str(image))
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Codes:
    """The 4-code argument structure of an action (§3.2, A.3, Table 4): main verb lemma,
    its object/complement nouns, the second verb lemma, that verb's complement nouns.
    Nouns keep their surface form (§3.2 fn. 6); a missing code is "" or ()."""
    code1: str = ""
    code2: Tuple[str, ...] = ()
    code3: str = ""
    code4: Tuple[str, ...] = ()


@dataclass(frozen=True)
class BD2BBTuple:
    tuple_id: str       # the input's "id" when given, else a hash of its content
    image: str          # as given (COCO file name or id)
    intention: str      # the text after "If I"
    action: str         # the text after "I will"
    annotator: str = ""
    # where the tuple was read, for its rejects at every later stage (a reject of a tuple
    # once named line 0); not part of its identity
    file: str = field(default="", compare=False)
    line: int = field(default=0, compare=False)

    @property
    def action_key(self) -> str:
        return text_key(self.action)

    @property
    def place(self) -> dict:
        """The `file` and `line` fields of a Reject of this tuple."""
        return {"file": self.file, "line": self.line}


@dataclass(frozen=True)
class Datapoint:
    """A tuple and what the stages learnt about it."""
    tuple: BD2BBTuple
    parse: Tuple[Token, ...] = ()     # dropped after the action-noun filter (pipeline.py)
    codes: Codes = field(default_factory=Codes)
    cluster: int = -1
    cluster_label: str = ""


@dataclass(frozen=True)
class Sample:
    """A target datapoint with its 5 candidates in shown order (§4); `label` is the
    target's position."""
    sample_id: str
    datapoint: Datapoint
    endings: Tuple[str, ...]
    ending_types: Tuple[str, ...]
    label: int
    split: str = ""
    hard_test: bool = False
