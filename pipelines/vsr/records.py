"""Visual Spatial Reasoning (Liu et al. 2023, TACL): records, Arrow schemas and the public
JSON Lines layout (the relations of Table 1: pipelines/vsr/relations.py).

The copula "is" is dropped for
"contains", "consists of" and "has as a part" (§3.1; every public caption with these
three relations lacks it, and no other does).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import pyarrow as pa

from pipelines.vsr.relations import RELATION_CATEGORY
from schemas.coco import CocoImage
from schemas.columns import described
from transforms.io import strict_json

NO_COPULA = frozenset({"contains", "consists of", "has as a part"})
TEMPLATE = "The ENT1 (is) ___ the ENT2."

# Split names of the public release (data/splits/{random,zeroshot}/{train,dev,test}.jsonl).
SPLITS = ("train", "dev", "test")
RANDOM, ZEROSHOT = "random", "zeroshot"

# The fields of the public raw file, in its order; the validated file adds reference_frame.
PUBLIC_FIELDS = ("image", "image_link", "caption", "label", "relation", "annotator_id",
                 "vote_true_validator_id", "vote_false_validator_id")
VOTE_FIELDS = ("vote_true_validator_id", "vote_false_validator_id")


def example_id(image: str, caption: str) -> str:
    """Stable id of an example: one caption on one image (unique in the public data)."""
    return hashlib.sha256(f"{image}\x00{caption}".encode()).hexdigest()[:16]


def pair_id(image_a: str, image_b: str, subj: str, obj: str) -> str:
    """Stable id of a sampled image pair: the same images and concepts, the same id."""
    return "pair-" + hashlib.sha256(f"{image_a}\x00{image_b}\x00{subj}\x00{obj}".encode()).hexdigest()[:12]


# --- records -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImagePair:
    """Two COCO images that each hold exactly one large instance of both concepts (§3.1).

    `subj` fills ENT1 of the template and `obj` ENT2 (COCO category names)."""
    pair_id: str
    subj: str
    obj: str
    images: Tuple[CocoImage, CocoImage]
    subj_areas: Tuple[float, float]
    obj_areas: Tuple[float, float]
    draw: int              # index of the seeded draw that produced it
    pool_size: int         # images holding both concepts after the filters


@dataclass(frozen=True)
class Example:
    """One caption on one image with its writer's label (True/False), before validation.

    Ids of annotators are kept as strings (the public file has integers; they are written
    back as integers in compat/)."""
    example_id: str
    image: str
    image_link: str
    caption: str
    label: int
    relation: str
    subj: str
    obj: str
    annotator_id: str
    source: str = ""            # COCO split of the image (train2017 / val2017)
    pair_id: str = ""           # the sampled pair it came from ("" for public-layout input)
    reference_frame: Optional[float] = None   # only the public validated file carries it


@dataclass(frozen=True)
class VotedExample:
    """An example and the validators' votes, as counted by the vote rules."""
    example: Example
    vote_true: Tuple[str, ...]
    vote_false: Tuple[str, ...]

    @property
    def agreeing(self) -> int:
        return len(self.vote_true if self.example.label == 1 else self.vote_false)

    @property
    def validators(self) -> int:
        return len(self.vote_true) + len(self.vote_false)


@dataclass(frozen=True)
class SplitExample:
    """A validated example with its random split and concept zero-shot split ("" = not in
    the zero-shot split: its two concepts fell into different parts)."""
    voted: VotedExample
    split: str
    zeroshot_split: str = ""


# --- Arrow schemas -------------------------------------------------------------------------

_IDS = "ids are strings in every file of the release (Parquet, TFRecord, compat/)"

EXAMPLE_SCHEMA = described(pa.schema([
    pa.field("example_id", pa.string(), nullable=False),
    pa.field("image", pa.string(), nullable=False),
    pa.field("image_link", pa.string(), nullable=False),
    pa.field("caption", pa.string(), nullable=False),
    pa.field("label", pa.int64(), nullable=False),
    pa.field("relation", pa.string(), nullable=False),
    pa.field("relation_category", pa.string(), nullable=False),
    pa.field("subj", pa.string(), nullable=False),
    pa.field("obj", pa.string(), nullable=False),
    pa.field("annotator_id", pa.string(), nullable=False),
    pa.field("vote_true_validator_id", pa.list_(pa.string()), nullable=False),
    pa.field("vote_false_validator_id", pa.list_(pa.string()), nullable=False),
    pa.field("validators", pa.int64(), nullable=False),
    pa.field("agreeing", pa.int64(), nullable=False),
    pa.field("reference_frame", pa.float64()),   # null when unknown
    pa.field("split", pa.string(), nullable=False),              # random split
    pa.field("zeroshot_split", pa.string(), nullable=False),     # "" = not in the zero-shot split
    pa.field("source", pa.string(), nullable=False),             # train2017 / val2017
    pa.field("pair_id", pa.string(), nullable=False),
]), {
    "example_id": "the example's id: the first 16 hex digits of sha256(image, caption)",
    "image": "the COCO 2017 file name of the image (the images are not in the release)",
    "image_link": "the image's URL on images.cocodataset.org",
    "caption": "the caption: \"The <subj> (is) <relation> the <obj>.\"",
    "label": "1 when the caption is true of the image (the writer's label, confirmed by "
             "the validators), 0 when false",
    "relation": "the spatial relation the caption names (one of Table 1's)",
    "relation_category": "the relation's meta-category (Table 1: Adjacency, Directional, ...)",
    "subj": "the caption's subject concept (a COCO category)",
    "obj": "the caption's object concept (a COCO category)",
    "annotator_id": "the writer of the caption; " + _IDS,
    "vote_true_validator_id": "the validators who judged the caption true (§3.2), as counted; "
                              + _IDS,
    "vote_false_validator_id": "the validators who judged it false, as counted; " + _IDS,
    "validators": "the validators counted",
    "agreeing": "the validators whose judgement equals the label (the keep rule: at least 2 "
                "and at least 2/3, §4.1)",
    "reference_frame": "the reference frame the public file gives, null when it gives none",
    "split": "the random split (§3.4): train, dev or test",
    "zeroshot_split": "the concept zero-shot split (§3.4): train, dev or test; empty when the "
                      "example's two concepts fell into different parts (it is in the random "
                      "split only)",
    "source": "the COCO split of the image: train2017 or val2017",
    "pair_id": "the sampled image pair the caption was written for (image_pairs); empty for "
               "an example read from the public file",
}, class_names={"label": ("False", "True")})

PAIR_SCHEMA = described(pa.schema([
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("subj", pa.string(), nullable=False),
    pa.field("obj", pa.string(), nullable=False),
    pa.field("image_ids", pa.list_(pa.int64()), nullable=False),
    pa.field("images", pa.list_(pa.string()), nullable=False),
    pa.field("image_links", pa.list_(pa.string()), nullable=False),
    pa.field("subj_areas", pa.list_(pa.float64()), nullable=False),
    pa.field("obj_areas", pa.list_(pa.float64()), nullable=False),
    pa.field("draw", pa.int64(), nullable=False),
    pa.field("pool_size", pa.int64(), nullable=False),
    pa.field("split", pa.string(), nullable=False),     # "unsplit": pairs precede the splits
    pa.field("source", pa.string(), nullable=False),    # "+"-joined COCO splits of the images
]), {
    "pair_id": "the pair's id: a hash of its two images and two concepts",
    "subj": "the concept the writer is asked to make the subject (ENT1, §3.1)",
    "obj": "the other concept (ENT2)",
    "image_ids": "the COCO ids of the pair's two images",
    "images": "their COCO 2017 file names (the images are not in the release)",
    "image_links": "their URLs on images.cocodataset.org",
    "subj_areas": "the area of subj's one instance in each image, in pixels",
    "obj_areas": "the area of obj's one instance in each image, in pixels",
    "draw": "the number of the draw that sampled the pair (pipelines/vsr/pairs.py)",
    "pool_size": "the images whose only instances of both concepts are large enough (§3.1)",
    "split": "unsplit: pairs are sampled before the examples are split",
    "source": "the COCO splits of the two images, joined by +",
})


def relation_category(relation: str, extra: Optional[Dict[str, str]] = None) -> str:
    return RELATION_CATEGORY.get(relation) or (extra or {}).get(relation, "")


def example_to_row(item: SplitExample, extra_relations: Optional[Dict[str, str]] = None) -> dict:
    v, e = item.voted, item.voted.example
    return {
        "example_id": e.example_id, "image": e.image, "image_link": e.image_link,
        "caption": e.caption, "label": int(e.label), "relation": e.relation,
        "relation_category": relation_category(e.relation, extra_relations),
        "subj": e.subj, "obj": e.obj, "annotator_id": str(e.annotator_id),
        "vote_true_validator_id": [str(x) for x in v.vote_true],
        "vote_false_validator_id": [str(x) for x in v.vote_false],
        "validators": v.validators, "agreeing": v.agreeing,
        "reference_frame": None if e.reference_frame is None else float(e.reference_frame),
        "split": item.split, "zeroshot_split": item.zeroshot_split,
        "source": e.source, "pair_id": e.pair_id,
    }


def pair_to_row(pair: ImagePair) -> dict:
    return {
        "pair_id": pair.pair_id, "subj": pair.subj, "obj": pair.obj,
        "image_ids": [int(i.image_id) for i in pair.images],
        "images": [i.file_name for i in pair.images],
        "image_links": [i.coco_url for i in pair.images],
        "subj_areas": [float(a) for a in pair.subj_areas],
        "obj_areas": [float(a) for a in pair.obj_areas],
        "draw": int(pair.draw), "pool_size": int(pair.pool_size), "split": "unsplit",
        "source": "+".join(sorted({i.source for i in pair.images})),
    }


# --- the public layout -----------------------------------------------------------------------

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


def coco_source(image_link: str) -> str:
    """train2017 / val2017 from a COCO image URL (".../train2017/000000419052.jpg")."""
    parts = image_link.rstrip("/").split("/")
    return parts[-2] if len(parts) >= 2 else ""
