"""Table 1 of the paper, per split: samples, unique images / intentions / actions /
target actions / decoy actions, and mean lengths.

Measured on the public files, Table 1's "average length" columns are CHARACTERS, not
tokens: the mean character count of the intention (sent1) per sample gives 22.15 /
20.76 / 20.49 for train / val / test, as printed, and the mean over the five candidate
actions gives 35.25 / 35.95 / 35.71 against 35.34 / 36.20 / 36.00
(tests/bd2bb/test_bd2bb_realdata.py). We report characters, as the paper does (no token
columns: COLUMNS lists exactly what the data card prints).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence

from pipelines.bd2bb.records import TARGET
from transforms.text.tokens import normalise_text

COLUMNS = ["split", "samples", "share", "images", "intentions", "actions", "target actions",
           "decoy actions", "mean intention chars", "mean action chars"]


def table1_row(intentions: Sequence[str], endings: Sequence[Sequence[str]],
               types: Sequence[Sequence[str]], images: Optional[Sequence[str]] = None) -> Dict[str, float]:
    n = len(intentions)
    actions, targets, decoys = set(), set(), set()
    chars = 0
    for ends, kinds in zip(endings, types):
        for text, kind in zip(ends, kinds):
            key = normalise_text(text)
            actions.add(key)
            (targets if kind == TARGET else decoys).add(key)
            chars += len(text)
    n_endings = sum(len(e) for e in endings)
    return {"samples": n, "images": len(set(images)) if images is not None else None,
            "intentions": len({normalise_text(i) for i in intentions}), "actions": len(actions),
            "target actions": len(targets), "decoy actions": len(decoys),
            "mean intention chars": round(sum(len(i) for i in intentions) / n, 2) if n else 0.0,
            "mean action chars": round(chars / n_endings, 2) if n_endings else 0.0}


def table1(rows: Iterable[dict], splits: Sequence[str] = ("train", "val", "test")) -> List[dict]:
    """rows with split, intention, endings, ending_types (and image) -> one dict per
    split and a total, as the data card prints them."""
    rows = list(rows)
    out = []
    for name, part in [(s, [r for r in rows if r["split"] == s]) for s in splits] + [("total", rows)]:
        has_images = all("image" in r for r in part)
        stats = table1_row([r["intention"] for r in part], [r["endings"] for r in part],
                           [r["ending_types"] for r in part],
                           [r["image"] for r in part] if has_images else None)
        stats["split"] = name
        stats["share"] = round(100.0 * len(part) / len(rows), 1) if rows else 0.0
        out.append(stats)
    return out
