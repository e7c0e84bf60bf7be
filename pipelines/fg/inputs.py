"""F0-F2 (§3, §3.1.1): the targets (old test images with their 5 captions) and the
candidate pool, embedded.

    captions (driver-read) + target images -> Target per captioned image        stage inputs
    pool images whose id is a target's -> target_in_pool (the target is in the
      pool already: §3.1.1 "plus the old test images")                          stage pool_input
Images are read by transforms/image/collection.py (stage images) and embedded by
transforms/image/embed.py (stage embed); captions by EncodeCaptions (pipelines/fg/renovate.py).
"""
from __future__ import annotations

from typing import Sequence

from pipelines.fg import reasons
from pipelines.fg.records import Target
from transforms.core.stage import StageFn


class JoinTargets(StageFn):
    """(image id, {"captions": [[texts]], "image": [ImageEmbedding]}) -> Target, or a
    reject: no_image, no_captions, wrong_caption_count. Level "target"."""
    stage, level = "inputs", "target"

    def __init__(self, captions_per_image: int):
        self._n = captions_per_image

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
        texts = list(captions[0])
        if len(texts) != self._n:
            yield self.reject(reasons.WRONG_CAPTION_COUNT, image_id,
                              detail=f"{len(texts)} captions, release.captions_per_image is {self._n}")
            return
        image = images[0]
        yield Target(image_id, image.path, texts, image.embedding)


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
