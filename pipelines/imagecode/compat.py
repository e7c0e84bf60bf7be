"""The public ImageCoDe annotation files' layout, beside compat/image-sets/: pure
format functions, no Beam, no file (release.py's WritePublicAnnotations writes them).

    compat/train_data.json           {set name: {"<target index>": description}}
    compat/valid_data.json           same shape
    compat/test_data_unlabeled.json  {set name: [descriptions]}   (no targets)

The public layout holds one description per (set, target); when several were kept for
the same target, the one with the smallest description id goes to the JSON file and all
of them stay in parquet/descriptions/. The images' public paths
(`image-sets/<set>/img<n>.jpg`) are names.py's `compat_image_path`.
"""
from __future__ import annotations

import json
from typing import Iterable, Tuple

PUBLIC_FILES = {"train": "train_data.json", "valid": "valid_data.json",
                "test": "test_data_unlabeled.json"}


def labelled_layout(rows: Iterable[Tuple[str, str, int, str]]) -> dict:
    """(description id, set, target, text) rows -> {set: {"<target>": text}}."""
    layout: dict = {}
    for _, set_name, target, text in sorted(rows):  # smallest id first: it wins
        layout.setdefault(set_name, {}).setdefault(str(target), text)
    return {name: dict(sorted(targets.items(), key=lambda kv: int(kv[0])))
            for name, targets in sorted(layout.items())}


def unlabelled_layout(rows: Iterable[Tuple[str, str, int, str]]) -> dict:
    """(description id, set, target, text) rows -> {set: [texts]} in description-id order."""
    layout: dict = {}
    for _, set_name, _, text in sorted(rows):
        layout.setdefault(set_name, []).append(text)
    return dict(sorted(layout.items()))


def public_file(split: str, rows: Iterable[Tuple[str, str, int, str]]) -> bytes:
    """The bytes of `split`'s public file (PUBLIC_FILES[split]) from its (description id,
    set, target, text) rows: the test split unlabelled, the others labelled."""
    rows = list(rows)
    layout = unlabelled_layout(rows) if split == "test" else labelled_layout(rows)
    return json.dumps(layout, ensure_ascii=False, indent=1).encode("utf-8")
