"""The relations of VSR's Table 1 (Liu et al. 2023) and their categories: what a config's
extra relations are checked against before any work, so no Arrow or Beam here.

Table 1 lists 71 relations in 7 categories; "among" is listed twice (Topological and
Unallocated), so there are 70 distinct relation strings. A relation's category is the
first one Table 1 gives it (so "among" is Topological).
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

# Table 1, in the paper's order (also ../shared/realdata/vsr/rel_meta_category_dict.txt).
TABLE_1: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("Adjacency", ("adjacent to", "alongside", "at the side of", "at the right side of",
                   "at the left side of", "attached to", "at the back of", "ahead of", "against",
                   "at the edge of")),
    ("Directional", ("off", "past", "toward", "down", "deep down", "up", "away from", "along",
                     "around", "from", "into", "to", "across", "across from", "through",
                     "down from")),
    ("Orientation", ("facing", "facing away from", "parallel to", "perpendicular to")),
    ("Projective", ("on top of", "beneath", "beside", "behind", "left of", "right of", "under",
                    "in front of", "below", "above", "over", "in the middle of")),
    ("Proximity", ("by", "close to", "near", "far from", "far away from")),
    ("Topological", ("connected to", "detached from", "has as a part", "part of", "contains",
                     "within", "at", "on", "in", "with", "surrounding", "among", "consists of",
                     "out of", "between", "inside", "outside", "touching")),
    ("Unallocated", ("beyond", "next to", "opposite to", "after", "among", "enclosed by")),
)
CATEGORIES = tuple(name for name, _ in TABLE_1)
RELATION_CATEGORY: Dict[str, str] = {}
for _category, _relations in TABLE_1:
    for _relation in _relations:
        RELATION_CATEGORY.setdefault(_relation, _category)   # first listing wins ("among")
RELATIONS = tuple(RELATION_CATEGORY)
assert sum(len(r) for _, r in TABLE_1) == 71 and len(RELATIONS) == 70


def relation_category(relation: str, extra: Optional[Dict[str, str]] = None) -> str:
    """A relation's Table 1 category, else its category among the config's `extra`
    relations, else ""."""
    return RELATION_CATEGORY.get(relation) or (extra or {}).get(relation, "")
