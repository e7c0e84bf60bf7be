"""A video's frames as the JPEG files a release publishes, kept so that a rebuild
publishes them again without decoding the video.

A published frame is a JPEG of the decoded pixels: a pure function of the video's bytes,
the decode size, the JPEG quality and the JPEG encoder (Pillow and its libjpeg). So the
bytes made once are the bytes any later build would make, and a cache entry keyed by all
of these (`identity` gives the encoder's part) can stand in for a decode. Scoring needs
the decoded pixels themselves (a JPEG is lossy: BRISQUE of its pixels is another
number), so only publishing is served this way; a score comes from the score cache or
from a decode.

A cache value is a bundle of one video's frames, {frame number: JPEG bytes}:

    b"frame-images/v1\\n" + JSON header line {"frames": [[number, length], ...]} + b"\\n"
    + the JPEGs one after the other, in the header's order

Each build adds a bundle of the frames it made (decoded and scored or published) under
the video's key; a lookup hands on every bundle under it (transforms/cache/store.py
`every_entry`), read only when a frame is asked for (`CachedFrameImages`).
"""
from __future__ import annotations

import io
import json
from typing import Callable, Dict, Iterable, Optional

import numpy as np

MAGIC = b"frame-images/v1\n"
_SOI, _EOI = b"\xff\xd8", b"\xff\xd9"   # a JPEG's first and last two bytes


def jpeg_bytes(frame: np.ndarray, quality: int) -> bytes:
    """The JPEG a release publishes for an RGB uint8 frame."""
    from PIL import Image
    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def identity() -> dict:
    """What else decides `jpeg_bytes`' output: Pillow's version and its libjpeg's."""
    import PIL
    from PIL import features
    return {"pillow": PIL.__version__, "libjpeg": features.version("jpg") or "unknown"}


def encode_bundle(images: Dict[int, bytes]) -> bytes:
    numbers = sorted(images)
    header = json.dumps({"frames": [[n, len(images[n])] for n in numbers]},
                        separators=(",", ":")).encode("ascii")
    return b"".join([MAGIC, header, b"\n", *(images[n] for n in numbers)])


def decode_bundle(value: bytes) -> Dict[int, bytes]:
    """{frame number: JPEG bytes}; ValueError for anything that is not a whole bundle of
    JPEGs (the cache's row checksum guards the bytes; this guards the format)."""
    if not value.startswith(MAGIC):
        raise ValueError("not a frame-image bundle")
    end = value.index(b"\n", len(MAGIC))
    frames = json.loads(value[len(MAGIC):end])["frames"]
    out, at = {}, end + 1
    for number, length in frames:
        image = value[at:at + length]
        if len(image) != length or not (image.startswith(_SOI) and image.endswith(_EOI)):
            raise ValueError(f"frame {number} of the bundle is not a whole JPEG")
        out[int(number)] = image
        at += length
    if at != len(value):
        raise ValueError("bytes after the bundle's last frame")
    return out


class CachedFrameImages:
    """One video's frame images: those in its cached bundles (read on the first ask, from
    `read(entry)` for each entry) and those made in this build (`made`, for the cache)."""

    def __init__(self, entries: Iterable, read: Callable[[object], bytes], quality: int):
        self._entries, self._read, self._quality = tuple(entries), read, quality
        self._cached: Optional[Dict[int, bytes]] = None
        self.made: Dict[int, bytes] = {}
        self.served = 0   # images handed out from the cache

    def jpeg(self, number: int, pixels: Callable[[], np.ndarray]) -> bytes:
        """Frame `number`'s JPEG: from the cache when a bundle has it, else made from
        `pixels()` (decoded then) and kept in `made`."""
        cached = self._from_cache(number)
        if cached is not None:
            self.served += 1
            return cached
        if number not in self.made:
            self.made[number] = jpeg_bytes(pixels(), self._quality)
        return self.made[number]

    def keep(self, number: int, pixels: Callable[[], np.ndarray]) -> None:
        """Make and keep frame `number`'s JPEG unless cached or made (a frame scored now,
        so that a later build can publish it without a decode)."""
        if number not in self.made and self._from_cache(number) is None:
            self.made[number] = jpeg_bytes(pixels(), self._quality)

    def _from_cache(self, number: int) -> Optional[bytes]:
        if self._cached is None:
            self._cached = {}
            for entry in self._entries:   # sorted by the lookup: the same pick everywhere
                for n, image in decode_bundle(self._read(entry)).items():
                    self._cached.setdefault(n, image)
        return self._cached.get(number)
