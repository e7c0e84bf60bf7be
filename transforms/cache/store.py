"""A shared cache of expensive per-item results (embeddings, scores, OCR, shots, parses).

An entry's key covers everything its value depends on (see `cache_key`), so a changed
model, weight file or parameter simply misses; there is no invalidation. Entries live
on any Beam filesystem as Parquet shards written by Beam:

    <root>/<stage>/<run id>-SSSSS-of-NNNNN.parquet    columns: key, value, checksum

    requests = items | beam.Map(lambda it: (cache_key(...), it))
    looked = requests | LookupCache(root, "embed")
    computed = looked[MISSES] | compute   -> (key, encode_array(vector))
    files = computed | WriteCache(root, "embed", run_id)   # names for the manifest

A stage whose results are cached one entry per item wires these through ReadThrough
(transforms/cache/read_through.py); ImageCoDe's video plans join several entries per
video (pipelines/imagecode/video/plans.py) and use them directly.

Writes are atomic per shard: Beam's file sink writes into a hidden
`<root>/<stage>/beam-temp-<run id>-<uuid>/` folder and renames each finished shard into
place (one rename locally, one object copy on gs://), so a killed run never leaves a
partial shard matching `<stage>/*.parquet`. Reads still verify every row's checksum and
skip unreadable files, so a damaged shard costs recomputation, never a wrong value.

Big values (a video's frame embeddings) can be looked up by reference: the join then
moves an `EntryRef` (shard, row group, row, checksum: a few bytes) in place of the value,
and the step that needs the value reads it there (`read_entry`), so no join ever holds
every cached value at once. Such a stage is written one row per row group
(`WriteCache(rows_per_group=1)`), so reading one entry reads only its own row group.

Counters (stage `cache.<stage>`): item.in = item.out = requests; and, as the run's work
(StageCounts.work: a warm cache changes them, the release not), hit, miss, corrupt (bad
files + bad rows), written. A stage its caller counts itself (`quiet`: ImageCoDe's frame
images, counted as frames served from the cache where they are used) counts only
corrupt.

A stage whose entries each hold a part of a big value (a video's frame images, added to
by every build that decodes new frames) is looked up by reference with `every_entry` as
its merge: a hit is then the sorted tuple of references to every valid entry under the
key, and the step that needs them reads them.
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.io import fileio
from apache_beam.io.filesystems import FileSystems

from schemas.names import safe_name
from transforms.core.stage import StageCounts
from transforms.io.files import open_parquet

HITS, MISSES = "hits", "misses"
SHARD_TEMPLATE = "-SSSSS-of-NNNNN"
SUFFIX = ".parquet"
KEY_VERSION = "cache-key/v1"  # bump to invalidate every key if the key recipe changes
CACHE_SCHEMA = pa.schema([("key", pa.string()), ("value", pa.binary()),
                          ("checksum", pa.string())])

_LOGGER = logging.getLogger(__name__)
Merge = Callable[[List[bytes]], bytes]  # several entries under one key -> one value


# --- keys and values -------------------------------------------------------------------

def canonical_json(obj) -> str:
    """One spelling per value: sorted keys, no spaces, no NaN (it has no JSON form)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def cache_key(stage: str, content_sha256: str, model_fingerprint: str, params: dict) -> str:
    """sha256 hex over (stage, content hash, model identity incl. weights, parameters)."""
    text = canonical_json([KEY_VERSION, stage, content_sha256, model_fingerprint, params])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fingerprint(identity: dict) -> str:
    """A short stable id of a model identity (a dict of versions and weight checksums)."""
    return hashlib.sha256(canonical_json(identity).encode("utf-8")).hexdigest()[:16]


def checksum(value: bytes) -> str:
    return hashlib.sha256(value).hexdigest()


def encode_array(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)  # no pickle: a value is data only
    return buf.getvalue()


def decode_array(value: bytes) -> np.ndarray:
    return np.load(io.BytesIO(value), allow_pickle=False)


def encode_json(obj) -> bytes:
    return canonical_json(obj).encode("utf-8")


def decode_json(value: bytes):
    return json.loads(value.decode("utf-8"))


def merge_json_dicts(values: List[bytes]) -> bytes:
    """Union of JSON objects stored under one key by different runs, each holding the
    values that run computed (per-frame scores). The first value for a name wins; the
    computation is deterministic, so copies agree anyway."""
    merged: dict = {}
    for value in values:
        for name, item in decode_json(value).items():
            merged.setdefault(name, item)
    return encode_json(merged)


def every_entry(values: List["EntryRef"]) -> tuple:
    """The merge of a stage looked up by reference whose entries each hold a part: all of
    them, in sorted order (the same answer on every runner)."""
    return tuple(values)


def stage_dir(root: str, stage: str) -> str:
    if safe_name(stage) != stage:
        raise ValueError(f"cache stage {stage!r} is not a safe folder name")
    return FileSystems.join(root, stage)


def shard_pattern(root: str, stage: str) -> str:
    """The finished shards of a stage; Beam's temp folders are one level deeper."""
    return FileSystems.join(stage_dir(root, stage), "*" + SUFFIX)


def relative_cache_path(root: str, path: str) -> str:
    """A shard path as MANIFEST.json's "cache_files" names it: relative to the root."""
    prefix = root.rstrip("/") + "/"
    if not path.startswith(prefix):
        raise ValueError(f"{path} is not under the cache root {root}")
    return path[len(prefix):]


# --- lookup ----------------------------------------------------------------------------

@dataclass(frozen=True, order=True)
class EntryRef:
    """Where a cache entry's value is: row `row` of row group `row_group` of shard `path`,
    whose checksum was verified when the lookup read it. Ordered, so a join picks the
    same copy on every runner (by checksum first: the same value as picking by value)."""
    checksum: str
    path: str
    row_group: int
    row: int


class CacheEntryChanged(RuntimeError):
    """An entry found by a lookup is no longer what it was (its shard was removed or
    rewritten since): a build must stop rather than use another value."""


def read_entry(ref: EntryRef) -> bytes:
    """The value `ref` points at, checked against the checksum the lookup verified."""
    try:
        with open_parquet(ref.path) as shard:
            values = shard.read_row_group(ref.row_group, columns=["value"])
        value = values.column("value")[ref.row].as_py()
    except Exception as err:
        raise CacheEntryChanged(f"cache entry at {ref.path} (row group {ref.row_group}, row "
                                f"{ref.row}) can no longer be read: {err}") from err
    if value is None or checksum(value) != ref.checksum:
        raise CacheEntryChanged(f"cache entry at {ref.path} (row group {ref.row_group}, row "
                                f"{ref.row}) changed after it was looked up")
    return value


class _ReadShard(beam.DoFn):
    """One shard file -> (key, (checksum, value)) for each row whose checksum holds; with
    `by_stage`, ((stage, key), (checksum, value)), the stage being the shard's folder.
    For a stage in `by_reference` the value is an EntryRef to the row (read, verified and
    let go here; read again where it is used).

    An unreadable file (truncated, not Parquet, wrong columns) is logged and counted;
    rows read before the damage were checksum-verified, so they stay usable."""

    def __init__(self, by_stage: bool = False, by_reference: Sequence[str] = ()):
        self.by_stage = by_stage
        self.by_reference = frozenset(by_reference)

    def setup(self):
        self.counts = {}

    def process(self, metadata):
        path = metadata.path
        stage = FileSystems.split(FileSystems.split(path)[0])[1]
        counts = self.counts.setdefault(stage, StageCounts("cache." + stage))
        reference = stage in self.by_reference
        try:
            with open_parquet(path) as shard:
                for group in range(shard.num_row_groups):  # one row group in memory at a time
                    rows = shard.read_row_group(group, columns=["key", "value", "checksum"]).to_pydict()
                    for row, (key, value, sha) in enumerate(zip(rows["key"], rows["value"],
                                                                rows["checksum"])):
                        if value is None or key is None or checksum(value) != sha:
                            _LOGGER.warning("cache %s: bad checksum for key %s in %s",
                                            stage, key, path)
                            counts.work("corrupt")
                            continue
                        if reference:
                            value = EntryRef(sha, path, group, row)
                        yield ((stage, key) if self.by_stage else key), (sha, value)
        except Exception as err:  # any damage means "recompute", never a failed run
            _LOGGER.warning("cache %s: skipping unreadable shard %s: %s", stage, path, err)
            counts.work("corrupt")


class _Join(beam.DoFn):
    """(key, {requests, entries}) -> one HIT or MISS per request. `merges`: stage ->
    merge (or None); with `stage` set, keys are plain, else (stage, key) pairs. Stages in
    `quiet` are not counted."""

    def __init__(self, merges: Dict[str, Optional[Merge]], stage: Optional[str] = None,
                 quiet: Sequence[str] = ()):
        self.merges = merges
        self.stage = stage
        self.quiet = frozenset(quiet)

    def setup(self):
        self.counts = {stage: None if stage in self.quiet else StageCounts("cache." + stage)
                       for stage in self.merges}

    def process(self, joined):
        key, groups = joined
        stage = self.stage or key[0]
        merge, counts = self.merges[stage], self.counts[stage]
        items = list(groups["requests"])  # none: an entry nobody asked for
        entries = sorted(groups["entries"])  # sorted: the same answer on every runner
        if not entries:
            value = None
        elif merge is not None:  # entries that each hold a part (see merge_json_dicts)
            value = merge([v for _, v in entries])
        else:  # two runs stored the same value: any valid copy will do
            value = entries[0][1]
        for item in items:
            yield _answer(counts, key, item, value)


class _Miss(beam.DoFn):
    """(key, item) -> a MISS, counted as _Join counts one: the lookup of a cache whose
    stages hold no shard yet (see has_entries)."""

    def __init__(self, stages: Sequence[str], stage: Optional[str] = None,
                 quiet: Sequence[str] = ()):
        self.stages = tuple(stages)
        self.stage = stage
        self.quiet = frozenset(quiet)

    def setup(self):
        self.counts = {stage: None if stage in self.quiet else StageCounts("cache." + stage)
                       for stage in self.stages}

    def process(self, request):
        key, item = request
        yield _answer(self.counts[self.stage or key[0]], key, item, None)


def _answer(counts: Optional[StageCounts], key, item, value: Optional[bytes]):
    if counts is not None:
        counts.seen()
        counts.count_out()
        counts.work("miss" if value is None else "hit")
    if value is None:
        return beam.pvalue.TaggedOutput(MISSES, (key, item))
    return beam.pvalue.TaggedOutput(HITS, (key, item, value))


def has_entries(root: str, stages: Iterable[str]) -> bool:
    """Whether any of `stages` holds a finished shard, asked when the graph is built.
    Without one the lookup is all misses: the join (a file match, a shuffle and a
    group per lookup) is left out of the graph, and the counters stay the same."""
    patterns = [shard_pattern(root, stage) for stage in stages]
    return any(result.metadata_list for result in FileSystems.match(patterns))


class LookupCache(beam.PTransform):
    """(key, item) -> {HITS: (key, item, value bytes), MISSES: (key, item)}.

    A join of the requests with every entry of `<root>/<stage>/`, not one read per
    item. A stage without shards (no folder yet) means all misses, and no join in the
    graph (has_entries). `merge` combines the values of several entries under one key
    (in sorted order); without it they are copies."""

    def __init__(self, root: str, stage: str, merge: Optional[Merge] = None):
        super().__init__()
        self.root = root
        self.stage = stage
        self.merge = merge

    def expand(self, requests):
        if not has_entries(self.root, [self.stage]):
            return requests | "All miss" >> beam.ParDo(
                _Miss([self.stage], self.stage)).with_outputs(HITS, MISSES)
        entries = (requests.pipeline
                   | "Match" >> fileio.MatchFiles(
                       shard_pattern(self.root, self.stage),
                       empty_match_treatment=fileio.EmptyMatchTreatment.ALLOW)
                   | "Spread" >> beam.Reshuffle()  # one worker per file, not one for all
                   | "Read" >> beam.ParDo(_ReadShard()))
        return ({"requests": requests, "entries": entries}
                | "Group" >> beam.CoGroupByKey()
                | "Join" >> beam.ParDo(_Join({self.stage: self.merge}, self.stage))
                .with_outputs(HITS, MISSES))


class LookupCacheStages(beam.PTransform):
    """LookupCache for several stages in one join: ((stage, key), item) ->
    {HITS: ((stage, key), item, value bytes), MISSES: ((stage, key), item)}.

    `merges` maps each stage asked about to its merge (None: copies). A stage in
    `by_reference` hits with an EntryRef in place of the value (copies), or with the
    tuple of every entry's EntryRef (merge `every_entry`): what the join holds per entry
    is then a few bytes, whatever the values weigh. Counters are each stage's, as
    LookupCache's, but for the stages in `quiet` (their caller counts what it uses); one
    match, read and join instead of one per stage."""

    def __init__(self, root: str, merges: Dict[str, Optional[Merge]],
                 by_reference: Sequence[str] = (), quiet: Sequence[str] = ()):
        super().__init__()
        self.root = root
        self.merges = dict(merges)
        self.by_reference = tuple(by_reference)
        self.quiet = tuple(quiet)
        merged = [stage for stage in self.by_reference
                  if self.merges.get(stage) not in (None, every_entry)]
        if merged:
            raise ValueError(f"stages {merged} merge their values: they cannot be looked up by reference")

    def expand(self, requests):
        if not has_entries(self.root, self.merges):
            return requests | "All miss" >> beam.ParDo(
                _Miss(self.merges, quiet=self.quiet)).with_outputs(HITS, MISSES)
        patterns = [shard_pattern(self.root, stage) for stage in sorted(self.merges)]
        entries = (requests.pipeline
                   | "Once" >> beam.Impulse()
                   | "Patterns" >> beam.FlatMap(lambda _: patterns)
                   | "Match" >> fileio.MatchAll(fileio.EmptyMatchTreatment.ALLOW)
                   | "Spread" >> beam.Reshuffle()  # one worker per file, not one for all
                   | "Read" >> beam.ParDo(_ReadShard(by_stage=True, by_reference=self.by_reference)))
        return ({"requests": requests, "entries": entries}
                | "Group" >> beam.CoGroupByKey()
                | "Join" >> beam.ParDo(_Join(self.merges, quiet=self.quiet)).with_outputs(HITS, MISSES))


# --- write -----------------------------------------------------------------------------

class _ToRow(beam.DoFn):
    def __init__(self, stage: str, counted: bool = True):
        self.stage = stage
        self.counted = counted

    def setup(self):
        self.counts = StageCounts("cache." + self.stage) if self.counted else None

    def process(self, entry):
        key, value = entry
        if self.counts is not None:
            self.counts.work("written")
        yield {"key": key, "value": value, "checksum": checksum(value)}


class WriteCache(beam.PTransform):
    """(key, value bytes) -> `<root>/<stage>/<run_id>-SSSSS-of-NNNNN.parquet`; returns the
    written file names. `run_id` must be new: Beam's sink deletes older shards that match
    the run's own file name pattern, so a reused run id could drop earlier entries.

    `rows_per_group` > 0 writes row groups of that many rows and holds no more than
    that many values before writing them (for big values: 1, so a lookup by reference
    reads one entry's row group, and the writer one value at a time); 0 keeps Beam's
    Parquet defaults (1,000 rows a batch, 64 MiB row groups: fine for small values).
    `counted` False: no `written` counter (a stage its caller counts, see LookupCacheStages)."""

    def __init__(self, root: str, stage: str, run_id: str, num_shards: int = 0,
                 rows_per_group: int = 0, counted: bool = True):
        super().__init__()
        if safe_name(run_id) != run_id:
            raise ValueError(f"run id {run_id!r} is not a safe file name")
        self.root = root
        self.stage = stage
        self.run_id = run_id
        self.num_shards = num_shards
        self.counted = counted
        # Beam's writer makes a row group once its batches reach row_group_buffer_size
        # bytes: 1 byte makes one row group per batch of record_batch_size rows.
        self.buffering = ({"record_batch_size": rows_per_group, "row_group_buffer_size": 1}
                          if rows_per_group > 0 else {})

    def expand(self, entries):
        prefix = FileSystems.join(stage_dir(self.root, self.stage), self.run_id)
        taken = FileSystems.match([prefix + "-*" + SUFFIX])[0].metadata_list
        if taken:
            raise FileExistsError(f"cache run id {self.run_id!r} already has shards in "
                                  f"{stage_dir(self.root, self.stage)}: use a new run id")
        return (entries
                | "ToRow" >> beam.ParDo(_ToRow(self.stage, self.counted))
                | "Parquet" >> beam.io.WriteToParquet(
                    prefix, CACHE_SCHEMA, num_shards=self.num_shards,
                    shard_name_template=SHARD_TEMPLATE, file_name_suffix=SUFFIX,
                    **self.buffering))
