"""What a release holds, as content digests that ignore row order and sharding (the bytes
of a release: MANIFEST.json's checksums and `release_sha256`, pipelines/release/check/verify.py).

Two builds published the same thing when every table (and rejects/) has the same rows,
every compat/crowd/tasks/review/stats file the same bytes and every stage counter the
same value (but SKIPPED_COUNTERS, which count the run's workers, not the data). Row order
and the split of a table into shards carry no meaning, so a table is digested as its
rows in canonical JSON, sorted. Used to show that a code change or
another runner changed no output (scripts/release_snapshot.py, the portable-runner
check in pipelines/scaleout/portable.py).
"""
from __future__ import annotations

import hashlib
import json
import os

import pyarrow.parquet as pq

from pipelines.release.check.verify import load_build_record
from transforms.core.counts import merged

FILE_FOLDERS = ("compat", "crowd", "tasks", "review", "stats")
# Text files whose line order carries no meaning (the crowd task exports are Beam text
# sinks: their lines come in the order the runner ran the bundles): digested as their
# first line (the CSV header) and the rest sorted.
ORDERLESS = (("crowd/", ".csv"), ("crowd/", ".jsonl"))
# stats/cache_files.json named a build's cache shards by run id, so it differed per run:
# releases before issue 35 hold it (now MANIFEST.json `cache_files` alone lists them).
SKIPPED_FILES = ("stats/cache_files.json",)
# The worker pages are the task files rendered for a platform (transforms/crowd/pages.py):
# presentation, no decision of their own; the task files they are filled from are digested.
SKIPPED_FOLDERS = ("crowd/pages/", "crowd/labelstudio/")
# Counters of the run, not of the data: embed/model.loaded counts the worker processes that
# built an image encoder, so it follows the runner (Flink: each TaskManager's worker).
SKIPPED_COUNTERS = ("embed/model.loaded",)


def _canonical(value, root: str):
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str) and root:
        return value.replace(root, "")   # also inside a detail: "<path>: not JSON ..."
    if isinstance(value, dict):
        return {k: _canonical(v, root) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_canonical(v, root) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


def table_digest(folder: str, root: str = "") -> dict:
    """{"rows": n, "sha256": digest of the rows as sorted canonical JSON lines}. With
    `root`, input paths under it (a reject's `file`, a path inside its detail) are
    digested relative to it, so builds from two checkouts compare equal."""
    root = root.rstrip("/") + "/" if root else ""
    rows = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".parquet"):
            rows += pq.read_table(os.path.join(folder, name)).to_pylist()
    lines = sorted(json.dumps(_canonical(r, root), sort_keys=True, ensure_ascii=False) for r in rows)
    return {"rows": len(lines), "sha256": hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()}


def release_digest(release: str, root: str = "") -> dict:
    """{"tables": {table: digest}, "files": {path: sha256}, "counters": {stage/name: n}}.
    The counters are every counter of the run: the release's (MANIFEST.json `stages`)
    and its work's (BUILD.json `work`: what a cold cache computed is pinned too)."""
    out = {"tables": {}, "files": {}, "counters": {}}
    with open(os.path.join(release, "MANIFEST.json")) as f:
        stages = json.load(f)["stages"]
    for stage, counters in merged(stages, load_build_record(release).get("work", {})).items():
        for name, value in counters.items():
            if f"{stage}/{name}" not in SKIPPED_COUNTERS:
                out["counters"][f"{stage}/{name}"] = value
    parquet = os.path.join(release, "parquet")
    for table in sorted(os.listdir(parquet)) if os.path.isdir(parquet) else []:
        out["tables"][table] = table_digest(os.path.join(parquet, table), root)
    out["tables"]["rejects"] = table_digest(os.path.join(release, "rejects"), root)
    for folder in FILE_FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(release, folder)):
            for name in files:
                path = os.path.join(dirpath, name)
                relative = os.path.relpath(path, release)
                if relative in SKIPPED_FILES or relative.startswith(SKIPPED_FOLDERS):
                    continue
                with open(path, "rb") as f:
                    data = f.read()
                if any(relative.startswith(folder) and relative.endswith(suffix) for folder, suffix in ORDERLESS):
                    first, *rest = data.split(b"\n") if data else [b""]
                    data = b"\n".join([first] + sorted(rest))
                out["files"][relative] = hashlib.sha256(data).hexdigest()
    return dict(sorted(out.items()))


def differences(a: dict, b: dict, label: str = "") -> list:
    """Lines naming every table, file or counter that differs between two digests."""
    problems = []
    for kind in ("tables", "files", "counters"):
        x, y = a.get(kind, {}), b.get(kind, {})
        for name in sorted(x.keys() | y.keys()):
            if x.get(name) != y.get(name):
                problems.append(f"{label}{kind[:-1]} {name}: {x.get(name)} -> {y.get(name)}".strip())
    return problems
