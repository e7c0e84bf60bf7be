"""The 80 COCO 2017 object categories (id, name, supercategory), as every
instances_*.json file lists them. Shipped as data so that captions can be matched
against category names without any COCO file at hand. Also what a COCO image's file
name and link may look like: both end up in released files and in paths."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Dict
from urllib.parse import unquote, urlsplit

# COCO 2017: "000000419052.jpg"; COCO 2014/2015: "COCO_train2014_000000419052.jpg".
# Nothing else: no folder, no "..", no absolute path can pass for an image name.
FILE_NAME = re.compile(r"(?:COCO_(?:train|val|test)(?:2014|2015)_)?[0-9]{12}\.jpg")
LINK_SCHEMES = ("http", "https")


def is_file_name(name) -> bool:
    """A plain COCO image file name (see FILE_NAME)."""
    return isinstance(name, str) and FILE_NAME.fullmatch(name) is not None


def is_link(url) -> bool:
    """An http(s) URL with a host, like COCO's coco_url or a released image link (never
    javascript:, file:, data: or a bare path)."""
    if not isinstance(url, str) or any(c.isspace() or ord(c) < 32 for c in url):
        return False
    try:
        parts = urlsplit(url)
    except ValueError:       # e.g. an unbalanced "[" in the host
        return False
    return parts.scheme.lower() in LINK_SCHEMES and bool(parts.netloc)


def link_file_name(image_link: str) -> str:
    """The file a COCO image URL names: ".../train2017/000000419052.jpg" -> "000000419052.jpg"
    (percent-escapes decoded; query and fragment ignored)."""
    return posixpath.basename(unquote(urlsplit(image_link).path))

CATEGORIES = (
    (1, "person", "person"), (2, "bicycle", "vehicle"), (3, "car", "vehicle"),
    (4, "motorcycle", "vehicle"), (5, "airplane", "vehicle"), (6, "bus", "vehicle"),
    (7, "train", "vehicle"), (8, "truck", "vehicle"), (9, "boat", "vehicle"),
    (10, "traffic light", "outdoor"), (11, "fire hydrant", "outdoor"), (13, "stop sign", "outdoor"),
    (14, "parking meter", "outdoor"), (15, "bench", "outdoor"), (16, "bird", "animal"),
    (17, "cat", "animal"), (18, "dog", "animal"), (19, "horse", "animal"), (20, "sheep", "animal"),
    (21, "cow", "animal"), (22, "elephant", "animal"), (23, "bear", "animal"),
    (24, "zebra", "animal"), (25, "giraffe", "animal"), (27, "backpack", "accessory"),
    (28, "umbrella", "accessory"), (31, "handbag", "accessory"), (32, "tie", "accessory"),
    (33, "suitcase", "accessory"), (34, "frisbee", "sports"), (35, "skis", "sports"),
    (36, "snowboard", "sports"), (37, "sports ball", "sports"), (38, "kite", "sports"),
    (39, "baseball bat", "sports"), (40, "baseball glove", "sports"), (41, "skateboard", "sports"),
    (42, "surfboard", "sports"), (43, "tennis racket", "sports"), (44, "bottle", "kitchen"),
    (46, "wine glass", "kitchen"), (47, "cup", "kitchen"), (48, "fork", "kitchen"),
    (49, "knife", "kitchen"), (50, "spoon", "kitchen"), (51, "bowl", "kitchen"),
    (52, "banana", "food"), (53, "apple", "food"), (54, "sandwich", "food"), (55, "orange", "food"),
    (56, "broccoli", "food"), (57, "carrot", "food"), (58, "hot dog", "food"), (59, "pizza", "food"),
    (60, "donut", "food"), (61, "cake", "food"), (62, "chair", "furniture"),
    (63, "couch", "furniture"), (64, "potted plant", "furniture"), (65, "bed", "furniture"),
    (67, "dining table", "furniture"), (70, "toilet", "furniture"), (72, "tv", "electronic"),
    (73, "laptop", "electronic"), (74, "mouse", "electronic"), (75, "remote", "electronic"),
    (76, "keyboard", "electronic"), (77, "cell phone", "electronic"), (78, "microwave", "appliance"),
    (79, "oven", "appliance"), (80, "toaster", "appliance"), (81, "sink", "appliance"),
    (82, "refrigerator", "appliance"), (84, "book", "indoor"), (85, "clock", "indoor"),
    (86, "vase", "indoor"), (87, "scissors", "indoor"), (88, "teddy bear", "indoor"),
    (89, "hair drier", "indoor"), (90, "toothbrush", "indoor"),
)

NAME_BY_ID: Dict[int, str] = {cid: name for cid, name, _ in CATEGORIES}
ID_BY_NAME: Dict[str, int] = {name: cid for cid, name, _ in CATEGORIES}
SUPERCATEGORY: Dict[str, str] = {name: sup for _, name, sup in CATEGORIES}
assert len(CATEGORIES) == 80 and len(ID_BY_NAME) == 80


@dataclass(frozen=True)
class CocoImage:
    """An image of a COCO instances file; `source` is train2017 or val2017."""
    image_id: int
    file_name: str
    coco_url: str
    source: str
