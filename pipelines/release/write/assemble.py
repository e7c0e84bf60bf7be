"""Building one immutable release version around a pipeline run (every benchmark).

    the previous version verified -> staging folder -> run the pipeline into it -> read
    counters back (the data's, and the run's work apart) -> the input root -> one set of
    Parquet and TFRecord files per split (paths relative, images embedded) and rejects
    with relative paths -> check that the counters reconcile and match the rows written,
    and that every main table holds a row -> DATACARD.md -> README.md (the dataset card)
    -> croissant.json -> RELEASE_NOTES.md -> explorer/ (pipelines/release/explorer/write.py)
    -> MANIFEST.json (the release: in its digest) -> BUILD.json (the build's record: when,
    from which code, what the cache held; outside the digest) -> read-only -> rename

One config and inputs give one release and one digest whatever the cache held and
whichever runner ran it: everything that follows the build rather than the data goes to
BUILD.json, never into a card, a table or MANIFEST.json.

No absolute path of the building machine is written (pipelines/release/write/locations.py):
paths are relative to the release folder, or to the input root BUILD.json records once.

A run that fails anywhere leaves no version folder behind (pipelines.release.write.manifest).
"""
from __future__ import annotations

import datetime
import logging
import os
import subprocess
import time
import uuid
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from apache_beam.io.filesystems import FileSystems

from pipelines import stops
from pipelines.config import dict_hash, to_dict
from pipelines.release.cards import croissant
from pipelines.release.cards.datacard import render_datacard, write_datacard
from pipelines.release.cards.hf_card import CardFacts, write_readme
from pipelines.release.check import diff as release_diff
from pipelines.release.check.verify import ReleaseDiffers, require_as_published
from pipelines.release.explorer.views import Explorer
from pipelines.release.explorer.write import EXPLORER_DIR, write_explorer
from pipelines.release.write import manifest as release_manifest
from pipelines.release.write import runs
from pipelines.release.write.locations import (Relocate, config_paths, input_root, local_paths_in,
                                               relocated_config)
from pipelines.release.write.order import rewrite_rejects
from pipelines.release.write.row_paths import (RowPaths, input_path_values, reject_paths, relocate_reports,
                                               relocate_rejects)
from pipelines.release.write.split_files import MAIN, SplitScheme, partition_table
from pipelines.release.write.tables import MANIFEST_KEYS, Table, declared, key_problems
from schemas.layout import MANIFEST
from transforms.core.errors import UserError
from transforms.core.hashing import content_sha256_and_size
from transforms.core.stage import check_links, data_counts, read_stage_counts, read_work_counts, reconcile

log = logging.getLogger("pipelines.release.write.assemble")

MANIFEST_FORMAT = 3   # 2: `build` (created_at, code_revision) and `release_sha256`;
                      # 3: `values_sha256` (the values in the digest), the build's record in BUILD.json


class ReleaseError(UserError, RuntimeError):
    """The release could not be built; no version folder was left behind."""


class ReleaseCheckError(RuntimeError):
    """What the run wrote fails the release's checks (counters that do not reconcile, a
    table key that does not identify its rows): a bug, not bad input, so not a UserError
    (exit code 1); no version folder was left behind."""


def build_release(*, benchmark: str, out: str, version: str, config,
                  execute: Callable[[str], object], models: Dict[str, dict],
                  inputs: Dict[str, Optional[str]], links: Iterable[tuple] = (),
                  tables: Dict[str, Table], describe: Callable[[dict], dict],
                  cache_root: Optional[str] = None,
                  check_counts: Callable[[dict], List[str]] = lambda stages: [],
                  splits: Optional[Dict[str, Sequence[SplitScheme]]] = None,
                  explorer: Optional[Explorer] = Explorer(),
                  main_tables: Optional[Sequence[str]] = None, generated: str = "") -> str:
    """Run `execute(staging_dir)` and publish what it wrote as `<out>/<benchmark>/<version>`.

    `tables` maps each table written under parquet/ to its Table: the (stage, counter)
    whose value must equal its rows and the key that identifies a row
    (pipelines/release/write/tables.py; checked before anything starts); `main_tables` those
    that must hold a row (default: all of them: a build that yields nothing fails before
    publishing, and its version stays unused); `splits` its split schemes (default: the
    `split` column), which decide its files and its dataset card configs; `explorer` the
    declared views of the release explorer (pipelines/release/explorer/write.py; None: no
    explorer/); `describe(facts)` returns the data card's summary, thresholds and
    sections (it may write plots into facts["staging"]) and, as "dataset_card", the
    benchmark's CardFacts (main table, license, citation: pipelines/release/cards/hf_card.py);
    `generated` is the sentence the cards open with when the inputs were generated (a
    sample build). While it runs the build holds a lock beside its staging folder (and in
    the cache), so that the next build can tell garbage from work in progress
    (pipelines/release/write/runs.py); before it starts it removes what builds that died left
    behind. On any failure, its own staging folder and its temp files in the cache are
    removed; a stop (Ctrl-C, SIGTERM) at any instant ends it as a Stopped whose line
    says whether the version was published whole or not at all (pipelines/stops.py).
    """
    started = time.monotonic()
    stops.leaves(f"nothing was published; version {version} of {benchmark} is still unused")
    tables = declared(tables)
    runs.sweep_release_dir(FileSystems.join(out, benchmark))
    _check_previous_version(out, benchmark, version)
    if cache_root:
        runs.sweep_cache(cache_root)
    run_uuid = uuid.uuid4().hex
    run_id = f"{benchmark}-{run_uuid}"
    staging_path = release_manifest.staging_dir_for(out, benchmark, version, run_uuid)
    locks = [runs.staging_lock_path(staging_path)]
    if cache_root:
        locks.append(runs.cache_lock_path(cache_root, run_id))
    try:
        for lock in locks:
            release_manifest.make_dirs(FileSystems.split(lock)[0])
            runs.write_lock(lock)
        if cache_root:
            _refuse_while_pruning(cache_root)
        with stops.stop_signals_as_exit(), release_manifest.staged_release(
                out, benchmark, version, run_uuid=run_uuid) as staging:
            log.info("building %s %s in %s", benchmark, version, staging)
            counts = _fill(staging, benchmark=benchmark, version=version, config=config,
                           result=execute(staging), started=started, models=models, inputs=inputs,
                           links=links, tables=tables, describe=describe,
                           check_counts=check_counts, explorer=explorer, generated=generated,
                           splits={t: (splits or {}).get(t, MAIN) for t in tables},
                           main_tables=list(tables) if main_tables is None else list(main_tables))
            final = release_manifest.final_dir_of(staging)
        stops.leaves(_stopped_outcome(out, benchmark, version))   # published: said so from now on
    except FileExistsError as e:  # the version exists, or appeared while we wrote
        raise ReleaseError(str(e)) from None
    except BaseException as error:
        if cache_root:  # finished shards stay (valid entries); half-written ones go
            runs.remove_quietly(runs.temp_dirs_of_run(cache_root, run_id))
        if isinstance(error, stops.Stopped):
            error.outcome = _stopped_outcome(out, benchmark, version)
        raise
    finally:
        runs.remove_quietly(locks)
    print_summary(final, counts)
    return final


def _refuse_while_pruning(cache_root: str) -> None:
    """A `cache prune` running on this cache would delete the shards this build is about
    to read: one line (exit 2) before any work (its lock is taken already: runs.py)."""
    prunes = runs.live_cache_locks(cache_root, prunes=True)
    if prunes:
        raise ReleaseError(f"cache prune is running on {cache_root} ({runs.holder_words(prunes[0])}): "
                           "it would delete shards this build reads; build when it is done; "
                           "nothing was built")


def _stopped_outcome(out: str, benchmark: str, version: str) -> str:
    """What a build stopped at any instant left, once its cleanup is done: the version
    was published (renamed into place, read-only already: it is whole) or it is unused."""
    final = release_manifest.version_dir(out, benchmark, version)
    if FileSystems.exists(FileSystems.join(final, MANIFEST)):
        return f"after publishing: {final} is there, complete and read-only"
    return f"nothing was published; version {version} of {benchmark} is still unused"


def _check_previous_version(out: str, benchmark: str, version: str) -> None:
    """The version this build's release notes will compare with must be as published
    (pipelines/release/check/verify.py), or the notes would show damage on disk as changed
    rows: checked before any work, one line (exit 2) naming the first file that differs."""
    previous = release_diff.previous_version(FileSystems.join(out, benchmark), version)
    if previous is not None:
        try:
            require_as_published(previous, "the previous version")
        except ReleaseDiffers as e:
            raise ReleaseError(f"{e}; nothing was built") from None


def _fill(staging: str, *, benchmark, version, config, result, started, models, inputs, links,
          tables, describe, check_counts, splits, explorer, main_tables, generated) -> dict:
    """Everything after the pipeline run: checks, data card, manifest, build record.
    Returns counts."""
    work = read_work_counts(result)   # what the run did: the build record's, not the release's
    stages = data_counts(read_stage_counts(result), work)
    final = release_manifest.final_dir_of(staging)
    root = input_root(config_paths(config) + local_paths_in(models) + [p for p in inputs.values() if p]
                      + [p for t in tables for p in input_path_values(staging, t)]
                      + reject_paths(staging), release_dirs=[staging, final])
    relocate = Relocate(root, release_dirs=[staging, final])
    problems = key_problems(staging, tables)   # the keys order the rows: checked first
    if problems:
        raise ReleaseCheckError("table keys do not identify their rows: " + "; ".join(problems))
    partitions = {table: partition_table(staging, table, splits[table],
                                         rewrite=lambda schema: RowPaths(schema, staging, relocate),
                                         key=spec.key, rows_per_shard=spec.rows_per_shard)
                  for table, spec in tables.items()}
    relocate_rejects(staging, relocate)
    rewrite_rejects(staging)   # after relocating: ordered by paths as every machine writes them
    relocate_reports(staging, relocate)
    counts = release_manifest.release_counts(staging, tuple(tables))
    release_manifest.write_reject_counts(staging, counts)
    release_manifest.remove_work_dir(staging)
    problems = (reconcile(stages) + check_links(stages, links)
                + _written_vs_counted(stages, counts, tables) + check_counts(stages))
    if problems:
        raise ReleaseCheckError("counts do not reconcile: " + "; ".join(problems))
    empty = yields_nothing(counts, main_tables)
    if empty:
        raise ReleaseError(f"{empty}; nothing was published and version {version} is still unused")
    models = relocate.paths_in(models)   # a model's folder or checkpoint: relative to the input root
    card = describe({"version": version, "counts": counts, "stages": stages, "work": work,
                     "models": models, "config": to_dict(config), "staging": staging})
    release_manifest.remove_build_reports(staging)   # read by describe; BUILD.json has it
    figures = relocate.texts(card.pop("manifest", {}))
    top_level = card.pop("manifest_top", {})
    facts: Optional[CardFacts] = card.pop("dataset_card", None)
    record = card.pop("build", {})   # what the benchmark says of this build (its cache)
    if record.get("cache_root"):   # an output of builds: relative to this release
        record["cache_root"] = relocate.from_release(record["cache_root"], final)
    context = {"benchmark": benchmark, "version": version, "counts": counts,
               "stages": stages, "models": models, "generated": generated, **card}
    datacard = relocate.text(render_datacard(context))
    write_datacard(staging, datacard)
    write_readme(staging, f"{benchmark} {version}", splits, partitions, datacard,
                 facts=facts, generated=generated)
    croissant.write(staging, name=benchmark, version=version, schemes=splits, partitions=partitions,
                    keys={t: spec.key for t, spec in tables.items()}, facts=facts, generated=generated)
    released_config = relocated_config(config, relocate, final)
    manifest = {
        "format": MANIFEST_FORMAT,
        "benchmark": benchmark,
        "version": version,
        "config": released_config,
        "config_sha256": dict_hash(released_config),
        "models": models,
        "inputs": {name: describe_input(path, relocate) for name, path in inputs.items()},
        "counts": counts,
        "stages": stages,
        "reconciled": True,
        release_manifest.BUILT_FROM: release_manifest.built_from(bool(generated)),
        "figures": figures,
        MANIFEST_KEYS: {table: list(spec.key) for table, spec in tables.items()},
        **top_level,
    }
    previous, diff = write_release_notes(staging, manifest)
    manifest["previous_version"] = FileSystems.split(previous)[1] if previous else None
    if explorer is not None:
        if FileSystems.get_scheme(staging) is None:
            written = write_explorer(staging, benchmark=benchmark, version=version,
                                     tables={t: spec.key for t, spec in tables.items()},
                                     views=explorer.views, diff=diff,
                                     previous_dir=previous,
                                     reject_images=explorer.reject_images,
                                     input_root=root,
                                     built_from=manifest[release_manifest.BUILT_FROM])
            manifest["explorer"] = {"files": written["files"], "bytes": written["bytes"]}
        else:  # its thumbnails and pages are written with local file calls
            log.warning("no explorer/: %s is not on a local disk", staging)
    manifest = release_manifest.write_manifest(staging, manifest)
    release_manifest.write_build_record(staging, {
        "build": {"created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
                      timespec="seconds"),
                  "code_revision": code_revision(),
                  "seconds": round(time.monotonic() - started, 1)},
        "input_root": root, **record, "work": work}, manifest)
    return counts


def yields_nothing(counts: dict, main_tables: Sequence[str]) -> Optional[str]:
    """Why a build whose main tables hold no row must not be published (an empty release
    with exit 0 that uses up the version is the worst kind of silently wrong), or None.
    Says what was rejected, since the rejects/ of a build that is not published are gone."""
    empty = [table for table in main_tables if counts["tables"][table]["total"] == 0]
    if not empty:
        return None
    rejects = counts["rejects"]
    most = sorted(rejects["by_reason"].items(), key=lambda kv: (-kv[1], kv[0]))
    why = ", ".join(f"{reason} {n}" for reason, n in most[:6]) + (", ..." if len(most) > 6 else "")
    tables = ", ".join(f"parquet/{t}" for t in empty)
    return (f"the build yields nothing: {tables} {'has' if len(empty) == 1 else 'have'} no rows"
            + (f" ({rejects['total']} rejected: {why})" if rejects["total"]
               else " (and nothing was rejected: check the inputs' contents)"))


def write_release_notes(staging: str, manifest: dict) -> Tuple[Optional[str], Optional[dict]]:
    """RELEASE_NOTES.md: what changed since the previous version (or that there is none).
    Returns the previous version's folder and the comparison (None, None without one)."""
    benchmark_dir = FileSystems.split(staging.rstrip("/"))[0]
    previous = release_diff.previous_version(benchmark_dir, manifest["version"])
    diff = None
    if previous is None:
        text = (f"# {manifest['benchmark']} {manifest['version']}\n\nThe first version of "
                f"{manifest['benchmark']} in its release folder: nothing to compare with.\n")
    else:
        # verified before the build's work (_check_previous_version); a published
        # version is read-only, so it is as it was then
        diff = release_diff.diff_releases(previous, staging, manifest, verify_old=False)
        text = release_diff.render(diff)
    with FileSystems.create(FileSystems.join(staging, "RELEASE_NOTES.md"),
                            mime_type="text/markdown") as f:
        f.write(text.encode("utf-8"))
    return previous, diff


def _written_vs_counted(stages: dict, counts: dict, tables: Dict[str, Table]) -> list:
    """Rows in parquet/ and rejects/ must equal what the counters say."""
    problems = []
    for table, spec in tables.items():
        counted = stages.get(spec.stage, {}).get(spec.counter, 0)
        written = counts["tables"][table]["total"]
        if counted != written:
            problems.append(f"{spec.stage}.{spec.counter} = {counted} but parquet/{table}/ "
                            f"has {written} rows")
    for stage_name, levels in counts["rejects"]["by_stage"].items():
        for level, by_reason in levels.items():
            for reason, rows in by_reason.items():
                counted = stages.get(stage_name, {}).get(f"{level}.rejected.{reason}", 0)
                if counted != rows:
                    problems.append(f"rejects/ has {rows} rows {stage_name}/{level}/{reason} "
                                    f"but the counter says {counted}")
    counted_rejects = sum(v for names in stages.values() for k, v in names.items()
                          if ".rejected." in k)
    if counted_rejects != counts["rejects"]["total"]:
        problems.append(f"{counted_rejects} rejects counted but {counts['rejects']['total']} written")
    return problems


def code_revision() -> dict:
    """The git commit of this code (and whether the tree had changes), when known."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=True, timeout=10).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, check=True, timeout=10).stdout.strip())
        return {"commit": commit, "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown", "dirty": None}


def describe_input(path: Optional[str], relocate: Optional[Relocate] = None) -> Optional[dict]:
    """Path (relative to the input root), size and sha256 of an input file (the manifest,
    not the videos it lists)."""
    if not path:
        return None
    sha256, size = content_sha256_and_size(path)
    return {"path": relocate.path(path) if relocate else path, "bytes": size, "sha256": sha256}


def print_summary(final: str, counts: dict) -> None:
    rejects = counts["rejects"]
    shown = final
    if FileSystems.get_scheme(final) is None:  # as the user would type it, from here
        relative = os.path.relpath(final)
        shown = final if relative.startswith("..") else relative
    lines = [f"release: {shown}"]
    for table, rows in counts["tables"].items():
        lines.append(f"  {table}: {rows['total']}  " + "  ".join(
            f"{split}={n}" for split, n in sorted(rows["by_split"].items())))
    lines += [f"  rejects: {rejects['total']}  " + "  ".join(
                 f"{reason}={n}" for reason, n in sorted(rejects["by_reason"].items()))]
    explorer = FileSystems.join(shown, EXPLORER_DIR, "index.html")
    if FileSystems.get_scheme(final) is None and os.path.isfile(explorer):
        lines.append(f"  explorer: {explorer}")
    print("\n".join(lines), flush=True)

