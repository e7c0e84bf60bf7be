"""Driver-side release handling: staging folder, checksums, manifest, counts, rename.

A version is immutable. It is written into a hidden staging folder beside its final
place (`<out>/<benchmark>/.<version>.staging-<uuid>`), made read-only, and renamed once
complete, so a failed or stopped run never leaves a half-written or writable
`<out>/<benchmark>/<version>/`:

    with staged_release(out, "imagecode", version) as staging:
        run the pipeline (writers from transforms.io.release) into `staging`
        counts = release_counts(staging); write_reject_counts(staging, counts)
        remove_work_dir(staging); write_datacard(...); write_manifest(staging, {...})
        write_build_record(staging, {...})
    # here the version exists; on an exception the staging folder is removed instead

Paths go through Beam's FileSystems, so gs:// works. On a local disk the staging folder
loses its write bits (make_read_only) and is then renamed in one atomic step: a version
is either absent or there whole and read-only, whatever instant a build is stopped at.
Object stores have no folder rename, so there the files are copied with MANIFEST.json
last (a version without MANIFEST.json is incomplete) and staging deleted.
"""
from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import stat
import uuid
from typing import Dict, Iterator, List, Optional

from apache_beam.io.filesystems import FileSystems

from schemas.layout import (BUILD_RECORD, MANIFEST, PARQUET_DIR, REJECT_COUNTS, REJECTS_DIR,
                            WORK_DIR, work_dir)
from pipelines.release.check.verify import (REJECT_COLUMNS, RELEASE_SHA256, TABLE_COLUMNS, VALUES_SHA256,
                                            load_build_record, rejects_record, release_sha256,
                                            table_record, values_sha256)
from transforms.core.counts import merged
from schemas.names import safe_name
from transforms.core.hashing import content_sha256
from transforms.io.files import make_dirs, open_parquet

# What a release was built from: "sample" (the embedded generated sample, whose rows
# show the pipeline at work) or "inputs" (real inputs: a collection, public files). The
# explorer compares no rows of two versions built from different kinds (pipelines/release/explorer/write.py).
BUILT_FROM = "built_from"
GENERATED_CARD = "**Built from generated sample data.**"   # datacard.generated_note's opening


def built_from(generated: bool) -> str:
    return "sample" if generated else "inputs"


def built_from_of(manifest: dict, version_dir: str) -> Optional[str]:
    """A published release's BUILT_FROM; for one built before manifests recorded it, what
    its data card says (a sample's holds GENERATED_CARD, any other is "inputs"), and
    None when it has no card either."""
    if manifest.get(BUILT_FROM):
        return manifest[BUILT_FROM]
    card = FileSystems.join(version_dir, "DATACARD.md")
    if not FileSystems.exists(card):
        return None
    with FileSystems.open(card, compression_type="uncompressed") as f:
        return built_from(GENERATED_CARD in f.read().decode("utf-8", errors="replace"))


# --- folders -------------------------------------------------------------------------

def version_dir(out: str, benchmark: str, version: str) -> str:
    """`<out>/<benchmark>/<version>`; benchmark and version must be safe path components."""
    for label, name in (("benchmark", benchmark), ("version", version)):
        if safe_name(name) != name:
            raise ValueError(f"{label} {name!r} is not a safe folder name")
    return FileSystems.join(out, benchmark, version)


def staging_dir_for(out: str, benchmark: str, version: str, run_uuid: str) -> str:
    """Where a build with this run uuid stages `version` (hidden: a leading dot)."""
    version_dir(out, benchmark, version)  # checks both names
    return FileSystems.join(out, benchmark, f".{version}.staging-{run_uuid}")


def new_staging_dir(out: str, benchmark: str, version: str,
                    run_uuid: Optional[str] = None) -> str:
    """Create the hidden staging folder for a new version; error if the version exists."""
    final = version_dir(out, benchmark, version)
    if FileSystems.exists(final):
        raise FileExistsError(f"version already exists (versions are immutable): {final}")
    staging = staging_dir_for(out, benchmark, version, run_uuid or uuid.uuid4().hex)
    make_dirs(staging)
    return staging


def final_dir_of(staging: str) -> str:
    """The version folder that a staging folder from new_staging_dir becomes."""
    parent, name = FileSystems.split(staging.rstrip("/"))
    version = name[1:].rsplit(".staging-", 1)[0]
    return FileSystems.join(parent, version)


def remove_work_dir(staging: str) -> None:
    """Drop leftover scratch files (e.g. frames of sets that were not sampled)."""
    path = work_dir(staging)
    if FileSystems.exists(path):
        _delete_tree(path)


@contextlib.contextmanager
def staged_release(out: str, benchmark: str, version: str, keep_failed: bool = False,
                   run_uuid: Optional[str] = None) -> Iterator[str]:
    """Yield a new staging folder; finalise it on success, remove it on error (also
    when finalising fails: the loser of two builds of one version leaves nothing)."""
    staging = new_staging_dir(out, benchmark, version, run_uuid)
    try:
        yield staging
        finalise(staging, final_dir_of(staging))
    except BaseException:
        if not keep_failed and FileSystems.exists(staging):
            _delete_tree(staging)
        raise


def finalise(staging: str, final: str, rename: Optional[bool] = None) -> str:
    """Rename staging to the version folder; error if it appeared meanwhile.

    `rename` (default: on local disks) uses one atomic rename; otherwise files are
    copied, MANIFEST.json last, and staging is deleted.
    """
    if not FileSystems.exists(FileSystems.join(staging, MANIFEST)):
        raise FileNotFoundError(f"no {MANIFEST} in {staging}: write_manifest comes last")
    if FileSystems.exists(final):
        raise FileExistsError(f"version appeared while this run was writing: {final}")
    if rename is None:
        rename = _is_local(staging)
    if rename:
        # read-only first, then one atomic rename: a version is never there writable,
        # wherever a stop falls (the rename fails on a non-empty final folder)
        make_read_only(staging)
        try:
            os.rename(staging, final)
        except OSError as err:
            raise FileExistsError(f"cannot rename {staging} to {final}: {err}") from err
        return final
    # Object stores: copy, manifest last, then drop staging.
    rest = sorted(rel for rel in _list_files(staging) if rel != MANIFEST)
    for parent in sorted({FileSystems.split(FileSystems.join(final, r))[0] for r in rest}):
        make_dirs(parent)  # no-op on object stores; needed where folders are real
    for batch in (rest, [MANIFEST]):
        FileSystems.copy([FileSystems.join(staging, r) for r in batch],
                         [FileSystems.join(final, r) for r in batch])
    _delete_tree(staging)
    return final


def make_read_only(folder: str) -> None:
    """Take the write bits off every file and folder below a published version (and the
    version folder itself), so that nothing writes into it by mistake: a version is
    immutable, and `verify` would name what changed. Removing an old version takes
    `chmod -R u+w` first, on purpose."""
    write = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    for parent, folders, files in os.walk(folder, topdown=False):
        for name in files + folders:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) & ~write)
    os.chmod(folder, stat.S_IMODE(os.stat(folder).st_mode) & ~write)


def remove_tree(path: str, ignore_errors: bool = False) -> None:
    """Remove a local folder that may hold published versions (a check's or a
    benchmark's scratch releases): their folders get their owner's write bit back first,
    since without it not even the owner can delete what they hold. Nothing when `path`
    does not exist; `ignore_errors` as shutil.rmtree's."""
    if not os.path.lexists(path):
        return
    for parent, folders, _ in os.walk(path):
        for name in folders:
            folder = os.path.join(parent, name)
            if not os.path.islink(folder):
                os.chmod(folder, os.stat(folder).st_mode | stat.S_IWUSR)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)
    shutil.rmtree(path, ignore_errors=ignore_errors)


# --- checksums and manifest ----------------------------------------------------------

def file_checksums(directory: str) -> Dict[str, str]:
    """{path relative to `directory` (with '/'): sha256 hex} for every file below it but
    MANIFEST.json and BUILD.json, which are not files of the release's data."""
    sums = {}
    for rel in sorted(_list_files(directory)):
        if rel not in (MANIFEST, BUILD_RECORD):
            sums[rel] = content_sha256(FileSystems.join(directory, rel))
    return sums


def write_json(path: str, obj) -> None:
    """Stable JSON: sorted keys, fixed indentation, UTF-8, final newline."""
    text = json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    with FileSystems.create(path, mime_type="application/json",
                            compression_type="uncompressed") as f:
        f.write(text.encode("utf-8"))


# What a build records of itself rather than of the release, in BUILD.json beside the
# release and outside its digest: when and from which code it ran (`build`), where its
# inputs were on the building machine (`input_root`), what its cache held (`cache_root`,
# `cache_files`: the shards it read or wrote, named by run id; `cache`: per stage, items
# cached and computed) and its work counters (`work`: cache hits and misses, models
# loaded, frames decoded again; transforms/core/stage.py StageCounts.work). Two builds
# of one config, inputs and seed differ here and nowhere else. (Releases of format 2
# kept these keys in MANIFEST.json.)
BUILD_KEYS = ("build", "input_root", "cache_root", "cache_files", "cache", "work")
# Files a run writes about itself for its card and records, not published: the cache
# shards it wrote, by run id (BUILD.json `cache_files` lists them).
BUILD_REPORTS = ("stats/cache_files.json",)


def remove_build_reports(staging: str) -> None:
    """Drop the files of BUILD_REPORTS once the build record has read them."""
    present = [path for path in (FileSystems.join(staging, rel) for rel in BUILD_REPORTS)
               if FileSystems.exists(path)]
    if present:
        FileSystems.delete(present)


def write_manifest(staging: str, manifest: dict) -> dict:
    """Write MANIFEST.json: `manifest` plus `values_sha256` (the sha256 of each of its
    values), `files` (checksums of everything else but BUILD.json) and `release_sha256`
    (the digest of them all, pipelines/release/check/verify.py)."""
    if set(manifest) & {"files", RELEASE_SHA256, VALUES_SHA256}:
        raise ValueError(f"manifest keys 'files', {RELEASE_SHA256!r} and {VALUES_SHA256!r} are "
                         "filled in by write_manifest")
    if set(manifest) & set(BUILD_KEYS):
        raise ValueError(f"{sorted(set(manifest) & set(BUILD_KEYS))} belong to the build record "
                         f"({BUILD_RECORD}), not the release's manifest")
    if FileSystems.exists(work_dir(staging)):
        raise ValueError(f"{WORK_DIR}/ is still in staging: call remove_work_dir first")
    full = dict(manifest)
    full[VALUES_SHA256] = values_sha256(manifest)
    full["files"] = file_checksums(staging)
    full[RELEASE_SHA256] = release_sha256(full["files"], full[VALUES_SHA256])
    write_json(FileSystems.join(staging, MANIFEST), full)
    return full


def write_build_record(staging: str, record: dict, manifest: dict) -> dict:
    """Write BUILD.json: the build's `record` (BUILD_KEYS) and the digest of the release
    it built, written after MANIFEST.json (`manifest`, as write_manifest returned it)."""
    unknown = set(record) - set(BUILD_KEYS)
    if unknown:
        raise ValueError(f"not part of a build record: {sorted(unknown)}")
    full = {"benchmark": manifest["benchmark"], "version": manifest["version"],
            RELEASE_SHA256: manifest[RELEASE_SHA256], **record}
    write_json(FileSystems.join(staging, BUILD_RECORD), full)
    return full


def run_counters(version_dir: str) -> dict:
    """Every counter a release's build read back, its work's included: MANIFEST.json
    `stages` with BUILD.json `work` (older releases: MANIFEST.json `stages` held both)."""
    with FileSystems.open(FileSystems.join(version_dir, MANIFEST),
                          compression_type="uncompressed") as f:
        stages = json.loads(f.read().decode("utf-8")).get("stages", {})
    return merged(stages, load_build_record(version_dir).get("work", {}))


def verify_manifest(version: str) -> List[str]:
    """Problems found checking a version folder against its manifest ([] when sound):
    pipelines/release/check/verify.py, what `python -m pipelines verify` prints."""
    from pipelines.release.check.verify import release_problems
    return release_problems(version)


# --- counts read back from the written tables ----------------------------------------

def read_stats(staging: str, name: str):
    """The JSON a WriteReport left in `<staging>/stats/<name>.json`, or None."""
    path = FileSystems.join(staging, "stats", f"{name}.json")
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path, compression_type="uncompressed") as f:
        return json.loads(f.read().decode("utf-8"))


def read_parquet_columns(folder: str, columns: List[str]) -> Dict[str, list]:
    """The given columns of every `*.parquet` file in `folder`, concatenated.

    For small per-set columns only; counting uses count_rows_by, which never holds more
    than one file."""
    out = {c: [] for c in columns}
    for path in sorted(_match(FileSystems.join(folder, "*.parquet"))):
        with open_parquet(path) as parquet:
            table = parquet.read(columns=columns)
        for c in columns:
            out[c].extend(table.column(c).to_pylist())
    return out


def iter_parquet_rows(folder: str, columns: List[str], batch_rows: int = 1024) -> Iterator[dict]:
    """The rows (as dicts of `columns`) of every `*.parquet` file in `folder`, file by file
    and batch by batch: memory holds one batch, also of a table with images embedded."""
    for path in sorted(_match(FileSystems.join(folder, "*.parquet"))):
        with open_parquet(path) as parquet:
            for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns):
                yield from batch.to_pylist()


def parquet_column_names(folder: str) -> List[str]:
    """The columns of a table folder (its first `*.parquet` file's schema); [] without one."""
    files = sorted(_match(FileSystems.join(folder, "*.parquet")))
    if not files:
        return []
    with open_parquet(files[0]) as parquet:
        return parquet.schema_arrow.names


def count_rows_by(folder: str, columns: List[str]) -> collections.Counter:
    """{(value, ...): rows} over the `*.parquet` files of `folder`, one file at a time
    (Arrow's group-by), so counting a table of millions of rejects stays small."""
    counts: collections.Counter = collections.Counter()
    for path in sorted(_match(FileSystems.join(folder, "*.parquet"))):
        with open_parquet(path) as parquet:
            table = parquet.read(columns=columns)
        if table.num_rows == 0:
            continue
        grouped = table.group_by(columns).aggregate([([], "count_all")]).to_pydict()
        for i, n in enumerate(grouped["count_all"]):
            counts[tuple(grouped[c][i] for c in columns)] += n
    return counts


def release_counts(staging: str, tables=("video_sets",)) -> dict:
    """Rows actually written: per table by split/source, Rejects per reason and stage
    (the records `verify` counts again: pipelines/release/check/verify.py)."""
    return {
        "tables": {table: table_record(count_rows_by(FileSystems.join(staging, PARQUET_DIR, table),
                                                     list(TABLE_COLUMNS)))
                   for table in tables},
        "rejects": rejects_record(count_rows_by(FileSystems.join(staging, REJECTS_DIR),
                                                list(REJECT_COLUMNS))),
    }


def write_reject_counts(staging: str, counts: dict) -> None:
    """`rejects/_counts.json`: the per-reason (and per stage/level) reject counts."""
    write_json(FileSystems.join(staging, REJECT_COUNTS), counts["rejects"])


# --- small FileSystems helpers ---------------------------------------------------------

def _is_local(path: str) -> bool:
    return FileSystems.get_scheme(path) in (None, "file")


def _match(pattern: str) -> List[str]:
    return [m.path for m in FileSystems.match([pattern])[0].metadata_list]


def _list_files(directory: str) -> List[str]:
    """Paths of all files below `directory`, relative to it, with '/' separators."""
    root = directory.rstrip("/") + "/"
    rels = []
    for path in _match(FileSystems.join(directory, "**")):
        if _is_local(path) and os.path.isdir(path):
            continue
        rel = path[len(root):] if path.startswith(root) else os.path.relpath(path, directory)
        rels.append(rel.replace(os.sep, "/"))
    return rels


def _delete_tree(path: str) -> None:
    if _is_local(path):
        remove_tree(path)   # a staging folder may be read-only already (finalise)
    else:  # a trailing "/" deletes every object under the prefix
        FileSystems.delete([path.rstrip("/") + "/"])
