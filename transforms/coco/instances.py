"""COCO instances files, streamed, and the image-pair sampling of VSR §3.1.

Reading: `iter_coco_file` walks an instances JSON file (train 2017 is ~450 MB) with
json.JSONDecoder.raw_decode over 1 MiB chunks, one array element at a time, so a worker
holds one element, never the file. Each file is read by one worker (the reads of several
files run in parallel); an image becomes a CocoImage, an annotation a small tuple
(image_id, category_id, area, iscrowd). An entry that lacks what it needs, an image
whose file_name is not a plain COCO name (schemas.coco.FILE_NAME) or whose coco_url is
not http(s), and an entry holding NaN or an infinity is bad_coco_record. A file that is not COCO JSON (not an object,
broken JSON, truncated) is dropped as a whole (`malformed_coco`): it is checked in one
streaming pass before any of its records are emitted, so a half-read file never feeds
the sample.

Sampling (§3.1), as Beam computations:
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
"""
from __future__ import annotations

import collections
import heapq
import itertools
import json
import logging
import math
import os
from typing import Dict, Iterator, List, Optional, Tuple, Union

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.vsr.schema import CocoImage, ImagePair, pair_id
from schemas import reasons
from schemas.coco import NAME_BY_ID, is_file_name, is_link
from schemas.records import Reject
from transforms.core.sampling import priority
from transforms.core.stage import MAIN, REJECTS, StageCounts

CHUNK = 1 << 20
MAX_ELEMENT = 64 << 20   # characters; no COCO entry comes near it
IMAGE, ANNOTATION, BROKEN = "image", "annotation", "broken"
FIGURES = "figures"
log = logging.getLogger("transforms.coco.instances")


class MalformedCoco(ValueError):
    """The file is not a COCO instances JSON object."""


def _elements(f, buffer: str, pos: int, decoder) -> Iterator:
    """Yields the elements of the JSON array starting at buffer[pos] == '[', reading more
    chunks as needed; finally yields ('__end__', buffer, pos) just after the ']'."""
    pos += 1
    first = True
    while True:
        buffer, pos = _skip_ws(f, buffer, pos)
        if buffer[pos] == "]":
            yield ("__end__", buffer, pos + 1)
            return
        if not first:
            if buffer[pos] != ",":
                raise MalformedCoco(f"expected ',' or ']' at offset {pos}")
            buffer, pos = _skip_ws(f, buffer, pos + 1)
        first = False
        while True:
            try:
                value, end = decoder.raw_decode(buffer, pos)
                # a number cut at the chunk end would decode short: make sure a delimiter follows
                if end >= len(buffer):
                    raise json.JSONDecodeError("at chunk end", buffer, end)
                break
            except json.JSONDecodeError:
                buffer, pos = _refill(f, buffer, pos)
        yield value
        pos = end   # no slicing per element: the buffer is compacted only when refilled


def _refill(f, buffer: str, pos: int) -> Tuple[str, int]:
    """Drop what was consumed and append a chunk; an element that never ends (broken JSON)
    stops at MAX_ELEMENT instead of reading the rest of the file into memory."""
    more = f.read(CHUNK)
    if not more or len(buffer) - pos > MAX_ELEMENT:
        raise MalformedCoco(f"truncated or broken JSON near character {pos}")
    return buffer[pos:] + more, 0


def _skip_ws(f, buffer: str, pos: int) -> Tuple[str, int]:
    while True:
        while pos < len(buffer) and buffer[pos] in " \t\r\n":
            pos += 1
        if pos < len(buffer):
            return buffer, pos
        more = f.read(CHUNK)
        if not more:
            raise MalformedCoco("unexpected end of file")
        buffer, pos = more, 0


def iter_coco_file(path: str) -> Iterator[Tuple[str, object]]:
    """(IMAGE, dict) and (ANNOTATION, dict) for each entry of `path`; other top-level keys
    are decoded and discarded one value at a time. Raises MalformedCoco."""
    import codecs
    decoder = json.JSONDecoder()
    with FileSystems.open(path, compression_type="uncompressed") as raw:
        f = codecs.getreader("utf-8")(raw)
        buffer, pos = _skip_ws(f, "", 0)
        if buffer[pos] != "{":
            raise MalformedCoco("the top level is not a JSON object")
        pos += 1
        first = True
        while True:
            buffer, pos = _skip_ws(f, buffer, pos)
            if buffer[pos] == "}":
                return
            if not first:
                if buffer[pos] != ",":
                    raise MalformedCoco(f"expected ',' or '}}' at offset {pos}")
                buffer, pos = _skip_ws(f, buffer, pos + 1)
            first = False
            key, buffer, pos = _decode_value(f, buffer, pos, decoder)
            buffer, pos = _skip_ws(f, buffer, pos)
            if not isinstance(key, str) or buffer[pos] != ":":
                raise MalformedCoco("expected a key and ':'")
            buffer, pos = _skip_ws(f, buffer, pos + 1)
            kind = {"images": IMAGE, "annotations": ANNOTATION}.get(key)
            if kind and buffer[pos] == "[":
                for value in _elements(f, buffer, pos, decoder):
                    if isinstance(value, tuple) and value and value[0] == "__end__":
                        _, buffer, pos = value
                        break
                    yield kind, value
            elif kind:
                raise MalformedCoco(f"{key!r} is not a list")
            else:
                _, buffer, pos = _decode_value(f, buffer, pos, decoder)


def _decode_value(f, buffer: str, pos: int, decoder):
    while True:
        try:
            value, end = decoder.raw_decode(buffer, pos)
            if end < len(buffer):
                return value, buffer, end
        except json.JSONDecodeError:
            pass
        try:
            buffer, pos = _refill(f, buffer, pos)
        except MalformedCoco:
            try:   # the last value of the file may end exactly at its end
                value, end = decoder.raw_decode(buffer, pos)
                return value, buffer, end
            except json.JSONDecodeError:
                raise MalformedCoco(f"truncated or broken JSON near character {pos}") from None


def source_of(path: str, coco_url: str) -> str:
    """train2017 / val2017: the image URL's folder, else the file name (instances_val2017)."""
    if coco_url and "/" in coco_url:
        return coco_url.rstrip("/").split("/")[-2]
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem.split("instances_", 1)[-1]


def _non_finite(entry: dict) -> List[str]:
    """Fields of an entry holding NaN or an infinity (Python's json reads NaN, Infinity
    and 1e999): its top-level numbers and its bbox. Polygons are never read, so never
    checked."""
    def bad(value) -> bool:
        return isinstance(value, float) and not math.isfinite(value)
    found = [key for key, value in entry.items() if bad(value)]
    bbox = entry.get("bbox")
    if isinstance(bbox, list) and any(bad(v) for v in bbox):
        found.append("bbox")
    return sorted(found)


def _image(entry, path: str) -> Union[CocoImage, str]:
    """A CocoImage, or what is wrong with the entry (its bad_coco_record detail)."""
    if not isinstance(entry, dict):
        return "an images entry must be an object"
    image_id, file_name = entry.get("id"), entry.get("file_name")
    if not isinstance(image_id, int) or isinstance(image_id, bool) or not isinstance(file_name, str):
        return "needs an integer id and a string file_name"
    if not is_file_name(file_name):
        # It becomes a released image name and, for a user, a path: only a plain name.
        return f"file_name {file_name[:100]!r} is not a plain COCO file name"
    url = entry.get("coco_url") if isinstance(entry.get("coco_url"), str) else ""
    if url and not is_link(url):
        return f"coco_url {url[:100]!r} is not an http(s) link"
    non_finite = _non_finite(entry)
    if non_finite:
        return f"not a finite number: {', '.join(non_finite)}"
    return CocoImage(image_id, file_name, url, source_of(path, url))


def _valid_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _broken_concept(entry) -> Optional[Tuple[int, int]]:
    """(image_id, category_id) of a bad annotation entry whose image and category are
    still readable: that concept cannot be checked in that image (its instance count or
    area is unknown), so it must not be eligible there."""
    if isinstance(entry, dict) and _valid_int(entry.get("image_id")) and _valid_int(entry.get("category_id")):
        return entry["image_id"], entry["category_id"]
    return None


def _annotation(entry) -> Union[Tuple[int, int, float, int], str]:
    """(image_id, category_id, area, iscrowd), or what is wrong with the entry."""
    if not isinstance(entry, dict):
        return "an annotations entry must be an object"
    values = [entry.get(k) for k in ("image_id", "category_id", "area")]
    if (not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            or not isinstance(values[0], int) or not isinstance(values[1], int)):
        return "needs integer image_id and category_id and a numeric area"
    non_finite = _non_finite(entry)
    if non_finite:   # a NaN area passed `area < min_area` as not small
        return f"not a finite number: {', '.join(non_finite)}"
    return values[0], values[1], float(values[2]), int(bool(entry.get("iscrowd", 0)))


class ReadCoco(beam.PTransform):
    """Instances files -> {"images": CocoImage, "annotations": (image_id, category_id,
    area, iscrowd), "broken": (image_id, category_id) of annotation entries rejected as
    bad_coco_record whose image and category are readable, REJECTS: file / record rejects
    (stage coco)}.

    `paths` are concrete files (pipelines.vsr.pipeline.expand_inputs expands patterns once, before
    the run). A file that cannot be opened is an error, never a malformed_coco reject."""

    def __init__(self, paths: List[str]):
        super().__init__()
        self._paths = list(paths)

    def expand(self, pbegin):
        read = (pbegin | "Files" >> beam.Create(self._paths)
                | "Spread files" >> beam.Reshuffle()
                | "Stream entries" >> beam.ParDo(_StreamCoco()).with_outputs(
                    REJECTS, ANNOTATION, BROKEN, main=IMAGE))
        unique = (read[IMAGE] | "Key images" >> beam.Map(lambda i: (i.image_id, i))
                  | "Group image ids" >> beam.GroupByKey()
                  | "One per id" >> beam.ParDo(_OneImagePerId()).with_outputs(REJECTS, main=MAIN))
        return {"images": unique[MAIN], "annotations": read[ANNOTATION], "broken": read[BROKEN],
                REJECTS: (read[REJECTS], unique[REJECTS]) | "COCO rejects" >> beam.Flatten()}


class _StreamCoco(beam.DoFn):
    def __init__(self):
        self._counts = StageCounts("coco")

    def process(self, path: str):
        self._counts.seen(level="file")
        try:
            for _ in iter_coco_file(path):   # validate first: a broken file emits nothing
                pass
        except FileNotFoundError:
            raise    # expand_inputs found it: a missing file is an error, not a malformed one
        except (MalformedCoco, UnicodeDecodeError) as e:
            # A decode error's position counts from the start of a 1 MiB chunk, not the
            # file: name the byte instead of a position that would mislead.
            detail = (f"not UTF-8: byte 0x{e.object[e.start]:02x} cannot be decoded"
                      if isinstance(e, UnicodeDecodeError) else str(e)[:300])
            yield self._counts.rejected(Reject(stage="coco", level="file",
                                               reason=reasons.MALFORMED_COCO, item_id=path,
                                               file=path, detail=detail))
            return
        self._counts.count_out(level="file")
        for n, (kind, entry) in enumerate(iter_coco_file(path)):
            self._counts.seen(level=kind)
            record = _image(entry, path) if kind == IMAGE else _annotation(entry)
            if isinstance(record, str):
                yield self._counts.rejected(Reject(
                    stage="coco", level=kind, reason=reasons.BAD_COCO_RECORD,
                    item_id=f"{path}#{kind}{n}", detail=f"{record}: {json.dumps(entry)[:200]}"))
                broken = _broken_concept(entry) if kind == ANNOTATION else None
                if broken is not None:    # a marker, not a record: counted above as rejected
                    yield beam.pvalue.TaggedOutput(BROKEN, broken)
            elif kind == IMAGE:
                yield self._counts.passed(record, level=kind)
            else:
                yield beam.pvalue.TaggedOutput(ANNOTATION, self._counts.passed(record, level=kind))


class _OneImagePerId(beam.DoFn):
    def __init__(self):
        self._counts = StageCounts("coco")

    def process(self, keyed):
        _, images = keyed
        first, *others = sorted(images, key=lambda i: (i.source, i.file_name))
        yield first
        for image in others:
            self._counts.count_out(-1, level=IMAGE)
            yield self._counts.rejected(Reject(
                stage="coco", level=IMAGE, reason=reasons.DUPLICATE_COCO_IMAGE,
                item_id=str(image.image_id), source=image.source,
                detail=f"{image.file_name}: id already used by {first.file_name} ({first.source})"))


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
        return joined | "Filter concepts" >> beam.ParDo(
            _Eligible(self._min_area, self._max_instances)).with_outputs(REJECTS, main=MAIN)


class _Eligible(beam.DoFn):
    def __init__(self, min_area: float, max_instances: int):
        self._min_area = min_area
        self._max_instances = max_instances
        self._counts = StageCounts("pair_sampling")

    def process(self, joined):
        image_id, groups = joined
        images = list(groups["image"])
        annotations = list(groups["annotations"])
        broken = list(groups.get("broken", ()))
        self._counts.seen(len(annotations), level="annotation")
        if not images:
            for a in annotations:
                yield self._counts.rejected(Reject(
                    stage="pair_sampling", level="annotation", reason=reasons.UNKNOWN_IMAGE,
                    item_id=f"{image_id}/{a[1]}", detail=f"annotation of image id {image_id}, "
                                                         "which no images entry lists"))
            return
        image = images[0]      # ReadCoco keeps one image per id
        self._counts.seen(level=IMAGE)
        known = []
        for a in annotations:
            if a[1] not in NAME_BY_ID:
                yield self._counts.rejected(Reject(
                    stage="pair_sampling", level="annotation", reason=reasons.UNKNOWN_CATEGORY,
                    item_id=f"{image_id}/{a[1]}", source=image.source,
                    detail=f"category id {a[1]} is not a COCO 2017 category"))
                continue
            self._counts.count_out(level="annotation")
            known.append(a)
        eligible, verdicts = concept_verdicts(known, self._min_area, self._max_instances, broken)
        self._counts.seen(len(eligible) + len(verdicts), level="image_concept")
        self._counts.count_out(len(eligible), level="image_concept")
        for name, (reason, detail) in sorted(verdicts.items()):
            yield self._counts.rejected(Reject(
                stage="pair_sampling", level="image_concept", reason=reason,
                item_id=f"{image.file_name}/{name}", source=image.source, detail=detail))
        if len(eligible) >= 2:
            self._counts.count_out(level=IMAGE)
            yield image, eligible
            return
        yield self._counts.rejected(Reject(
            stage="pair_sampling", level=IMAGE, reason=reasons.FEW_CONCEPTS,
            item_id=image.file_name, source=image.source,
            detail=f"{len(eligible)} eligible concept(s) ({', '.join(sorted(eligible)) or 'none'}) "
                   f"of {len(eligible) + len(verdicts)}: an image needs two to join a pool"))


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
                   | "Plan draws" >> beam.ParDo(
                       _Plan(seed, self._pairs, self._max_draws),
                       sizes=beam.pvalue.AsSingleton(sizes)).with_outputs(REJECTS, FIGURES, main=MAIN))
        pairs = ({"pool": pools, "draws": planned[MAIN]} | "Join draws" >> beam.CoGroupByKey()
                 | "Choose images" >> beam.FlatMap(lambda kv: choose_images(kv[0], kv[1], seed)))
        return {MAIN: pairs, REJECTS: planned[REJECTS], FIGURES: planned[FIGURES]}


class _Plan(beam.DoFn):
    def __init__(self, seed: int, pairs: int, max_draws: int):
        self._seed, self._pairs, self._max_draws = seed, pairs, max_draws
        self._counts = StageCounts("pair_sampling")

    def process(self, _, sizes):
        plan, exhausted = draw_plan(sizes, self._seed, self._pairs, self._max_draws)
        figures = plan_figures(sizes, plan, exhausted, self._pairs, self._max_draws)
        if figures["shortfall"]:
            log.warning("sampled %d of %d requested pairs (%s; %d pools, room for %d pairs)",
                        figures["pairs_sampled"], figures["pairs_requested"], figures["stopped"],
                        figures["pools"], figures["pool_capacity"])
        yield beam.pvalue.TaggedOutput(FIGURES, figures)
        self._counts.seen(len(plan) + len(exhausted), level="draw")
        self._counts.count_out(len(plan), level="draw")
        for draw, key in exhausted:
            yield self._counts.rejected(Reject(
                stage="pair_sampling", level="draw", reason=reasons.POOL_EXHAUSTED,
                item_id=f"draw{draw}", detail=f"{key}: every image pair of its pool "
                                              f"({sizes[key]} images) was drawn before"))
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
