"""The public layout of the FG release (F16), byte for byte as cwj1412/MSCOCO-Flikcr30K_FG
publishes it:

- `Annotations/{MSCOCO,Flickr30K}_FG_ann.json`: image id -> its 5 captions, written by
  `json.dumps` with its defaults (separators `", "` and `": "`, non-ASCII as `\\uXXXX`),
  one line, no trailing newline.
- `Images/{MSCOCO,Flickr30K}_FG_img_filenames.npy`: a 1-D numpy unicode array, the original test images'
  file names first, then the pool's unlabeled2017 names.

Key order: both public files list the images in the order of the Karpathy test split
(the order of `dataset_{coco,flickr30k}.json`, which `captions.read_captions` keeps).
For Flickr30K that order happens to be lexicographic by the id string; for MSCOCO it is
neither lexicographic nor numeric. So the rule is "the source's order", not a sort:
`annotation_bytes` writes the mapping in its own order, and `sort_keys=True` is there
for a source whose order is unknown.

Here: the files' names within a release (annotation_path, filenames_path), the captions
an annotation file holds (annotations), and the files' bytes written and read back; the
release writes them with release.write_compat.
"""
from __future__ import annotations

import json
from typing import Dict, List

import numpy as np

from pipelines.fg.captions import normalise_caption
from transforms.core.errors import InputError

COMPAT_PREFIX = {"mscoco": "MSCOCO", "flickr30k": "Flickr30K"}


def annotation_path(configuration: str) -> str:
    return f"compat/Annotations/{COMPAT_PREFIX[configuration]}_FG_ann.json"


def filenames_path(configuration: str) -> str:
    """The public repository's name (Images/MSCOCO_FG_img_filenames.npy,
    Images/Flickr30K_FG_img_filenames.npy)."""
    return f"compat/Images/{COMPAT_PREFIX[configuration]}_FG_img_filenames.npy"


def annotation_bytes(captions: Dict[str, List[str]], sort_keys: bool = False) -> bytes:
    """The annotation file's exact bytes: `json.dumps` defaults, ASCII, one line."""
    return json.dumps(captions, sort_keys=sort_keys).encode("ascii")


def write_annotations(path: str, captions: Dict[str, List[str]], sort_keys: bool = False) -> None:
    with open(path, "wb") as f:
        f.write(annotation_bytes(captions, sort_keys=sort_keys))


def write_image_filenames(path: str, names: List[str]) -> None:
    """`names` (original test images first, then the pool's) as a 1-D unicode array
    (`<U<longest name>`), written without pickling so any numpy reads it back."""
    array = np.array(list(names), dtype=str)
    if array.ndim != 1:
        raise ValueError("image file names must be a flat list of strings")
    with open(path, "wb") as f:
        np.save(f, array, allow_pickle=False)


def read_image_filenames(path: str) -> List[str]:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not a numpy .npy array of image file names ({e})") from None
    if array.ndim != 1 or array.dtype.kind != "U":
        raise InputError(f"{path}: expected a 1-D unicode array, found {array.ndim}-D {array.dtype}")
    return [str(name) for name in array]


def annotations(rows: List[dict], order: List[str], keep: str, html_escape: bool) -> Dict[str, List[str]]:
    """{image id: the 5 released captions in position order, normalised as the public
    release is}, images in the captions input's order (the public files keep the source's
    order: the module docstring)."""
    by_image: Dict[str, Dict[int, str]] = {}
    for row in rows:
        by_image.setdefault(row["image_id"], {})[row["caption_index"]] = row["renovated"]
    return {image: [normalise_caption(text, keep=keep, html_escape=html_escape)
                    for _, text in sorted(by_image[image].items())]
            for image in order if image in by_image}
