"""Image embeddings through the shared cache (transforms/cache/read_through.py).

An image whose (content sha256, encoder fingerprint) is cached is not decoded nor
embedded again: a rebuild on the same collection with a new threshold or sample size
costs no model call for them. Misses go through EmbedImages and are written back.

An entry holds the embedding and the digest of the pixels it was computed from
(ImageEmbedding.pixels_sha256), so a cached image is judged for duplicates by its pixels
without being decoded: the 64 hex characters of the digest, then the embedding as .npy.
Entries written before the digest was kept have another key (ENTRY_FORMAT) and are
never read: those images are embedded once more.
"""
from __future__ import annotations

import apache_beam as beam

from schemas.records import ImageEmbedding
from transforms.cache.read_through import ReadThrough
from transforms.cache.store import cache_key, decode_array, encode_array
from transforms.image.embed import STAGE as EMBED_STAGE, EmbedImages
from transforms.image.formats import DEFAULT_MAX_PIXELS

CACHE_STAGE = "image_embedding"
ENTRY_FORMAT = {"entry": "pixels_sha256+npy"}   # in the key: entries of another format never hit
_DIGEST_CHARS = 64


def encode_entry(embedding: ImageEmbedding) -> bytes:
    if not embedding.pixels_sha256 or len(embedding.pixels_sha256) != _DIGEST_CHARS:
        raise ValueError(f"{embedding.path}: an embedding to cache needs its pixels' digest")
    return embedding.pixels_sha256.encode("ascii") + encode_array(embedding.embedding)


def decode_entry(ref, value: bytes) -> ImageEmbedding:
    """The cached ImageEmbedding of `ref` (an ImageRef with content_sha256)."""
    return ImageEmbedding(ref.image_id, ref.path, ref.content_sha256,
                          decode_array(value[_DIGEST_CHARS:]),
                          pixels_sha256=value[:_DIGEST_CHARS].decode("ascii"))


class EmbedImagesCached(beam.PTransform):
    """ImageRef (with content_sha256) -> {MAIN: ImageEmbedding, REJECTS, WRITTEN: paths}.

    `fingerprint` is the encoder identity's fingerprint (weights checksum included), so
    other weights or preprocessing never hit. `max_pixels` bounds the misses' decoding
    (HashAndDedupe checked every image's header against it before the lookup)."""

    def __init__(self, spec, fingerprint: str, cache_root: str, run_id: str,
                 max_pixels: int = DEFAULT_MAX_PIXELS):
        super().__init__()
        self._spec, self._fingerprint = spec, fingerprint
        self._root, self._run_id = cache_root, run_id
        self._max_pixels = max_pixels

    def expand(self, images):
        fingerprint = self._fingerprint
        return images | "Read through" >> ReadThrough(
            self._root, CACHE_STAGE, self._run_id,
            # an ImageRef and its ImageEmbedding both carry the image's content sha256
            key=lambda image: cache_key(CACHE_STAGE, image.content_sha256, fingerprint, ENTRY_FORMAT),
            compute=EmbedImages(self._spec, self._max_pixels),
            encode=encode_entry, decode=decode_entry, counted_as=(EMBED_STAGE, "image"))
