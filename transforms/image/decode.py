"""Still images from bytes to 8-bit RGB: the one decoder every still-image stage uses.

The hashing stage checks the pixel limit from the header (transforms/image/collection.py), the
encoder decodes (transforms/image/embed.py) and the compat JPEGs are re-encoded from the same
pixels (the compat copies a benchmark publishes), so the model and the people looking at a release
see an image the same way.

    header = read_header(stream_or_bytes, path, max_pixels)    # no pixel decoded
    pixels = decode_rgb(data, path, max_pixels)                 # (H, W, 3) uint8

Conversion to 8-bit RGB (Pillow's own convert("RGB") gets the first two wrong):
  16-bit greyscale (modes I;16, I;16B, ..., and I, which holds 16-bit PNG/TIFF in some
      Pillow versions)  scaled from 0..65535 to 0..255 with rounding; convert() clips
      instead, so everything above 255 of 65535 became white;
  floating-point greyscale (F)  read as 0.0 = black, 1.0 = white (clipped; NaN = black);
  transparency (an alpha band: RGBA, LA, PA, ...; or a transparent palette entry or
      colour key)  composited on BACKGROUND, so colours stored under alpha 0 never show;
  every other mode (1, L, P, CMYK, YCbCr, ...)  Pillow's convert("RGB").

Pixel limit: Pillow's Image.open reads the header only; width x height is checked
against `max_pixels` before one pixel is decoded (a 12000 x 12000 PNG of a few
kilobytes decodes to 432 MB of RGB). Pillow itself refuses to open images above
pillow_pixel_ceiling(); such an image is over any limit we accept, so it is the same
reject.

Errors are ImageProblem(reason, detail), the detail being the path and what is wrong:
it depends on the bytes only, never on the run (Pillow's "cannot identify image file
<_io.BytesIO object at 0x7f...>" names a memory address).
"""
from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from typing import BinaryIO, Union

import numpy as np
from PIL import Image, UnidentifiedImageError

from schemas import reasons
from transforms.image.formats import DEFAULT_MAX_PIXELS

BACKGROUND = (255, 255, 255)      # what transparent pixels are composited on: white (ours)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class ImageProblem(Exception):
    """An image that cannot be used: `reason` is a schemas.reasons code (unreadable_image,
    too_many_pixels), `detail` names the file and what is wrong."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class ImageHeader:
    format: str       # Pillow's format name: "JPEG", "PNG", "MPO", ...
    mode: str         # Pillow's pixel mode: "RGB", "L", "I;16", "RGBA", "P", "CMYK", ...
    width: int
    height: int


def describe_error(error: BaseException) -> str:
    """An exception as "ClassName: message", any memory address removed, so the same bad
    file gives the same reject detail on every run."""
    message = _ADDRESS.sub("", str(error)).strip()
    return f"{type(error).__name__}: {message[:200]}" if message else type(error).__name__


def _open(source: Union[bytes, BinaryIO], name: str) -> Image.Image:
    if isinstance(source, (bytes, bytearray)):
        if not source:
            raise ImageProblem(reasons.UNREADABLE_IMAGE, f"{name}: empty file (0 bytes)")
        source = io.BytesIO(source)
    try:
        return Image.open(source)
    except Image.DecompressionBombError as e:
        raise ImageProblem(reasons.TOO_MANY_PIXELS, f"{name}: {e}") from None
    except UnidentifiedImageError:
        raise ImageProblem(reasons.UNREADABLE_IMAGE,
                           f"{name}: not an image in a format Pillow reads") from None
    except Exception as e:  # noqa: BLE001 - a header Pillow recognises but cannot parse
        raise ImageProblem(reasons.UNREADABLE_IMAGE, f"{name}: {describe_error(e)}") from None


def _header(image: Image.Image, name: str, max_pixels: int) -> ImageHeader:
    header = ImageHeader(image.format or "", image.mode, *image.size)
    pixels = header.width * header.height
    if pixels > max_pixels:
        raise ImageProblem(reasons.TOO_MANY_PIXELS,
                           f"{name}: {header.width}x{header.height} = {pixels:,} pixels, "
                           f"over the limit of {max_pixels:,}")
    return header


def read_header(source: Union[bytes, BinaryIO], name: str, max_pixels: int) -> ImageHeader:
    """Format, mode and size of an image from its header (nothing decoded). Raises
    ImageProblem: unreadable_image (not an image, a broken header) or too_many_pixels."""
    with _open(source, name) as image:
        return _header(image, name, max_pixels)


def decode_rgb(data: bytes, name: str, max_pixels: int) -> np.ndarray:
    """(H, W, 3) uint8 RGB pixels of an image file's bytes (first frame of an animation).
    Raises ImageProblem; `name` (the path) only goes into its detail."""
    with _open(data, name) as image:
        _header(image, name, max_pixels)
        try:
            image.load()   # decode now: a truncated file fails here, not later
            rgb = to_rgb(image)
        except Exception as e:  # noqa: BLE001 - truncated, broken stream, unsupported mode ...
            raise ImageProblem(reasons.UNREADABLE_IMAGE, f"{name}: {describe_error(e)}") from None
        return np.ascontiguousarray(np.asarray(rgb, dtype=np.uint8))


def to_rgb(image: Image.Image) -> Image.Image:
    """A decoded Pillow image as 8-bit RGB, by the rules in the module docstring."""
    mode = image.mode
    if mode == "I" or mode.startswith("I;16"):
        # (v * 255 + 32767) // 65535 is round(v / 257): 0 -> 0, 65535 -> 255, exact.
        values = np.clip(np.asarray(image).astype(np.int64), 0, 65535)
        return _grey((values * 255 + 32767) // 65535)
    if mode == "F":
        values = np.nan_to_num(np.asarray(image, dtype=np.float64), nan=0.0)
        return _grey(np.round(np.clip(values, 0.0, 1.0) * 255.0))
    if "A" in image.getbands() or "a" in image.getbands() or "transparency" in image.info:
        background = Image.new("RGBA", image.size, BACKGROUND + (255,))
        return Image.alpha_composite(background, image.convert("RGBA")).convert("RGB")
    return image if mode == "RGB" else image.convert("RGB")


def _grey(values: np.ndarray) -> Image.Image:
    return Image.fromarray(values.astype(np.uint8)).convert("RGB")


class Unreadable:
    """What the image handler returns for a file it cannot use: a reject reason
    (unreadable_image, too_many_pixels) and a detail naming the file."""

    def __init__(self, reason: str, detail: str):
        self.reason = reason
        self.detail = detail


def read_image(path: str, expected_sha256: str = "", max_pixels: int = DEFAULT_MAX_PIXELS):
    """(RGB uint8 HxWx3 array, sha256 of the bytes) of an image file on any Beam filesystem,
    decoded by transforms.image.decode (16-bit scaled, transparency composited, pixel
    limit checked from the header). Raises ImageProblem.

    The bytes are hashed as read, so the embedding always belongs to the content hashed;
    with `expected_sha256`, bytes that changed since hashing are refused before decoding
    (their header was never checked against the pixel limit)."""
    from transforms.io.files import open_regular_file
    try:
        with open_regular_file(path) as f:   # a FIFO or /dev/zero is refused, never read
            data = f.read()
    except Exception as e:  # noqa: BLE001 - missing, permission, I/O error
        raise ImageProblem(reasons.UNREADABLE_IMAGE, f"{path}: {describe_error(e)}") from None
    sha = hashlib.sha256(data).hexdigest()
    if expected_sha256 and expected_sha256 != sha:
        raise ImageProblem(reasons.UNREADABLE_IMAGE, f"{path}: content changed since it was hashed")
    return decode_rgb(data, path, max_pixels), sha
