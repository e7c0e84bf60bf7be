"""F0-F2 (§3, §3.1.1): the targets (old test images with their 5 captions) and the
candidate pool, embedded.

    captions (driver-read: captions.read_captions, 5 per image or an InputError)
      + target images -> Target per captioned image        stage inputs
    pool images whose id is a target's -> target_in_pool (the target is in the
      pool already: §3.1.1 "plus the old test images")                          stage pool_input
    pool images, embedded: one per decoded content (duplicate_image)            stage image_content
      -> those whose pixels are a target's -> same_as_target (the target under
         another id: it would be its own "similar" image, at cosine 1)          stage target_copies
Images are read by transforms/image/collection.py (stage images), embedded by
transforms/image/embed.py (stage embed; every image's decoded pixels digested there, or
here for precomputed vectors) and kept once per content by transforms/image/content.py;
captions by EncodeCaptions (pipelines/fg/renovate.py).
"""
from __future__ import annotations

import os
from typing import Sequence

import apache_beam as beam

from pipelines.fg import reasons
from pipelines.fg.records import Target
from schemas.names import safe_name
from schemas.records import ImageEmbedding
from transforms.core.hashing import pixels_sha256
from transforms.core.stage import StageFn, stage_pardo
from transforms.image.content import image_content
from transforms.image.decode import ImageProblem, read_image
from transforms.image.formats import DEFAULT_MAX_PIXELS
from transforms.vectors.embedding_folders import ReadEmbeddingFolder
from transforms.vectors.vector_files import WriteVectorFiles, read_vector_file, shard_of


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
        yield Target(image_id, image.path, list(captions[0]), image.embedding, image.pixels_sha256)


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


class DropTargetCopies(StageFn):
    """(content, {"pool": [ImageEmbedding], "target": [ImageEmbedding]}) -> the pool images
    of a content no target has; the others are same_as_target: a target's pixels under
    another id would be its own most similar image, and list its picture twice in the new
    pool (the target joins the pool itself). Level "image"."""
    stage, level = "target_copies", "image"
    counts_in = False   # one group holds several pool images (or none)

    def judge(self, grouped):
        _, groups = grouped
        pool = groups["pool"]
        self.counts.seen(len(pool), level=self.level)
        targets = sorted(groups["target"], key=lambda t: t.image_id)
        for image in pool:
            if targets:
                target = targets[0]
                yield self.reject(reasons.SAME_AS_TARGET, image.image_id,
                                  detail=f"{image.path}: same decoded pixels as target {target.image_id} "
                                         f"({target.path}); the target is in the pool already")
                continue
            yield image


class DropCopiesOfTargets(beam.PTransform):
    """Pool ImageEmbeddings + the targets' -> {MAIN: pool images that are no target's
    pixels, REJECTS: same_as_target} (stage target_copies), joined on content."""

    def __init__(self, targets):
        super().__init__()
        self._targets = targets

    def expand(self, pool):
        return ({"pool": pool | "Pool by content" >> beam.Map(lambda e: (image_content(e), e)),
                 "target": self._targets | "Targets by content" >> beam.Map(lambda e: (image_content(e), e))}
                | "Pool and targets per content" >> beam.CoGroupByKey()
                | "Drop copies of targets" >> stage_pardo(DropTargetCopies()))


def image_id_of(column: str):
    """A metadata value -> the image id ReadImageCollection gives the same image: for a
    path column the file's stem made safe, else the value made safe."""
    if column.endswith("path"):
        return lambda value: safe_name(os.path.splitext(os.path.basename(value))[0])
    return safe_name


class _AttachVector(StageFn):
    """An image and its precomputed vector. The image is still decoded, once, for the
    digest of its pixels (what duplicates are judged on), so a file that does not decode
    is a reject here as it is where images are embedded."""
    stage, level = "embed", "image"
    counts_in = False   # counted per image, not per shard group (vectors of unused images are not items)

    def judge(self, keyed):
        _, groups = keyed
        refs = sorted(groups["ref"], key=lambda r: (r.image_id, r.path))
        self.counts.seen(len(refs), level=self.level)
        vectors_of = _vectors_of({r.image_id for r in refs}, groups["file"])
        for ref in refs:
            vectors = sorted(vectors_of.get(ref.image_id, ()), key=lambda v: v.tobytes())
            if not vectors:
                yield self.reject(reasons.NO_EMBEDDING, ref.image_id,
                                  detail=f"{ref.path}: no vector in inputs.image_embeddings")
                continue
            try:
                pixels, sha = read_image(ref.path, max_pixels=DEFAULT_MAX_PIXELS)
            except ImageProblem as e:
                yield self.reject(e.reason, ref.image_id, detail=e.detail)
                continue
            yield ImageEmbedding(ref.image_id, ref.path, sha, vectors[0], pixels_sha256(pixels))


def _vectors_of(wanted, vector_files) -> dict:
    """{id: [vectors]} of the wanted ids in one shard's files, read one file at a time."""
    found: dict = {}
    for vector_file in sorted(vector_files, key=lambda f: f.path):
        ids, _, matrix = read_vector_file(vector_file.path)
        for n, item_id in enumerate(ids):
            if item_id in wanted:
                found.setdefault(item_id, []).append(matrix[n].copy())
    return found


class AttachPrecomputed(beam.PTransform):
    """ImageRefs + the precomputed vectors as vector files (`precomputed_files`, sharded
    by id into `num_shards`) -> {MAIN: ImageEmbedding with its pixels' digest, REJECTS:
    no_embedding, unreadable_image, too_many_pixels}; counted as stage "embed", level
    "image", like EmbedImages. The refs are grouped with their shard's file references
    and each shard's files are read where its refs are: no vector passes through a
    grouping step (the in-process runner holds a grouping step's whole input)."""

    def __init__(self, vector_files, num_shards: int):
        super().__init__()
        self._files, self._num_shards = vector_files, num_shards

    def expand(self, refs):
        shards = self._num_shards
        return ({"ref": refs | "Refs by shard" >> beam.Map(lambda r: (shard_of(r.image_id, shards), r)),
                 "file": self._files | "Files by shard" >> beam.Map(lambda f: (f.shard, f))}
                | "Refs with their shard's files" >> beam.CoGroupByKey()
                | "Attach" >> stage_pardo(_AttachVector()))


def precomputed_files(vectors, folder: str, num_shards: int):
    """(id, vector) -> the vector files AttachPrecomputed reads, written where they are read."""
    return vectors | "Precomputed vectors to files" >> WriteVectorFiles(
        folder, num_shards, row_of=lambda kv: (kv[0], "", kv[1]))


def read_image_vectors(p, folder: str, column: str, files_folder: str, num_shards: int):
    """A clip-retrieval embedding folder -> vector files sharded by image id."""
    vectors = p | "Read image embeddings" >> ReadEmbeddingFolder(folder, "img", column, image_id_of(column))
    return precomputed_files(vectors, files_folder, num_shards)


def read_text_vectors(p, folder: str, column: str):
    """(caption text, vector), one per distinct text (the smallest vector bytes, if a text
    appears twice)."""
    return (p | "Read text embeddings" >> ReadEmbeddingFolder(folder, "text", column)
            | "One per text" >> beam.CombinePerKey(lambda vs: min(vs, key=lambda v: v.tobytes())))
