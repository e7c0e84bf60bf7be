"""The records that flow between FG's stages (Chen et al., SIGIR '23, §3)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

from pipelines.fg import reasons
from schemas.names import safe_name
from transforms.io.lines import parse_json_object


def caption_key(image_id: str, index: int) -> str:
    """One caption's id: `<image_id>#<position>` (positions 0-4 as in the annotation file)."""
    return f"{image_id}#{index}"


def split_caption_key(key: str) -> Tuple[str, int]:
    image_id, _, index = key.rpartition("#")
    return image_id, int(index)


@dataclass
class Target:
    """An old test image with its captions and embedding (F0, F2), and the digest of its
    decoded pixels (ImageEmbedding.pixels_sha256): no image with these pixels is ever one
    of its similar images."""
    image_id: str
    path: str
    captions: List[str]
    embedding: np.ndarray
    pixels_sha256: Optional[str] = None


@dataclass
class Member:
    """One image of a similar set S_t; scores are cosines (None: not in that list)."""
    image_id: str
    path: str
    image_score: Optional[float]
    text_score: Optional[float]
    source: str   # "target", "image", "text"


@dataclass
class SimilarSet:
    target: str
    members: List[Member]


@dataclass
class Caption:
    """One caption of a target at one stage of the renovation."""
    image_id: str
    index: int
    text: str
    embedding: Optional[np.ndarray] = None     # retrieval encoding (no prefix)
    score: Optional[float] = None              # CLIPScore of the original with its image
    rank: Optional[int] = None                 # rank of its own image (F7)
    nouns: List[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return caption_key(self.image_id, self.index)


@dataclass
class Candidate:
    """One prompted continuation of a coarse caption, through F9-F14."""
    image_id: str
    index: int
    original: str
    original_score: float
    template: int
    noun: str
    prompt: str            # the prompt words appended to the caption (Table 1)
    detail: str = ""       # d_g: the prompt continued (F10)
    merged: str = ""       # d_f (F13)
    detail_score: Optional[float] = None
    merged_score: Optional[float] = None

    @property
    def key(self) -> str:
        return caption_key(self.image_id, self.index)

    @property
    def text(self) -> str:
        """d_n = <d_c, d_g> (§3.2.2(3)): the caption, a full stop, the detail (as
        prompts.Prompt.text writes the prompted caption, Figure 4)."""
        stem = self.original.strip()
        stem = stem if stem.endswith((".", "!", "?")) else stem + "."
        return f"{stem} {self.detail}"

    @property
    def label(self) -> str:
        return f"{self.key}/t{self.template}/{self.noun or '-'}"


def parse_caption_line(line, fields):
    """A JSON Lines line about one caption (its `image_id`, a 0-based `caption_index` and
    `fields`) as a dict, or (reason, detail) saying what is wrong with it. Its `image_id`
    becomes the id its image gets (schemas.names.safe_name, as the captions are keyed:
    pipelines/fg/captions.py), so a line naming `café 101` meets that image; a safe id,
    every public one, stays as it is."""
    record = parse_json_object(line, fields)
    if isinstance(record, tuple):
        return record
    index = record.get("caption_index")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        return reasons.BAD_FIELD, f"caption_index must be a non-negative integer, got {index!r}"
    try:
        return {**record, "image_id": safe_name(record["image_id"])}
    except ValueError as e:   # too long for a name
        return reasons.BAD_FIELD, f"image_id {record['image_id'][:100]!r}: {e}"
