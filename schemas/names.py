"""Names that end up in paths of a release, made safe (every benchmark).

Ids come from input manifests and become folder and file names, so they are made one
safe path component first: no separator, no "..", no leading dot, ASCII only. A
benchmark builds its public grammar of set and file names over these.
"""
from __future__ import annotations

import hashlib
import re

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


