"""The read-through cache, written once: look items up, compute only the misses, write
the new entries back, and hand on cached and computed results as one collection.

    items -> key(item) -> LookupCache(root, stage)
        HITS   -> decode(item, value)                     -> results
        MISSES -> compute (a PTransform)                  -> results (+ its REJECTS)
                  -> (key(result), encode(result)) -> WriteCache(root, stage, run_id)

`key` is applied to items and to computed results alike, so both must carry what it
reads (an ImageRef and its ImageEmbedding both have `content_sha256`; an (action key,
text) pair and its (action key, vector) both lead with the action key). Counters are the
store's (namespace `stage.cache.<stage>`: hit, miss, corrupt, written): the manifest's
"cached" and "computed" per stage are its hits and misses. A corrupt entry is a miss,
so it is computed and written again.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

import apache_beam as beam

from transforms.cache.store import HITS, MISSES, LookupCache, WriteCache
from transforms.core.stage import MAIN, REJECTS

WRITTEN = "written"  # output tag: the cache shard files this run wrote


class ReadThrough(beam.PTransform):
    """items -> {MAIN: results, REJECTS: the computation's rejects, WRITTEN: shard paths}.

    `compute` turns missed items into results: a PTransform giving a PCollection, or
    {MAIN, REJECTS} (a stage that rejects some items; a reject is never cached, so the
    item is tried again next run). `encode(result) -> bytes` and `decode(item, bytes) ->
    result` convert values; `merge` combines several entries under one key (see
    LookupCache). `run_id` names this run's shards and must be new."""

    def __init__(self, root: str, stage: str, run_id: str, key: Callable[[Any], str],
                 compute: beam.PTransform, encode: Callable[[Any], bytes],
                 decode: Callable[[Any, bytes], Any],
                 merge: Optional[Callable[[List[bytes]], bytes]] = None):
        super().__init__()
        self._root, self._stage, self._run_id = root, stage, run_id
        self._key, self._compute = key, compute
        self._encode, self._decode, self._merge = encode, decode, merge

    def expand(self, items):
        key, encode, decode = self._key, self._encode, self._decode
        looked = (items
                  | "Cache key" >> beam.Map(lambda item: (key(item), item))
                  | "Look up" >> LookupCache(self._root, self._stage, self._merge))
        cached = looked[HITS] | "From cache" >> beam.MapTuple(
            lambda _, item, value: decode(item, value))
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
