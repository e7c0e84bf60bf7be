"""Names that end up in paths of the release: made safe, and built in the public grammar.

ImageCoDe names a video set `<source>-video<video_id>-shot<k>_<j>` (k: shot, j: set in
that shot), e.g. "MSR-VTT-videoTrainValVideo_video2044-shot1_0", and stores its frames
as `image-sets/<set name>/img<frame number>.jpg`. Source and video id come from input
manifests, so they are made safe before they become a path component.
"""
from __future__ import annotations

import hashlib
import operator
import re
from typing import NamedTuple

# A single path component on every filesystem we write to (local, gs://) stays well
# below the usual 255-byte limit, with room for the grammar around it.
MAX_NAME_LENGTH = 200

_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]")  # ASCII only: no lookalikes, no NUL/control
_DOT_RUNS = re.compile(r"\.{2,}")
_HASH_DIGITS = 12  # 48 bits: a clash among a million ids that read alike is ~0.2% likely


def safe_name(s: str) -> str:
    """Return `s` as one safe path component: no separators, no '..', no leading dot.

    A name that is safe already (ASCII letters, digits, '-', '_', '.'; no run of dots,
    no leading dot) comes back unchanged, so the set names and cache keys of real ids
    ("TrainValVideo_video2044", "christmas_56Nm66j-i5Q") never change. In any other name
    each unsafe character (separators, NUL, control, any non-ASCII letter), each dot of a
    run of dots and a leading dot become '_', and `-<12 hex digits of sha256(s)>` is
    appended: "视频一" and "视频二" both read "___" but end differently, so names
    made safe stay distinct ("a/b" -> "a_b-…" never clashes with the id "a_b").

    Non-ASCII letters are not kept: a release is also a zip, a gs:// prefix and a macOS
    checkout, where Unicode names meet normalisation (NFC/NFD) and lookalikes; the hash
    keeps them apart and the original id stays in the tables (`video_id`).

    Raises ValueError for an empty or overlong name. Two different names can only meet
    by a 48-bit hash collision or by a safe id that spells another id's hashed form
    exactly; callers that need unique names still check for clashes (the video manifest
    rejects one as `duplicate_video`).
    """
    if not isinstance(s, str):
        raise ValueError(f"name must be a string, got {type(s).__name__}")
    if not s:
        raise ValueError("name is empty")
    out = _UNSAFE_CHARS.sub("_", s)
    out = _DOT_RUNS.sub(lambda m: "_" * len(m.group()), out)
    if out.startswith("."):
        out = "_" + out[1:]
    if out != s:
        out = f"{out}-{hashlib.sha256(s.encode('utf-8', 'surrogatepass')).hexdigest()[:_HASH_DIGITS]}"
    if len(out) > MAX_NAME_LENGTH:
        raise ValueError(f"name longer than {MAX_NAME_LENGTH} characters: {s[:40]!r}...")
    return out


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
