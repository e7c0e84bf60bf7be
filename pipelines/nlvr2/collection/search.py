"""S2 search results and S3 automatic pruning (App. B).

A search result is one line `{query, rank, seed, similar: [up to 15]}`: the result at
`rank` of a query's image search, and the images the similar-images tool gave for it
(most similar first). An image is a path, relative to the folder of
`collection.inputs.search_results` (a local collection: the path as written is its URL
in the release), or `{"url": ..., "file": ...}` (a downloaded web image: the URL is
released, the file is read).

S2 walks each query's results in rank order under App. B's caps (60 results, 30 saved
sets, 5 results in a row without similar images; 100 / 60 for collective nouns and
"two <synset>"). S3 drops images seen in earlier sets of the query, unreadable ones,
those under 200x200 and exact duplicates within a set, then sets left with < 8 images.
The rules are pure functions (`apply_caps`, `prune_query_sets`), wrapped as stages here
and reused by the sample to answer its own tasks.
"""
from __future__ import annotations

import os
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import apache_beam as beam

from pipelines.nlvr2.collection import reasons as why
from pipelines.nlvr2.collection.config import PruningConfig, SearchConfig
from pipelines.nlvr2.collection.image_sets import Image, ImageSet
from pipelines.nlvr2.collection.queries import Query
from schemas import reasons
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo
from transforms.crowd.answer_rows import ReadAnswerRows, RowProblem, cell_text, whole_number
from transforms.io.files import NotARegularFile, open_regular_file

SEARCH_COLUMNS = ("query", "rank", "seed", "similar")


class Drop(NamedTuple):
    """A pure rule's verdict on an item it does not pass on."""
    reason: str
    item_id: str
    detail: str = ""
    level: str = ""


def emit_verdicts(stage: StageFn, verdicts) -> Iterator:
    """A pruning rule's verdicts as a stage's output: a Drop is a reject, a kept Image is
    counted out at level image (it travels inside its set), a set is passed on."""
    for out in verdicts:
        if isinstance(out, Drop):
            yield stage.reject(out.reason, out.item_id, level=out.level, detail=out.detail)
        elif isinstance(out, Image):
            stage.counts.count_out(level="image")
        else:
            yield out


def image_id(set_key: str, position: int) -> str:
    return f"{set_key}/{position}"


# --- S2: search results ---------------------------------------------------------------

def _image(entry, base_dir: str, position: int) -> Optional[Image]:
    if isinstance(entry, str) and entry.strip():
        url = path = entry.strip()
    elif isinstance(entry, dict) and isinstance(entry.get("url"), str) and isinstance(entry.get("file"), str):
        url, path = entry["url"], entry["file"]
    else:
        return None
    if "://" not in path and not os.path.isabs(path):
        path = os.path.join(base_dir, path)
    return Image(position, url, path)


def search_result_check(base_dir: str, set_size: int, local_similar: bool = False):
    """ReadAnswerRows' check for a search-result line (context: {query text: synset}).
    With `local_similar`, a line without `similar` is a seed whose similar images the
    local stand-in finds (local_search.py)."""
    def check(row: dict, queries: Dict[str, str]):
        query = cell_text(row, "query")
        if query not in queries:
            return RowProblem(why.UNKNOWN_QUERY, query)
        rank = whole_number(row.get("rank"))
        if rank is None or rank < 0:
            shown = row.get("rank")
            shown = shown[:40] if isinstance(shown, str) else shown
            return RowProblem(reasons.BAD_FIELD, f"rank {shown!r}: a whole number >= 0")
        similar = row.get("similar")
        if similar is None and local_similar:
            seed = _image(row.get("seed"), base_dir, 0)
            if seed is None:
                return RowProblem(reasons.BAD_FIELD, "seed is neither a path nor {url, file}")
            return (query, rank), ImageSet(query, rank, queries[query], (seed,), needs_similar=True)
        if not isinstance(similar, list) or len(similar) > set_size - 1:
            return RowProblem(reasons.BAD_FIELD, f"similar: a list of at most {set_size - 1} images")
        images = [_image(e, base_dir, i) for i, e in enumerate([row.get("seed")] + similar)]
        if any(i is None for i in images):
            return RowProblem(reasons.BAD_FIELD, "an image is neither a path nor {url, file}")
        return (query, rank), ImageSet(query, rank, queries[query], tuple(images))
    return check


def cap_for(query: Query, cfg: SearchConfig) -> Tuple[int, int]:
    """(max results, max saved sets) of a query (App. B, fn 12)."""
    return (cfg.wide_max_results, cfg.wide_max_sets) if query.wide else (cfg.max_results, cfg.max_sets)


def apply_caps(results: Iterable[ImageSet], max_results: int, max_sets: int,
               max_misses: int) -> Iterator[Union[ImageSet, Drop]]:
    """One query's results in rank order: the sets saved, and a Drop for each result that
    made no set or came after the search stopped."""
    seen = saved = misses = 0
    stopped = ""
    for result in sorted(results, key=lambda r: r.rank):
        if stopped:
            yield Drop(why.BEYOND_SEARCH_CAP, result.key, stopped)
            continue
        seen += 1
        if len(result.images) < 2:
            misses += 1
            yield Drop(why.NO_SIMILAR_IMAGES, result.key)
            if misses >= max_misses:
                stopped = f"{max_misses} results in a row without similar images"
        else:
            misses, saved = 0, saved + 1
            yield result
            if saved >= max_sets:
                stopped = f"{max_sets} sets saved"
        if seen >= max_results and not stopped:
            stopped = f"{max_results} results looked at"


class _CapSearch(StageFn):
    stage, level = "search", "result"
    counts_in = False   # a query's results come in as one group

    def __init__(self, cfg: SearchConfig):
        self._cfg = cfg

    def judge(self, keyed, queries):
        text, results = keyed
        results = list(results)
        self.counts.seen(len(results), level="result")
        max_results, max_sets = cap_for(queries[text], self._cfg)
        for out in apply_caps(results, max_results, max_sets, self._cfg.max_misses_in_a_row):
            yield self.reject(out.reason, out.item_id, detail=out.detail) if isinstance(out, Drop) else out


class SearchSets(beam.PTransform):
    """queries (Query) -> {MAIN: ImageSet per saved result, REJECTS}. Stages "search_results"
    (level line: the file) and "search" (level result: the caps)."""

    def __init__(self, path: str, cfg: SearchConfig):
        super().__init__()
        self._path, self._cfg = path, cfg

    def expand(self, queries):
        by_text = queries | "Query by text" >> beam.Map(lambda q: (q.text, q))
        synsets = beam.pvalue.AsDict(by_text | "Synset of query" >> beam.MapTuple(lambda t, q: (t, q.synset)))
        base = os.path.dirname(self._path)
        local = bool(self._cfg.local_similar.collection)
        columns = SEARCH_COLUMNS[:-1] if local else SEARCH_COLUMNS
        rows = queries.pipeline | "Read search results" >> ReadAnswerRows(
            self._path, "search_results", columns, search_result_check(base, self._cfg.set_size, local),
            why.DUPLICATE_RESULT, context=synsets)
        results, rejects = rows[MAIN], [rows[REJECTS]]
        if local:
            from pipelines.nlvr2.collection.local_search import LocalSimilarImages
            seeds = results | "Seeds alone" >> beam.Filter(lambda s: s.needs_similar)
            found = seeds | "Local similar images" >> LocalSimilarImages(self._cfg.local_similar, self._cfg.set_size)
            given = results | "Similar given" >> beam.Filter(lambda s: not s.needs_similar)
            results = (given, found[MAIN]) | "All results" >> beam.Flatten()
            rejects.append(found[REJECTS])
        capped = (results | "By query" >> beam.Map(lambda s: (s.query, s))
                  | "Group query" >> beam.GroupByKey()
                  | "Caps" >> stage_pardo(_CapSearch(self._cfg), beam.pvalue.AsDict(by_text)))
        rejects = (*rejects, capped[REJECTS]) | "Search rejects" >> beam.Flatten()
        return {MAIN: capped[MAIN], REJECTS: rejects}


# --- S3: automatic pruning ----------------------------------------------------------------

def read_image_facts(path: str) -> Tuple[str, int, int]:
    """(sha256, width, height) of an image file; raises OSError/ValueError when it cannot
    be decoded (NotARegularFile, before reading, for a FIFO or a device: /dev/zero as a
    seed was read until the kernel killed the build)."""
    from PIL import Image as PILImage
    import hashlib
    import io
    with open_regular_file(path) as f:
        data = f.read()
    with PILImage.open(io.BytesIO(data)) as image:
        image.load()
        width, height = image.size
    return hashlib.sha256(data).hexdigest(), width, height


def prune_query_sets(sets: Sequence[ImageSet], cfg: PruningConfig,
                     facts=read_image_facts) -> Iterator[Union[ImageSet, Image, Drop]]:
    """One query's sets in rank order. Yields each surviving image, a Drop(level "image")
    for each dropped one, then per set the pruned ImageSet or a Drop(level "set")."""
    seen = set()
    for image_set in sorted(sets, key=lambda s: s.rank):
        kept: List[Image] = []
        hashes = set()
        for image in image_set.images:
            iid = image_id(image_set.key, image.position)
            if image.url in seen or image.path in seen:
                yield Drop(why.SEEN_IN_EARLIER_SET, iid, image.url, "image")
                continue
            try:
                sha, width, height = facts(image.path)
            except Exception as e:   # a missing file, bytes no decoder reads, a device
                what = str(e) if isinstance(e, NotARegularFile) else type(e).__name__
                yield Drop(reasons.UNREADABLE_IMAGE, iid, f"{image.url}: {what}", "image")
                continue
            if width < cfg.min_width or height < cfg.min_height:
                yield Drop(why.TOO_SMALL, iid, f"{width}x{height}", "image")
                continue
            if sha in hashes:
                yield Drop(why.DUPLICATE_IN_SET, iid, sha[:16], "image")
                continue
            hashes.add(sha)
            kept.append(image._replace(sha256=sha, width=width, height=height))
            yield kept[-1]
        seen.update(i.url for i in image_set.images)
        seen.update(i.path for i in image_set.images)
        if len(kept) < cfg.min_set_images:
            yield Drop(why.TOO_FEW_IMAGES, image_set.key, f"{len(kept)} images", "set")
        else:
            yield image_set._replace(images=tuple(kept))


class _AutoPrune(StageFn):
    stage, level = "auto_pruning", "set"
    counts_in = False

    def __init__(self, cfg: PruningConfig):
        self._cfg = cfg

    def judge(self, keyed):
        _, sets = keyed
        sets = list(sets)
        self.counts.seen(len(sets), level="set")
        self.counts.seen(sum(len(s.images) for s in sets), level="image")
        yield from emit_verdicts(self, prune_query_sets(sets, self._cfg))


class AutoPrune(beam.PTransform):
    def __init__(self, cfg: PruningConfig):
        super().__init__()
        self._cfg = cfg

    def expand(self, sets):
        return (sets | "By query" >> beam.Map(lambda s: (s.query, s))
                | "Group query" >> beam.GroupByKey()
                | "Prune" >> stage_pardo(_AutoPrune(self._cfg)))
