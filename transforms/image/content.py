"""One image per decoded content: the still-image collections' rule for duplicates.

Two files are one image when their decoded pixels are equal (ImageEmbedding.pixels_sha256,
the PixelDigest the encoder took of the pixels it saw): a byte copy, one file under two
ids, a JPEG saved again losslessly (as PNG). Of the images with one digest, the one with
the smallest (image id, path) stays, the same on every runner; the others are
`duplicate_image`, naming the image kept and whether the bytes were the same.

Exact: a re-encode (a JPEG saved again as JPEG: other pixels) is another image here.
Collections check byte copies first (collection.HashAndDedupe, before anything is
decoded or embedded); this catches what only the pixels show. An image without a digest
(a vector read from elsewhere, never decoded) is judged on its bytes' sha256, else its id.
"""
from __future__ import annotations

import apache_beam as beam

from schemas import reasons
from schemas.records import ImageEmbedding
from transforms.core.stage import KeepFirst

STAGE = "image_content"


def image_content(image: ImageEmbedding) -> str:
    """What an image is judged by, prefixed with which it is."""
    if image.pixels_sha256:
        return f"pixels:{image.pixels_sha256}"
    if image.content_sha256:
        return f"bytes:{image.content_sha256}"
    return f"id:{image.image_id}"


class OneImagePerContent(beam.PTransform):
    """ImageEmbedding -> {MAIN: one per decoded content, REJECTS: duplicate_image}.
    Counters (stage `stage`, level "image"): in, out, rejected."""

    def __init__(self, stage: str = STAGE):
        super().__init__()
        self._stage = stage

    def expand(self, images):
        return images | "Smallest id per content" >> KeepFirst(
            self._stage, "image", key=image_content, order=lambda image: (image.image_id, image.path),
            why=_same_pixels, counted_in=False)


def _same_pixels(image: ImageEmbedding, kept: ImageEmbedding) -> dict:
    kind, _, digest = image_content(kept).partition(":")
    if kind == "pixels":
        bytes_too = bool(image.content_sha256) and image.content_sha256 == kept.content_sha256
        same = (f"same decoded pixels (pixels sha256 {digest[:16]}; "
                f"{'the same bytes' if bytes_too else 'the bytes differ'})")
    else:
        same = f"same {kind} ({digest[:16]})"
    return dict(reason=reasons.DUPLICATE_IMAGE, item_id=image.image_id,
                detail=f"{image.path}: {same} as kept image {kept.image_id} ({kept.path})")
