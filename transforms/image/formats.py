"""Which image files this project reads and how large they may be: constants and limits
that a config is checked against before any work, kept apart from the decoder so that
checking a config imports neither numpy nor Beam (transforms/image/decode.py decodes)."""
from __future__ import annotations

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")   # what an image folder is scanned for
DEFAULT_MAX_PIXELS = 50_000_000   # ours: a 50-megapixel photo; see static.max_pixels


def pillow_pixel_ceiling() -> int:
    """The size above which Pillow's Image.open refuses an image (DecompressionBombError):
    a pixel limit above it could never be reached."""
    from PIL import Image   # Pillow's own setting, read when a config is checked
    limit = Image.MAX_IMAGE_PIXELS
    return 2 * limit if limit else 1 << 62
