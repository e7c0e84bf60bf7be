"""Which builds are running, and the garbage of those that are not.

A build that dies without cleaning up (kill -9, a lost machine, a full disk) leaves its
hidden staging folder under `<out>/<benchmark>/` and Beam's `beam-temp-<run id>-*`
folders under the cache. Nothing else can tell them from the files of a build that is
still writing, so every build holds a lock while it runs:

    <out>/<benchmark>/.<version>.staging-<uuid>.lock     beside its staging folder
    <cache>/.runs/<benchmark>-<uuid>.lock                 when it uses a cache

A lock names the host, the process id and the process's start time. A lock is dead when
it was taken on this host and that process is gone (or the pid now belongs to a process
that started later); on another host we cannot tell, so its files are left alone. The
next build, and `make cache-prune`, remove the staging folders and temp folders whose
lock is dead or missing (a folder without a lock was left by a build that predates
locks or crashed before writing one).

`cache prune` holds a lock of its own there too (`<cache>/.runs/prune-<uuid>.lock`), and
the two never run at once on one cache: prune refuses to start while a build's lock is
alive (or taken on another host), since a running build reads shards that no manifest
names yet; a build refuses to start while a prune's is. Each takes its lock first and
looks for the other's second, so two that start together cannot both go on.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import socket
from typing import List, Optional

from apache_beam.io.filesystems import FileSystems

log = logging.getLogger("pipelines.release.write.runs")

LOCK_SUFFIX = ".lock"
STAGING_MARK = ".staging-"
CACHE_RUNS_DIR = ".runs"
BEAM_TEMP_PREFIX = "beam-temp-"
PRUNE_PREFIX = "prune-"   # a `cache prune`'s run id in <cache>/.runs/


def _start_time(pid: int) -> Optional[str]:
    """The process's start time in clock ticks since boot (Linux), or None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            # the command name (field 2) may hold spaces; fields after its ")" are fixed
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def this_process() -> dict:
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "started": _start_time(pid)}


def is_alive(holder: dict) -> Optional[bool]:
    """True/False for a lock taken on this host; None when it was taken elsewhere."""
    if holder.get("host") != socket.gethostname():
        return None
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    started = _start_time(pid)
    return started is None or holder.get("started") in (None, started)


def write_lock(path: str) -> None:
    with FileSystems.create(path, mime_type="application/json") as f:
        f.write(json.dumps(this_process(), sort_keys=True).encode("utf-8"))


def read_lock(path: str) -> Optional[dict]:
    try:
        with FileSystems.open(path, compression_type="uncompressed") as f:
            holder = json.loads(f.read().decode("utf-8"))
        return holder if isinstance(holder, dict) else {}
    except (OSError, ValueError):
        return None


def remove_quietly(paths: List[str]) -> None:
    """Delete files or folders (recursively); a path already gone is fine."""
    for path in paths:
        try:
            if FileSystems.get_scheme(path) in (None, "file") and os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            elif FileSystems.exists(path):
                FileSystems.delete([path])
        except OSError as e:
            log.warning("could not remove %s: %s", path, e)


def _gone(lock_path: str) -> bool:
    """The lock's holder is gone: the lock is missing, unreadable or dead."""
    if not FileSystems.exists(lock_path):
        return True
    holder = read_lock(lock_path)
    return holder is None or is_alive(holder) is False


def children(folder: str) -> List[str]:
    """Names directly inside a local or remote folder."""
    if FileSystems.get_scheme(folder) in (None, "file"):
        try:
            return sorted(os.listdir(folder))
        except OSError:
            return []
    prefix = folder.rstrip("/") + "/"
    names = set()
    for m in FileSystems.match([prefix + "**"])[0].metadata_list:
        names.add(m.path[len(prefix):].split("/", 1)[0])
    return sorted(names)


def staging_lock_path(staging: str) -> str:
    return staging.rstrip("/") + LOCK_SUFFIX


def cache_lock_path(cache_root: str, run_id: str) -> str:
    return FileSystems.join(cache_root, CACHE_RUNS_DIR, run_id + LOCK_SUFFIX)


def stale_staging(benchmark_dir: str) -> List[str]:
    """Staging folders of builds that are gone, and their locks (a lock whose staging
    folder is already gone too)."""
    stale = []
    names = children(benchmark_dir)
    for name in names:
        if not (name.startswith(".") and STAGING_MARK in name):
            continue
        path = FileSystems.join(benchmark_dir, name)
        if name.endswith(LOCK_SUFFIX):
            if name[:-len(LOCK_SUFFIX)] not in names and _gone(path):
                stale.append(path)
            continue
        if _gone(staging_lock_path(path)):
            stale.append(path)
            if name + LOCK_SUFFIX in names:
                stale.append(staging_lock_path(path))
    return stale


def stale_staging_under(release_root: str) -> List[str]:
    """stale_staging of every benchmark folder of a release root (`make cache-prune`)."""
    return [path for name in children(release_root) if not name.startswith(".")
            for path in stale_staging(FileSystems.join(release_root, name))]


def sweep_release_dir(benchmark_dir: str) -> List[str]:
    """Remove staging folders (and their locks) of builds that are gone; returns the
    folders."""
    removed = stale_staging(benchmark_dir)
    remove_quietly(removed)
    for path in removed:
        log.info("removed what a stopped build left: %s", path)
    return [p for p in removed if not p.endswith(LOCK_SUFFIX)]


def run_id_of_temp(name: str) -> Optional[str]:
    """`beam-temp-<run id>-<hex>` -> run id (Beam appends one uuid hex to the prefix)."""
    if not name.startswith(BEAM_TEMP_PREFIX):
        return None
    rest = name[len(BEAM_TEMP_PREFIX):]
    return rest.rsplit("-", 1)[0] if "-" in rest else None


def stale_cache_temps(cache_root: str) -> List[str]:
    """Beam temp folders under the cache whose build is gone."""
    stale = []
    for stage in children(cache_root):
        if stage == CACHE_RUNS_DIR:
            continue
        stage_dir = FileSystems.join(cache_root, stage)
        for name in children(stage_dir):
            run_id = run_id_of_temp(name)
            if run_id is not None and _gone(cache_lock_path(cache_root, run_id)):
                stale.append(FileSystems.join(stage_dir, name))
    return stale


def sweep_cache(cache_root: str) -> List[str]:
    """Remove Beam temp folders under the cache whose build is gone, and dead run locks."""
    removed = stale_cache_temps(cache_root)
    runs = FileSystems.join(cache_root, CACHE_RUNS_DIR)
    for name in children(runs):
        if name.endswith(LOCK_SUFFIX) and _gone(FileSystems.join(runs, name)):
            removed.append(FileSystems.join(runs, name))
    remove_quietly(removed)
    for path in removed:
        log.info("removed what a stopped build left: %s", path)
    return [p for p in removed if not p.endswith(LOCK_SUFFIX)]


def live_cache_locks(cache_root: str, prunes: bool) -> List[str]:
    """The locks in `<cache>/.runs/` of builds (`prunes` False) or of `cache prune`s (True)
    that may still run: alive on this host, or taken on another."""
    folder = FileSystems.join(cache_root, CACHE_RUNS_DIR)
    return [FileSystems.join(folder, name) for name in children(folder)
            if name.endswith(LOCK_SUFFIX) and name.startswith(PRUNE_PREFIX) == prunes
            and not _gone(FileSystems.join(folder, name))]


def holder_words(lock_path: str) -> str:
    """Who holds a lock, as a line says it: "pid 123 on host-a"."""
    holder = read_lock(lock_path) or {}
    return f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}"


def temp_dirs_of_run(cache_root: str, run_id: str) -> List[str]:
    """This run's Beam temp folders under the cache (removed when the build fails)."""
    found = []
    for stage in children(cache_root):
        stage_dir = FileSystems.join(cache_root, stage)
        found += [FileSystems.join(stage_dir, n) for n in children(stage_dir)
                  if run_id_of_temp(n) == run_id]
    return found
