"""ImageCoDe's names in the release: set names in the public grammar, and image paths.

ImageCoDe names a video set `<source>-video<video_id>-shot<k>_<j>` (k: shot, j: set in
that shot), e.g. "MSR-VTT-videoTrainValVideo_video2044-shot1_0", and stores its frames
as `image-sets/<set name>/img<frame number>.jpg`. Source and video id come from input
manifests, so they are made safe (schemas.names.safe_name) before they become a path
component.
"""
from __future__ import annotations

import operator
import re
from typing import NamedTuple

from schemas.names import MAX_NAME_LENGTH, safe_name


def video_set_name(source: str, video_id: str, shot_index: int, set_index: int) -> str:
    """The public set name `<source>-video<video_id>-shot<k>_<j>` over safe names."""
    shot = _non_negative_int(shot_index, "shot_index")
    set_ = _non_negative_int(set_index, "set_index")
    name = f"{safe_name(source)}-video{safe_name(video_id)}-shot{shot}_{set_}"
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"set name longer than {MAX_NAME_LENGTH} characters: {name[:40]}...")
    return name


class VideoSetName(NamedTuple):
    source: str
    video_id: str
    shot_index: int
    set_index: int


# The source is the shortest prefix before "-video" (public sources "MSR-VTT",
# "video-storytelling", "YouCook"... contain no "-video"); the video id may contain
# anything safe, including "-" and "_video".
VIDEO_SET_NAME_RE = re.compile(
    r"^(?P<source>[A-Za-z0-9_.-]+?)-video(?P<video_id>[A-Za-z0-9_.-]+)"
    r"-shot(?P<shot_index>\d+)_(?P<set_index>\d+)$")


def parse_video_set_name(name: str) -> VideoSetName:
    """Split a public video set name into its parts; ValueError if it does not match."""
    m = VIDEO_SET_NAME_RE.match(name)
    if not m:
        raise ValueError(f"not a video set name: {name!r}")
    return VideoSetName(m["source"], m["video_id"], int(m["shot_index"]), int(m["set_index"]))


def image_file_name(frame_number: int) -> str:
    """File name of one frame inside a public image set: `img<frame number>.jpg`."""
    return f"img{_non_negative_int(frame_number, 'frame_number')}.jpg"


def _non_negative_int(n, label: str) -> int:
    """Accept Python and numpy integers (frame indices often come from numpy)."""
    try:
        if isinstance(n, bool):
            raise TypeError
        value = operator.index(n)
    except TypeError:
        raise ValueError(f"{label} must be a non-negative int, got {n!r}") from None
    if value < 0:
        raise ValueError(f"{label} must be a non-negative int, got {n!r}")
    return value


# Public layout of the images, relative to the release's version folder.
COMPAT_IMAGE_DIR = "compat/image-sets"


def compat_image_path(set_name: str, frame_number: int) -> str:
    """`compat/image-sets/<set name>/img<n>.jpg`, the value of FrameSet.image_paths."""
    if safe_name(set_name) != set_name:  # the set name becomes a folder: must be one component
        raise ValueError(f"set name is not a safe path component: {set_name!r}")
    return f"{COMPAT_IMAGE_DIR}/{set_name}/{image_file_name(frame_number)}"
