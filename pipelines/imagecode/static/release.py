"""Static sets into the release: within-set distances and the public image layout.

Each set's 10 images are copied to `compat/image-sets/<set>/img<i>.jpg`, i = 0..9 in the
set's stored order (query first, then neighbours nearest first); RGB and greyscale JPEGs
are copied byte for byte, everything else (PNG, CMYK JPEG, ...) is decoded by
transforms/image/decode.py, the encoder's decoder (16-bit scaled, transparency
composited on its BACKGROUND), and re-encoded as JPEG. The mean pairwise distance over all 10 images (what
the video sets report too, and what §4.3 compares) needs every member's embedding, so
members are joined with the embeddings by image id: a shuffle of ids and vectors, never
the whole collection on one worker.
"""
from __future__ import annotations

import hashlib
import io

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from PIL import Image

from pipelines.imagecode.names import compat_image_path
from pipelines.imagecode.records import StaticSet
from transforms.core.precision import rounded, rounded_mean
from transforms.image.decode import decode_rgb, read_header
from transforms.image.formats import DEFAULT_MAX_PIXELS
from transforms.vectors.distances import pairwise_distances

# JPEGs whose bytes already are what the public layout holds (MPO: a camera JPEG with a
# second picture appended; readers show the first).
COPIED_FORMATS = ("JPEG", "MPO")
COPIED_MODES = ("RGB", "L")


class PublishStaticSets(beam.PTransform):
    """(StaticSet, ImageEmbedding) -> rows of pipelines.imagecode.tables.STATIC_SET_SCHEMA, images copied."""

    def __init__(self, staging_dir: str, source: str, jpeg_quality: int = 95,
                 max_pixels: int = DEFAULT_MAX_PIXELS):
        super().__init__()
        self._staging_dir = staging_dir
        self._source = source
        self._jpeg_quality = jpeg_quality
        self._max_pixels = max_pixels

    def expand(self, inputs):
        sets, embeddings = inputs
        members = sets | "Members" >> beam.FlatMap(
            lambda s: [(image_id, s.set_name) for image_id in s.image_ids])
        vectors = (
            {"sets": members, "vectors": embeddings | "By id" >> beam.Map(
                lambda e: (e.image_id, e.embedding))}
            | "Join embeddings" >> beam.CoGroupByKey()
            | "Vector per set" >> beam.FlatMap(
                lambda kv: [(name, (kv[0], kv[1]["vectors"][0])) for name in kv[1]["sets"]]))
        return (
            {"set": sets | "By name" >> beam.Map(lambda s: (s.set_name, s)), "vectors": vectors}
            | "Join per set" >> beam.CoGroupByKey()
            | "Publish" >> beam.ParDo(_Publish(self._staging_dir, self._source, self._jpeg_quality,
                                               self._max_pixels)))


class _Publish(beam.DoFn):
    def __init__(self, staging_dir: str, source: str, jpeg_quality: int, max_pixels: int):
        self._staging_dir = staging_dir
        self._source = source
        self._jpeg_quality = jpeg_quality
        self._max_pixels = max_pixels

    def process(self, kv):
        _, grouped = kv
        static_set: StaticSet = grouped["set"][0]
        by_id = dict(grouped["vectors"])
        vectors = np.stack([by_id[i] for i in static_set.image_ids])
        compat = [compat_image_path(static_set.set_name, i) for i in range(len(static_set.image_ids))]
        hashes = [self._copy_as_jpeg(source_path, FileSystems.join(self._staging_dir, relative))
                  for source_path, relative in zip(static_set.image_paths, compat)]
        yield {
            "set_name": static_set.set_name, "source": self._source, "split": static_set.split,
            "query_id": static_set.query_id, "image_ids": list(static_set.image_ids),
            "image_paths": compat, "source_paths": list(static_set.image_paths),
            # ranked by the exact distances (transforms/vectors/knn.py), published rounded
            "distances": [rounded(d) for d in static_set.distances],
            "distance_mean": rounded_mean(pairwise_distances(vectors)),
            # not a column: what each image is, for the crowd tasks' fingerprints
            "image_sha256s": hashes,
        }

    def _copy_as_jpeg(self, source: str, target: str) -> str:
        """Copies (or re-encodes) the image; returns the sha256 of the source's bytes."""
        # Every member's header passed HashAndDedupe and its bytes decoded for the encoder
        # (in this build, or in the one that cached its embedding): a problem here means
        # the file changed since, and ImageProblem stops the build naming it.
        with FileSystems.open(source, compression_type="uncompressed") as f:
            data = f.read()
        sha256 = hashlib.sha256(data).hexdigest()
        header = read_header(data, source, self._max_pixels)
        if header.format not in COPIED_FORMATS or header.mode not in COPIED_MODES:
            buffer = io.BytesIO()
            Image.fromarray(decode_rgb(data, source, self._max_pixels)).save(
                buffer, format="JPEG", quality=self._jpeg_quality)
            data = buffer.getvalue()
        with FileSystems.create(target) as f:
            f.write(data)
        return sha256
