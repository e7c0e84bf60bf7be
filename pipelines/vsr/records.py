"""Visual Spatial Reasoning (Liu et al. 2023, TACL): the records that flow between the
stages (a sampled image pair, a caption on an image, its votes, its splits), their ids,
and the split names. Their Arrow rows: pipelines/vsr/tables.py; the public JSON Lines
layout: pipelines/vsr/compat.py.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Optional, Tuple

from schemas.coco import CocoImage

# Split names of the public release (data/splits/{random,zeroshot}/{train,dev,test}.jsonl).
SPLITS = ("train", "dev", "test")


def example_id(image: str, caption: str) -> str:
    """Stable id of an example: one caption on one image (unique in the public data)."""
    return hashlib.sha256(f"{image}\x00{caption}".encode()).hexdigest()[:16]


def pair_id(image_a: str, image_b: str, subj: str, obj: str) -> str:
    """Stable id of a sampled image pair: the same images and concepts, the same id."""
    return "pair-" + hashlib.sha256(f"{image_a}\x00{image_b}\x00{subj}\x00{obj}".encode()).hexdigest()[:12]


def coco_source(image_link: str) -> str:
    """train2017 / val2017 from a COCO image URL (".../train2017/000000419052.jpg")."""
    parts = image_link.rstrip("/").split("/")
    return parts[-2] if len(parts) >= 2 else ""


@dataclass(frozen=True)
class ImagePair:
    """Two COCO images that each hold exactly one large instance of both concepts (§3.1).

    `subj` fills ENT1 of the template (captions.TEMPLATE) and `obj` ENT2 (COCO category names)."""
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
