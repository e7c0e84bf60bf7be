"""One item of a page that answers several: `<field>@<k>`.

A worker page that asks the same questions of each image of a set (NLVR2's pruning: a
verdict per image) names item k's fields `<field>@<k>`; the readers of the platforms'
files (transforms/crowd/mturk.py, transforms/crowd/labelstudio.py) turn one submission
into one answer row per item with these two functions.
"""
from __future__ import annotations

import re
from typing import Dict, Mapping, Tuple

_ITEM = re.compile(r"^(?P<field>.+)@(?P<item>[0-9]{1,6})$")


def item_field(name: str) -> str:
    """`verdict@3` -> `verdict`; a name of no item as it is."""
    match = _ITEM.match(name)
    return match.group("field") if match else name


def split_items(fields: Mapping[str, object]) -> Tuple[Dict[str, object], Dict[int, Dict[str, object]]]:
    """(the fields of no item, {k: item k's fields by their plain names})."""
    plain, items = {}, {}
    for name, value in fields.items():
        match = _ITEM.match(name)
        if match:
            items.setdefault(int(match.group("item")), {})[match.group("field")] = value
        else:
            plain[name] = value
    return plain, items
