"""The image-pair sampling of VSR §3.1, as Beam computations over COCO instances.

  1. per image, its annotations grouped: a concept is eligible when the image holds
     exactly one instance of it (a crowd region counts as many) with area >= min_area;
  2. every unordered pair of eligible concepts of an image puts the image in that
     concept pair's pool;
  3. draws: draw i picks a concept pair uniformly among the pairs whose pool has two
     images, by priority(seed, "draw/i"), and an order (which concept is ENT1); the r-th
     draw of the same pair takes the images ranked 2r and 2r+1 by priority(seed, pair/image)
     (images are not reused within a pair). A draw whose pool is used up is
     pool_exhausted and the next draw is tried, until `pairs` pairs, `max_draws` draws, or
     every pool is used up (the remaining capacity, sum of pool size // 2, is tracked);
     pairs requested and sampled go to stats/sampling.json, a shortfall is logged.
Only the pool sizes (one number per concept pair, at most 3,160) meet in one place.
The COCO files themselves are read by transforms/coco/instances.py.
"""
from __future__ import annotations

import collections
import heapq
import itertools
import logging
from typing import Dict

import apache_beam as beam

from pipelines.vsr import reasons
from pipelines.vsr.records import ImagePair, pair_id
from schemas.coco import NAME_BY_ID
from transforms.coco.instances import IMAGE
from transforms.core.sampling import priority
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo

log = logging.getLogger("pipelines.vsr.pairs")


FIGURES = "figures"


def concept_verdicts(annotations, min_area: float, max_instances: int = 1, broken=()):
    """One image's (image_id, category_id, area, iscrowd) annotations (known categories)
    -> ({concept: area} eligible, {concept: (reason, detail)} not eligible). `broken`:
    category ids of this image's bad_coco_record annotations; such a concept is never
    eligible (bad_coco_record), as its other instances or its area are unknown."""
    by_concept: Dict[str, list] = {}
    for a in annotations:
        by_concept.setdefault(NAME_BY_ID[a[1]], []).append(a)
    broken_names = collections.Counter(NAME_BY_ID[c] for c in broken if c in NAME_BY_ID)
    for name in broken_names:
        by_concept.setdefault(name, [])
    eligible, verdicts = {}, {}
    for name, instances in sorted(by_concept.items()):
        crowd = any(a[3] for a in instances)
        if broken_names[name]:
            verdicts[name] = (reasons.BAD_COCO_RECORD,
                              f"{broken_names[name]} unreadable annotation(s) of this concept "
                              f"beside {len(instances)} readable one(s)")
        elif len(instances) > max_instances or crowd:
            verdicts[name] = (reasons.MULTIPLE_INSTANCES,
                              f"{len(instances)} instances" + (" (crowd)" if crowd else ""))
        elif min(a[2] for a in instances) < min_area:
            verdicts[name] = (reasons.SMALL_INSTANCE, f"area {min(a[2] for a in instances):.0f}")
        else:
            eligible[name] = instances[0][2]
    return eligible, verdicts


class EligibleConcepts(beam.PTransform):
    """(images, annotations[, broken]) -> (CocoImage, {concept: area}) for images with at
    least two eligible concepts, plus rejects: annotation level (unknown_image,
    unknown_category), image-concept level (multiple_instances, small_instance,
    bad_coco_record: a concept with an unreadable annotation) and image level
    (too_few_concepts: the image enters no pool). Counters image.in / image.out reconcile
    the images read with the images entering pools."""

    def __init__(self, min_area: float, max_instances: int = 1):
        super().__init__()
        self._min_area = min_area
        self._max_instances = max_instances

    def expand(self, inputs):
        images, annotations, *rest = inputs
        groups = {"image": images | "Key images" >> beam.Map(lambda i: (i.image_id, i)),
                  "annotations": annotations | "Key annotations" >> beam.Map(lambda a: (a[0], a))}
        if rest:
            groups["broken"] = rest[0] | "Key broken" >> beam.Map(lambda b: (b[0], b[1]))
        joined = groups | "Per image" >> beam.CoGroupByKey()
        return joined | "Filter concepts" >> stage_pardo(
            _Eligible(self._min_area, self._max_instances))


class _Eligible(StageFn):
    """One image id's group; counts three levels (annotation, image, image_concept)."""
    stage, level = "pair_sampling", IMAGE
    counts_in = counts_out = False

    def __init__(self, min_area: float, max_instances: int):
        self._min_area = min_area
        self._max_instances = max_instances

    def judge(self, joined):
        image_id, groups = joined
        images = list(groups["image"])
        annotations = list(groups["annotations"])
        broken = list(groups.get("broken", ()))
        self.counts.seen(len(annotations), level="annotation")
        if not images:
            for a in annotations:
                yield self.reject(reasons.UNKNOWN_IMAGE, f"{image_id}/{a[1]}", level="annotation",
                                  detail=f"annotation of image id {image_id}, "
                                         "which no images entry lists")
            return
        image = images[0]      # ReadCoco keeps one image per id
        self.counts.seen(level=IMAGE)
        known = []
        for a in annotations:
            if a[1] not in NAME_BY_ID:
                yield self.reject(reasons.UNKNOWN_CATEGORY, f"{image_id}/{a[1]}", level="annotation",
                                  source=image.source,
                                  detail=f"category id {a[1]} is not a COCO 2017 category")
                continue
            self.counts.count_out(level="annotation")
            known.append(a)
        eligible, verdicts = concept_verdicts(known, self._min_area, self._max_instances, broken)
        self.counts.seen(len(eligible) + len(verdicts), level="image_concept")
        self.counts.count_out(len(eligible), level="image_concept")
        for name, (reason, detail) in sorted(verdicts.items()):
            yield self.reject(reason, f"{image.file_name}/{name}", level="image_concept",
                              source=image.source, detail=detail)
        if len(eligible) >= 2:
            self.counts.count_out(level=IMAGE)
            yield image, eligible
            return
        yield self.reject(
            reasons.FEW_CONCEPTS, image.file_name, source=image.source,
            detail=f"{len(eligible)} eligible concept(s) ({', '.join(sorted(eligible)) or 'none'}) "
                   f"of {len(eligible) + len(verdicts)}: an image needs two to join a pool")


def draw_plan(pool_sizes: Dict[str, int], seed: int, pairs: int, max_draws: int):
    """([(pair key, draw, repeat, subj first?)] of the successful draws, [(draw, pair key)]
    of the draws whose pool was used up). Pure: depends on the seed and the pool sizes.

    A pool of n images gives n // 2 pairs; drawing stops at `pairs` pairs, at `max_draws`
    draws, or as soon as every pool is used up (then no later draw could succeed)."""
    candidates = sorted(k for k, n in pool_sizes.items() if n >= 2)
    plan, exhausted, repeats = [], [], {}
    remaining = sum(pool_sizes[k] // 2 for k in candidates)   # pairs the pools can still give
    for draw in range(max_draws):
        if len(plan) >= pairs or remaining == 0:
            break
        key = candidates[priority(seed, f"draw/{draw}") % len(candidates)]
        r = repeats.get(key, 0)
        if 2 * (r + 1) > pool_sizes[key]:
            exhausted.append((draw, key))
            continue
        repeats[key] = r + 1
        remaining -= 1
        plan.append((key, draw, r, priority(seed, f"order/{draw}") % 2 == 0))
    return plan, exhausted


def plan_figures(pool_sizes: Dict[str, int], plan: list, exhausted: list, pairs: int,
                 max_draws: int) -> dict:
    """What the sampling asked for and got (stats/sampling.json, the manifest, the card)."""
    capacity = sum(n // 2 for n in pool_sizes.values() if n >= 2)
    draws = len(plan) + len(exhausted)
    stopped = ("pairs reached" if len(plan) >= pairs else
               "every pool used up" if len(plan) >= capacity else "max_draws reached")
    return {"pairs_requested": pairs, "pairs_sampled": len(plan),
            "shortfall": max(0, pairs - len(plan)), "draws": draws,
            "pool_exhausted_draws": len(exhausted), "max_draws": max_draws,
            "pools": sum(1 for n in pool_sizes.values() if n >= 2), "pool_capacity": capacity,
            "stopped": stopped}


def pair_key(a: str, b: str) -> str:
    return "|".join(sorted((a, b)))


class SamplePairs(beam.PTransform):
    """(CocoImage, {concept: area}) -> ImagePair (main), draw rejects (pool_exhausted) and
    "figures": one plan_figures dict (pairs requested / sampled, why drawing stopped).

    The draws run on one worker over the pool sizes; the images of each drawn pair are
    chosen per pair key (a group of image ids: bounded by the pool, not the dataset)."""

    def __init__(self, seed: int, pairs: int, max_draws: int):
        super().__init__()
        self._seed, self._pairs, self._max_draws = seed, pairs, max_draws

    def expand(self, eligible):
        seed = self._seed
        pools = eligible | "Pool members" >> beam.FlatMap(
            lambda ie: [(pair_key(a, b), (ie[0], ie[1][a], ie[1][b]))
                        for a, b in itertools.combinations(sorted(ie[1]), 2)])
        sizes = (pools | "Pool keys" >> beam.Keys() | "Pool sizes" >> beam.combiners.Count.PerElement()
                 | "Sizes dict" >> beam.combiners.ToDict())
        planned = (eligible.pipeline | "Draw" >> beam.Create([None])
                   | "Plan draws" >> stage_pardo(
                       _Plan(seed, self._pairs, self._max_draws),
                       sizes=beam.pvalue.AsSingleton(sizes), outputs=(FIGURES,)))
        pairs = ({"pool": pools, "draws": planned[MAIN]} | "Join draws" >> beam.CoGroupByKey()
                 | "Choose images" >> beam.FlatMap(lambda kv: choose_images(kv[0], kv[1], seed)))
        return {MAIN: pairs, REJECTS: planned[REJECTS], FIGURES: planned[FIGURES]}


class _Plan(StageFn):
    """Runs once over the pool sizes; counts the draws (in: every draw tried)."""
    stage, level = "pair_sampling", "draw"
    counts_in = counts_out = False

    def __init__(self, seed: int, pairs: int, max_draws: int):
        self._seed, self._pairs, self._max_draws = seed, pairs, max_draws

    def judge(self, _, sizes):
        plan, exhausted = draw_plan(sizes, self._seed, self._pairs, self._max_draws)
        figures = plan_figures(sizes, plan, exhausted, self._pairs, self._max_draws)
        if figures["shortfall"]:
            log.warning("sampled %d of %d requested pairs (%s; %d pools, room for %d pairs)",
                        figures["pairs_sampled"], figures["pairs_requested"], figures["stopped"],
                        figures["pools"], figures["pool_capacity"])
        yield beam.pvalue.TaggedOutput(FIGURES, figures)
        self.counts.seen(len(plan) + len(exhausted), level="draw")
        self.counts.count_out(len(plan), level="draw")
        for draw, key in exhausted:
            yield self.reject(reasons.POOL_EXHAUSTED, f"draw{draw}",
                              detail=f"{key}: every image pair of its pool "
                                     f"({sizes[key]} images) was drawn before")
        for key, draw, repeat, subj_first in plan:
            yield key, (draw, repeat, subj_first)


def choose_images(key: str, groups: dict, seed: int):
    """The ImagePairs of one concept pair: `groups["pool"]` holds (CocoImage, area of the
    first concept, area of the second) per image, `groups["draws"]` (draw, repeat, first
    concept is the subject?) per successful draw of this pair."""
    draws = sorted(groups["draws"])
    if not draws:
        return
    size = 0
    needed = 2 * (max(r for _, r, _ in draws) + 1)

    def ranked():
        nonlocal size
        for member in groups["pool"]:
            size += 1
            yield priority(seed, f"{key}/{member[0].image_id}"), member[0].image_id, member
    chosen = heapq.nsmallest(needed, ranked())
    a, b = key.split("|")
    for draw, repeat, a_first in draws:
        (_, _, (img1, a1, b1)), (_, _, (img2, a2, b2)) = chosen[2 * repeat], chosen[2 * repeat + 1]
        subj, obj = (a, b) if a_first else (b, a)
        subj_areas = (a1, a2) if a_first else (b1, b2)
        obj_areas = (b1, b2) if a_first else (a1, a2)
        yield ImagePair(pair_id(img1.file_name, img2.file_name, subj, obj), subj, obj,
                        (img1, img2), subj_areas, obj_areas, draw, size)
