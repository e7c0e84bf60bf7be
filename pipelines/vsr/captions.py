"""VSR captions: the template of §3.1 rendered, and public captions parsed back into
(subject, relation, object).

    The ENT1 (is) ___ the ENT2.     ->  "The cat is under the laptop."
                                        "The bowl contains the banana."   (no copula)

The copula "is" is dropped for "contains", "consists of" and "has as a part" (§3.1; every
public caption with these three relations lacks it, and no other does).

Parsing never strips characters: a caption is matched as "The <category> [is ]<relation>
the <category>." against the COCO category names and the relation list, trying every
split point, so a caption whose subject is "hot dog" can never become "ot dog". A caption
that matches no way, or more than one way, is not parsed. Spelling variants of category
names, if a data set has them, go through an explicit alias table (`aliases`), never
through guessing.
"""
from __future__ import annotations

from typing import Dict, Iterable, Mapping, Optional, Tuple

from pipelines.vsr.relations import RELATIONS
from schemas.coco import ID_BY_NAME

NO_COPULA = frozenset({"contains", "consists of", "has as a part"})
TEMPLATE = "The ENT1 (is) ___ the ENT2."   # as the writer's task shows it (§3.1, Figure 3)


def render_caption(subj: str, relation: str, obj: str) -> str:
    copula = "" if relation in NO_COPULA else "is "
    return f"The {subj} {copula}{relation} the {obj}."


class CaptionParser:
    """Matches captions against category names (plus aliases) and relations."""

    def __init__(self, relations: Iterable[str] = RELATIONS,
                 categories: Iterable[str] = tuple(ID_BY_NAME),
                 aliases: Optional[Mapping[str, str]] = None):
        self._relations = frozenset(relations)
        self._names: Dict[str, str] = {name: name for name in categories}
        for variant, name in (aliases or {}).items():
            if name not in self._names:
                raise ValueError(f"alias {variant!r} -> {name!r}: {name!r} is not a category")
            self._names[variant] = name

    def parse(self, caption: str) -> Tuple[Optional[Tuple[str, str, str]], str]:
        """((subj, relation, obj), "") with canonical category names, or (None, why)."""
        if not caption.startswith("The ") or not caption.endswith("."):
            return None, "caption is not 'The ... the ....'"
        body = caption[len("The "):-1]
        matches = set()
        words = body.split(" ")
        # subject = words[:i], then optional "is", relation = words[j:k], "the", object
        for i in range(1, len(words)):
            subj = " ".join(words[:i])
            if subj not in self._names:
                continue
            starts = [i + 1, i] if words[i] == "is" else [i]
            for j in starts:
                for k in range(j + 1, len(words)):
                    if words[k] != "the":
                        continue
                    relation, obj = " ".join(words[j:k]), " ".join(words[k + 1:])
                    if relation in self._relations and obj in self._names:
                        has_copula = j == i + 1
                        if has_copula == (relation not in NO_COPULA):
                            matches.add((self._names[subj], relation, self._names[obj]))
        if len(matches) == 1:
            return matches.pop(), ""
        if not matches:
            return None, "no category + relation + category reading of the caption"
        return None, f"ambiguous: {sorted(matches)}"
