"""Image embeddings through the shared cache (transforms/cache/store.py).

An image whose (content sha256, encoder fingerprint) is cached is not decoded nor
embedded again: a rebuild on the same collection with a new threshold or sample size
costs no model call for them. Misses go through EmbedImages and are written back.
"""
from __future__ import annotations

import apache_beam as beam

from schemas.records import ImageEmbedding
from transforms.cache.store import (HITS, MISSES, LookupCache, WriteCache, cache_key, decode_array,
                                    encode_array)
from transforms.core.stage import MAIN, REJECTS
from transforms.image.decode import DEFAULT_MAX_PIXELS
from transforms.image.embed import EmbedImages

CACHE_STAGE = "image_embedding"
WRITTEN = "written"  # output tag: the cache shard files this run wrote


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

        def key(content_sha256: str) -> str:
            return cache_key(CACHE_STAGE, content_sha256, fingerprint, {})

        looked_up = (images
                     | "Cache key" >> beam.Map(lambda ref: (key(ref.content_sha256), ref))
                     | "Look up" >> LookupCache(self._root, CACHE_STAGE))
        cached = looked_up[HITS] | "From cache" >> beam.MapTuple(
            lambda _, ref, value: ImageEmbedding(ref.image_id, ref.path, ref.content_sha256,
                                                 decode_array(value)))
        computed = (looked_up[MISSES] | "Misses" >> beam.MapTuple(lambda _, ref: ref)
                    | "Embed misses" >> EmbedImages(self._spec, self._max_pixels))
        written = (computed[MAIN]
                   | "Cache entry" >> beam.Map(
                       lambda e: (key(e.content_sha256), encode_array(e.embedding)))
                   | "Write back" >> WriteCache(self._root, CACHE_STAGE, self._run_id))
        embeddings = (cached, computed[MAIN]) | "All embeddings" >> beam.Flatten()
        return {MAIN: embeddings, REJECTS: computed[REJECTS], WRITTEN: written}
