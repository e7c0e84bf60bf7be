"""F0-F2 (§3, §3.1.1): the targets (old test images with their 5 captions) and the
candidate pool, embedded.

    captions (driver-read: captions.read_captions, 5 per image or an InputError)
      + target images -> Target per captioned image        stage inputs
    pool images whose id is a target's -> target_in_pool (the target is in the
      pool already: §3.1.1 "plus the old test images")                          stage pool_input
Images are read by transforms/image/collection.py (stage images) and embedded by
transforms/image/embed.py (stage embed); captions by EncodeCaptions (pipelines/fg/renovate.py).
"""
from __future__ import annotations

import os
from typing import Sequence

import apache_beam as beam

from pipelines.fg import reasons
from pipelines.fg.records import Target
from schemas.names import safe_name
from schemas.records import ImageEmbedding
from transforms.core.stage import StageFn, stage_pardo
from transforms.vectors.embedding_folders import ReadEmbeddingFolder


class JoinTargets(StageFn):
    """(image id, {"captions": [[texts]], "image": [ImageEmbedding]}) -> Target, or a
    reject: no_image, no_captions. Level "target". (An image with other than five
    captions never gets here: captions.read_captions refuses the file.)"""
    stage, level = "inputs", "target"

    def judge(self, keyed):
        image_id, groups = keyed
        captions, images = groups["captions"], groups["image"]
        if not images:
            yield self.reject(reasons.NO_IMAGE, image_id,
                              detail="captioned, but not among inputs.images (or it did not embed: rejects/ stage embed)")
            return
        if not captions:
            yield self.reject(reasons.NO_CAPTIONS, image_id, detail=f"{images[0].path}: not in inputs.captions")
            return
        image = images[0]
        yield Target(image_id, image.path, list(captions[0]), image.embedding)


class DropTargetsFromPool(StageFn):
    """ImageRef of the candidate pool -> itself, unless its id is a target's
    (target_in_pool: the target image itself joins the pool). Level "image"."""
    stage, level = "pool_input", "image"

    def __init__(self, target_ids: Sequence[str]):
        self._targets = frozenset(target_ids)

    def judge(self, ref):
        if ref.image_id in self._targets:
            yield self.reject(reasons.TARGET_IN_POOL, ref.image_id,
                              detail=f"{ref.path}: a target's id; the target image is in the pool already")
            return
        yield ref


def image_id_of(column: str):
    """A metadata value -> the image id ReadImageCollection gives the same image: for a
    path column the file's stem made safe, else the value made safe."""
    if column.endswith("path"):
        return lambda value: safe_name(os.path.splitext(os.path.basename(value))[0])
    return safe_name


class _AttachVector(StageFn):
    stage, level = "embed", "image"
    counts_in = False   # counted per image, not per id group (vectors of unused images are not items)

    def judge(self, keyed):
        image_id, groups = keyed
        vectors = sorted(groups["vector"], key=lambda v: v.tobytes())
        self.counts.seen(len(groups["ref"]), level=self.level)
        for ref in groups["ref"]:
            if not vectors:
                yield self.reject(reasons.NO_EMBEDDING, image_id,
                                  detail=f"{ref.path}: no vector in inputs.image_embeddings")
                continue
            yield ImageEmbedding(image_id, ref.path, "", vectors[0])


class AttachPrecomputed(beam.PTransform):
    """ImageRefs + the precomputed vectors (id, vector) -> {MAIN: ImageEmbedding,
    REJECTS: no_embedding}; counted as stage "embed", level "image", like EmbedImages."""

    def __init__(self, vectors):
        super().__init__()
        self._vectors = vectors

    def expand(self, refs):
        keyed = refs | "Key refs" >> beam.Map(lambda r: (r.image_id, r))
        return ({"ref": keyed, "vector": self._vectors} | "Join vectors" >> beam.CoGroupByKey()
                | "Attach" >> stage_pardo(_AttachVector()))


def read_image_vectors(p, folder: str, column: str):
    return p | "Read image embeddings" >> ReadEmbeddingFolder(folder, "img", column, image_id_of(column))


def read_text_vectors(p, folder: str, column: str):
    """(caption text, vector), one per distinct text (the smallest vector bytes, if a text
    appears twice)."""
    return (p | "Read text embeddings" >> ReadEmbeddingFolder(folder, "text", column)
            | "One per text" >> beam.CombinePerKey(lambda vs: min(vs, key=lambda v: v.tobytes())))
