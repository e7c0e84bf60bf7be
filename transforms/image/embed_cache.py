"""Image embeddings through the shared cache (transforms/cache/read_through.py).

An image whose (content sha256, encoder fingerprint) is cached is not decoded nor
embedded again: a rebuild on the same collection with a new threshold or sample size
costs no model call for them. Misses go through EmbedImages and are written back.
"""
from __future__ import annotations

import apache_beam as beam

from schemas.records import ImageEmbedding
from transforms.cache.read_through import ReadThrough
from transforms.cache.store import cache_key, decode_array, encode_array
from transforms.image.decode import DEFAULT_MAX_PIXELS
from transforms.image.embed import EmbedImages

CACHE_STAGE = "image_embedding"


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
            key=lambda image: cache_key(CACHE_STAGE, image.content_sha256, fingerprint, {}),
            compute=EmbedImages(self._spec, self._max_pixels),
            encode=lambda embedding: encode_array(embedding.embedding),
            decode=lambda ref, value: ImageEmbedding(ref.image_id, ref.path, ref.content_sha256,
                                                     decode_array(value)))
