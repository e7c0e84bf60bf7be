"""The read-through cache, written once: look items up, compute only the misses, write
the new entries back, and hand on cached and computed results as one collection.

    items -> key(item) -> LookupCache(root, stage)
        HITS   -> decode(item, value)                     -> results
        MISSES -> compute (a PTransform)                  -> results (+ its REJECTS)
                  -> (key(result), encode(result)) -> WriteCache(root, stage, run_id)

`key` is applied to items and to computed results alike, so both must carry what it
reads (an ImageRef and its ImageEmbedding both have `content_sha256`; an (action key,
text) pair and its (action key, vector) both lead with the action key). Counters are the
store's (stage `cache.<stage>`; its work: hit, miss, corrupt, written): the build
record's "cached" and "computed" per stage are its hits and misses. A corrupt entry is
a miss, so it is computed and written again. A computation that counts its items in
and out (`counted_as`: its stage and level) gets its hits counted there too, so its
counts say what the data held whether or not the cache was warm.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import apache_beam as beam

from transforms.cache.store import HITS, MISSES, LookupCache, WriteCache
from transforms.core.stage import MAIN, REJECTS, StageCounts

WRITTEN = "written"  # output tag: the cache shard files this run wrote


class ReadThrough(beam.PTransform):
    """items -> {MAIN: results, REJECTS: the computation's rejects, WRITTEN: shard paths}.

    `compute` turns missed items into results: a PTransform giving a PCollection, or
    {MAIN, REJECTS} (a stage that rejects some items; a reject is never cached, so the
    item is tried again next run). `encode(result) -> bytes` and `decode(item, bytes) ->
    result` convert values; `merge` combines several entries under one key (see
    LookupCache). `run_id` names this run's shards and must be new. `counted_as`:
    (stage, level) where `compute` counts its items in and out, for the hits too."""

    def __init__(self, root: str, stage: str, run_id: str, key: Callable[[Any], str],
                 compute: beam.PTransform, encode: Callable[[Any], bytes],
                 decode: Callable[[Any, bytes], Any],
                 merge: Optional[Callable[[List[bytes]], bytes]] = None,
                 counted_as: Optional[Tuple[str, str]] = None):
        super().__init__()
        self._root, self._stage, self._run_id = root, stage, run_id
        self._key, self._compute = key, compute
        self._encode, self._decode, self._merge = encode, decode, merge
        self._counted_as = counted_as

    def expand(self, items):
        key, encode, decode = self._key, self._encode, self._decode
        looked = (items
                  | "Cache key" >> beam.Map(lambda item: (key(item), item))
                  | "Look up" >> LookupCache(self._root, self._stage, self._merge))
        cached = looked[HITS] | "From cache" >> beam.ParDo(_FromCache(decode, self._counted_as))
        computed = (looked[MISSES] | "Misses" >> beam.MapTuple(lambda _, item: item)
                    | "Compute misses" >> self._compute)
        if isinstance(computed, beam.PCollection):
            computed_main = computed
            rejects = items.pipeline | "No rejects" >> beam.Create([])
        else:
            computed_main, rejects = computed[MAIN], computed[REJECTS]
        written = (computed_main
                   | "Cache entry" >> beam.Map(lambda result: (key(result), encode(result)))
                   | "Write back" >> WriteCache(self._root, self._stage, self._run_id))
        results = (cached, computed_main) | "Cached and computed" >> beam.Flatten()
        return {MAIN: results, REJECTS: rejects, WRITTEN: written}


class _FromCache(beam.DoFn):
    """A hit's result, counted in and out of the computation's stage (`counted_as`) as if
    it had been computed."""

    def __init__(self, decode: Callable[[Any, bytes], Any], counted_as: Optional[Tuple[str, str]]):
        self._decode, self._counted_as = decode, counted_as

    def setup(self):
        self._counts = StageCounts(self._counted_as[0]) if self._counted_as else None

    def process(self, hit):
        _, item, value = hit
        if self._counts is not None:
            level = self._counted_as[1]
            self._counts.seen(level=level)
            self._counts.count_out(level=level)
        yield self._decode(item, value)
