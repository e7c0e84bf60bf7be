"""F3-F6 (§3.1.2-§3.1.3): similar sets S_t from image->image and text->image search,
and the new pool.

The search itself is the project's exact sharded kNN (transforms/vectors/knn.py) over
unit vectors, where Euclidean order is cosine order (cos = 1 - d^2 / 2). The paper does
not say how S'_t (image->image top-k') and S''_t (text->image top-k'' per caption) are
combined into "the top-10"; `similar.merge_rule` names the rule used:

  interleave   alternately the next image neighbour and the next text neighbour, so
               both kinds of similarity are represented (the default)
  image_first  image neighbours first, text neighbours fill what is left

Text neighbours of the five captions are merged by their best rank over the captions,
then their best cosine, then id. The target itself is never a "similar" image: not under
its own id (the search excludes it), not under another (a pool image with its pixels is
rejected before the search, pipelines/fg/inputs.py; another target with its pixels is
skipped here and counted as target.same_pixels_skipped).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Sequence, Tuple

import apache_beam as beam

from pipelines.fg import reasons
from pipelines.fg.records import Member, SimilarSet, Target
from transforms.core.stage import KeepFirst, StageFn
from transforms.image.content import image_content

Scored = Tuple[float, str]   # (cosine, image id)


def cosine_of_distance(distance: float) -> float:
    """Cosine of two unit vectors from their Euclidean distance."""
    return 1.0 - distance * distance / 2.0


def text_ranking(per_caption: Iterable[Sequence[Scored]]) -> List[Scored]:
    """S''_t as one list: every image any caption retrieved, by (best rank over the
    captions, best cosine, id)."""
    best: Dict[str, Tuple[int, float]] = {}
    for neighbours in per_caption:
        for rank, (cos, image_id) in enumerate(neighbours):
            old = best.get(image_id)
            if old is None or (rank, -cos) < (old[0], -old[1]):
                best[image_id] = (rank, cos)
    ordered = sorted(best.items(), key=lambda kv: (kv[1][0], -kv[1][1], kv[0]))
    return [(cos, image_id) for image_id, (_, cos) in ordered]


def merge_similar(target: str, by_image: Sequence[Scored], by_text: Sequence[Scored],
                  size: int, rule: str) -> List[Tuple[str, str]]:
    """S_t as [(image id, source)]: the target first, then up to size - 1 others."""
    chosen, seen = [(target, "target")], {target}
    if rule == "image_first":
        order = [(i, "image") for _, i in by_image] + [(i, "text") for _, i in by_text]
    elif rule == "interleave":
        order = []
        for n in range(max(len(by_image), len(by_text))):
            order += [(lst[n][1], kind) for lst, kind in ((by_image, "image"), (by_text, "text"))
                      if n < len(lst)]
    else:
        raise ValueError(f"unknown merge rule {rule!r}")
    for image_id, source in order:
        if len(chosen) == size:
            break
        if image_id not in seen:
            seen.add(image_id)
            chosen.append((image_id, source))
    return chosen


def targets_sharing_pixels(target_vectors):
    """Target ImageEmbeddings -> (target id, content) of every target whose decoded pixels
    another target has too (one test image under two ids; usually none): the side input
    BuildSimilarSets skips them by."""
    return (target_vectors
            | "Targets by content" >> beam.Map(lambda e: (image_content(e), e.image_id))
            | "Targets per content" >> beam.GroupByKey()
            | "Shared contents" >> beam.FlatMap(
                lambda kv: [(image_id, kv[0]) for image_id in kv[1]] if len(kv[1]) > 1 else []))


class BuildSimilarSets(StageFn):
    """(target id, {"target": [Target], "image": [[(d, id, path)]], "text": [(i, [(d, id, path)])]})
    -> SimilarSet (F5). A set with fewer than `size` members (a tiny pool) is kept and
    noted (counter target.short_set); nothing is dropped here. The side input `shared`
    ({target id: content} of targets whose pixels another target has) keeps a target's
    twin out of its set (noted as target.same_pixels_skipped)."""
    stage, level = "similar_sets", "target"

    def __init__(self, size: int, rule: str):
        self._size, self._rule = size, rule

    def judge(self, keyed, shared=None):
        target_id, groups = keyed
        target: Target = groups["target"][0]
        image_list = groups["image"][0] if groups["image"] else []   # one list per target
        text_lists = [found for _, found in sorted(groups["text"], key=lambda x: x[0])]
        own = (shared or {}).get(target_id)
        if own is not None:   # the same picture under another target's id is no similar image
            twins = {i for i, content in shared.items() if content == own and i != target_id}
            image_list = [hit for hit in image_list if hit[1] not in twins]
            text_lists = [[hit for hit in found if hit[1] not in twins] for found in text_lists]
            self.counts.note("target.same_pixels_skipped", len(twins))
        by_image = [(cosine_of_distance(d), i) for d, i, _ in image_list]
        by_text = text_ranking([[(cosine_of_distance(d), i) for d, i, _ in found] for found in text_lists])
        paths = {i: p for found in [image_list, *text_lists] for _, i, p in found}
        paths[target_id] = target.path
        image_score = {i: c for c, i in by_image}
        text_score = {i: c for c, i in by_text}
        members = [Member(i, paths[i], image_score.get(i), text_score.get(i), source)
                   for i, source in merge_similar(target_id, by_image, by_text, self._size, self._rule)]
        if len(members) < self._size:
            self.counts.note("target.short_set")
        yield SimilarSet(target_id, members)


class NewPool(beam.PTransform):
    """SimilarSet -> the new pool (F6): the union of all S_t, each image once. Of the
    memberships of one image, the one in its own set (an old test image) is kept, else
    the one in the smallest target id; the others are rejects `already_in_pool` (stage
    "pool", level "member"), so members in = pool out + duplicates."""

    def expand(self, sets):
        def memberships(s: SimilarSet):
            return [(s.target, m) for m in s.members]

        def order(item):
            target, member = item
            return (0 if member.source == "target" else 1, target)

        def why(later, first):
            return {"reason": reasons.ALREADY_IN_POOL, "item_id": later[1].image_id,
                    "detail": f"in S_{later[0]}; already in the pool through S_{first[0]}"}

        return (sets | "Memberships" >> beam.FlatMap(memberships)
                | "One per image" >> KeepFirst("pool", "member", key=lambda item: item[1].image_id,
                                               order=order, why=why, counted_in=False))


def pool_rows(pooled: List[Tuple[str, Member]]) -> List[dict]:
    """The new pool in release order: old test images first (by id), then the others
    (by id), as the public *_img_filenames.npy lists them."""
    members = sorted((m for _, m in pooled), key=lambda m: (m.source != "target", m.image_id))
    return [{"position": n, "image_id": m.image_id, "path": m.path, "original": m.source == "target"}
            for n, m in enumerate(members)]
