"""The cache seen from the releases (the store itself is transforms/cache/store.py): what a
build's record says of its cache (`cache_record`, which the benchmarks that cache put in
BUILD.json), and housekeeping, `python -m pipelines cache prune --cache ROOT --releases OUT
[--dry-run]`.

The build record's contract: a release whose build used cache entries lists the shards
it read or wrote under a top-level key of its BUILD.json (of its MANIFEST.json, for a
release built before builds kept a record apart),

    "cache_files": ["embed/run-20240101-00000-of-00004.parquet", ...]

paths relative to the cache root (transforms.cache.store.relative_cache_path). Prune keeps
every shard named by any such record below OUT and deletes every other shard
(`<ROOT>/<stage>/*.parquet`), printing each removal and the bytes freed. What builds
that are gone (killed with -9, a lost machine) left is removed too: Beam's `beam-temp-*`
folders under the cache, and their hidden staging folders and locks under
`OUT/<benchmark>/` (`.<version>.staging-<id>`). Prune does not run while a build uses
the cache (its lock in `<cache>/.runs/` is alive, or was taken on another host:
pipelines/release/write/runs.py): a running build reads shards that no record names until it
publishes, so prune would delete what that build has opened. It stops in one line (exit
2) instead, and a build does not start while a prune runs.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import uuid
from typing import Iterator, List, Optional, Sequence, Set, Tuple

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipelines.release.write import runs
from pipelines.release.write.manifest import read_stats
from schemas.layout import BUILD_RECORD, MANIFEST
from transforms.cache.store import SUFFIX, relative_cache_path, shard_pattern
from transforms.core.errors import UserError
from transforms.io.files import make_dirs

CACHE_FILES_KEY = "cache_files"


def referenced_files(releases: str) -> Set[str]:
    """Cache paths (relative to the root) named by any BUILD.json (or, for older
    releases, MANIFEST.json) under `releases`."""
    keep: Set[str] = set()
    for meta in FileSystems.match([FileSystems.join(releases, "**")])[0].metadata_list:
        if not meta.path.endswith(("/" + BUILD_RECORD, "/" + MANIFEST)):
            continue
        with FileSystems.open(meta.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            record = json.loads(f.read().decode("utf-8"))
        keep.update(record.get(CACHE_FILES_KEY, []) if isinstance(record, dict) else [])
    return keep


def cache_record(cache_root: str, staging: str, use: dict, also_read: Sequence[str] = ()) -> dict:
    """What a build's record (BUILD.json) says of its cache: where it is (`cache_root`),
    per stage the items cached and computed (`cache`: `use`, {stage: {"items", "cached",
    "computed"}}), and the shards it read or wrote (`cache_files`: every shard of the
    stages in `use` and `also_read`, stages looked up without counters of their own, as a
    lookup reads them all; and those written)."""
    read = []
    for stage in (*use, *also_read):
        matches = FileSystems.match([shard_pattern(cache_root, stage)])[0].metadata_list
        read += [relative_cache_path(cache_root, m.path) for m in matches]
    written = read_stats(staging, "cache_files") or []
    return {"cache_root": cache_root, "cache": use, CACHE_FILES_KEY: sorted(set(read) | set(written))}


class CacheInUse(UserError, RuntimeError):
    """A build uses the cache: prune would delete shards it has opened (one line, exit 2)."""


@contextlib.contextmanager
def pruning(cache: str) -> Iterator[None]:
    """Hold this prune's lock on `cache` while inside; CacheInUse when a build's lock there
    may be alive (the lock is taken first, then looked past: pipelines/release/write/runs.py)."""
    lock = runs.cache_lock_path(cache, f"{runs.PRUNE_PREFIX}{uuid.uuid4().hex}")
    make_dirs(FileSystems.split(lock)[0])
    runs.write_lock(lock)
    try:
        builds = runs.live_cache_locks(cache, prunes=False)
        if builds:
            raise CacheInUse(
                f"a build is using the cache {cache} ({runs.holder_words(builds[0])}; lock "
                f"{builds[0]}): prune would delete the shards it has opened, which no release "
                "names until it publishes; run it when the build is done (a lock left by a "
                "build that is gone on another host: remove it)")
        yield
    finally:
        runs.remove_quietly([lock])


def prune(cache: str, releases: str, dry_run: bool = False) -> Tuple[List[str], int]:
    """Delete unreferenced shards and what builds that are gone left behind (their Beam
    temp folders, their staging folders and locks under `releases`,
    pipelines/release/write/runs.py); returns (removed paths, bytes freed). Refused
    (CacheInUse) while a build uses the cache."""
    with pruning(cache):
        return _prune(cache, releases, dry_run)


def _prune(cache: str, releases: str, dry_run: bool) -> Tuple[List[str], int]:
    keep = referenced_files(releases)
    pattern = FileSystems.join(cache, "*", "*" + SUFFIX)  # shards only, not beam-temp-*/
    doomed = [m for m in FileSystems.match([pattern])[0].metadata_list
              if relative_cache_path(cache, m.path) not in keep]
    doomed.sort(key=lambda m: m.path)
    freed = sum(m.size_in_bytes for m in doomed)
    removed = [m.path for m in doomed]
    if doomed and not dry_run:
        FileSystems.delete(removed)
    temps = runs.stale_cache_temps(cache)
    staging = runs.stale_staging_under(releases)
    freed += sum(_size(path) for path in temps + staging)
    if not dry_run:
        runs.sweep_cache(cache)
        runs.remove_quietly(staging)
    return removed + temps + staging, freed


def _size(path: str) -> int:
    """Bytes of a file, or of every file below a folder."""
    if FileSystems.get_scheme(path) is None and os.path.isfile(path):
        return os.path.getsize(path)
    matches = FileSystems.match([FileSystems.join(path, "**")])[0].metadata_list
    return sum(m.size_in_bytes for m in matches
               if not (FileSystems.get_scheme(m.path) is None and os.path.isdir(m.path)))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines cache", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("prune", help="delete cache shards no release manifest names")
    p.add_argument("--cache", required=True, help="cache root (local path or gs://)")
    p.add_argument("--releases", required=True, help="release root searched for MANIFEST.json")
    p.add_argument("--dry-run", action="store_true", help="only print what would be removed")
    args = parser.parse_args(argv)
    if FileSystems.get_scheme(args.releases) is None and not os.path.isdir(args.releases):
        # without the manifests every shard would look unreferenced and be deleted
        print(f"error: --releases: no such folder: {args.releases} (the release root whose "
              "manifests name the shards to keep)", file=sys.stderr)
        return 2

    try:
        removed, freed = prune(args.cache, args.releases, args.dry_run)
    except CacheInUse as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    verb = "would remove" if args.dry_run else "removed"
    for path in removed:
        print(f"{verb} {path}")
    print(f"{verb} {len(removed)} shard(s) or temp or staging folder(s) and lock(s), {freed} bytes")
    return 0

