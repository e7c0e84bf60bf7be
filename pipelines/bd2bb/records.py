"""BD2BB records (Pezzelle et al. 2020, §3-§4) and the Arrow schema of its release table.

A tuple is one crowd answer: an image, an intention written after "If I", an action
written after "I will", and its annotator. It becomes a `Datapoint` that the stages
fill in (parse and argument codes, embedding cluster), and each surviving datapoint the
target of one `Sample` with four decoy actions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Tuple

import pyarrow as pa

from schemas.columns import described
from transforms.text.tokens import Token, text_key

SPLITS = ("train", "val", "test")   # the public file names: train.csv, val.csv, test.csv
CANDIDATES = 5                      # target + 2 language + 2 vision decoys (§4)
TARGET, LANGUAGE, VISION = "targ", "lan", "vis"   # end<k>type values of the public CSVs
SOURCE = "coco"                     # images come from MS-COCO train2014 (§3, Vondrick et al.)


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


SAMPLE_SCHEMA = described(pa.schema([
    pa.field("sample_id", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("hard_test", pa.bool_(), nullable=False),      # §7 hard (unseen) test subset
    pa.field("tuple_id", pa.string(), nullable=False),
    pa.field("image", pa.string(), nullable=False),
    pa.field("annotator", pa.string(), nullable=False),
    pa.field("intention", pa.string(), nullable=False),
    pa.field("action", pa.string(), nullable=False),        # the target
    pa.field("cluster", pa.int64(), nullable=False),
    pa.field("cluster_label", pa.string(), nullable=False),
    pa.field("code1", pa.string(), nullable=False),
    pa.field("code2", pa.list_(pa.string()), nullable=False),
    pa.field("code3", pa.string(), nullable=False),
    pa.field("code4", pa.list_(pa.string()), nullable=False),
    pa.field("endings", pa.list_(pa.string()), nullable=False),       # shown order
    pa.field("ending_types", pa.list_(pa.string()), nullable=False),  # targ / lan / vis
    pa.field("label", pa.int64(), nullable=False),                    # target position
]), {
    "sample_id": "the sample's id: its target tuple's id",
    "split": "train, val or test (§5: 20/40/40, by the actions' topic clusters)",
    "source": "coco: the images are MS-COCO train2014's (§3)",
    "hard_test": "true for a test sample in the hard (unseen) test set (§7)",
    "tuple_id": "the input tuple's id (its \"id\" when given, else a hash of its content)",
    "image": "the image the tuple was written for: a COCO file name or URL, as the input gives it",
    "annotator": "the participant who wrote the intention and the action",
    "intention": "the intention, the text after \"If I\" (§3)",
    "action": "the target action, the text after \"I will\" (§3)",
    "cluster": "the target action's topic cluster (Universal Sentence Encoder + k-means, §3.2)",
    "cluster_label": "the cluster's label from the review sheet; empty when unlabelled",
    "code1": "the action's main verb, lemmatised (§3.2, A.3)",
    "code2": "the main verb's objects (or other complements)",
    "code3": "the verb of the coordinate or subordinate clause, lemmatised",
    "code4": "the other nouns in complement positions of either verb",
    "endings": "the 5 candidate actions in shown order: the target, 2 language decoys, "
               "2 vision decoys (§4)",
    "ending_types": "each ending's type: targ (the target), lan (language decoy), vis "
                    "(vision decoy)",
    "label": "the position of the target among the endings (0-4), as in the public CSVs",
}, class_names={"label": ("ending0", "ending1", "ending2", "ending3", "ending4")})


def sample_to_row(sample: Sample) -> dict:
    d, t = sample.datapoint, sample.datapoint.tuple
    return {
        "sample_id": sample.sample_id, "split": sample.split, "source": SOURCE,
        "hard_test": bool(sample.hard_test), "tuple_id": t.tuple_id, "image": t.image,
        "annotator": t.annotator, "intention": t.intention, "action": t.action,
        "cluster": int(d.cluster), "cluster_label": d.cluster_label,
        "code1": d.codes.code1, "code2": list(d.codes.code2), "code3": d.codes.code3,
        "code4": list(d.codes.code4), "endings": list(sample.endings),
        "ending_types": list(sample.ending_types), "label": int(sample.label),
    }
