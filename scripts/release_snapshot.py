"""What a set of builds published, as content digests, to show that a change of code
layout changed no output (issue 11: "behaviour is unchanged").

    .venv/bin/python scripts/release_snapshot.py build OUT_DIR SNAPSHOT.json
    .venv/bin/python scripts/release_snapshot.py compare BEFORE.json AFTER.json

`build` runs the README's make targets (so it works before and after a move of the
Python entry points) for the three embedded samples and for VSR from the public raw
file, into OUT_DIR, then records per release:
  - every Parquet table (parquet/<table>/ and rejects/) as row-sorted canonical JSON:
    row count and sha256 (row order and sharding carry no meaning);
  - every file under compat/, crowd/, tasks/, review/ and stats/: sha256 of its bytes;
  - every stage counter of the manifest (what came in, went out, was rejected, by stage).
The manifest, data card, release notes and plots hold times and paths, and
stats/cache_files.json names cache shards by run id, so they are left out; their counts are inside the tables. `compare` prints every difference and exits 1
when there is one.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILDS = {
    "imagecode": ["make", "build-imagecode"],
    "vsr": ["make", "build-vsr"],
    "bd2bb": ["make", "build-bd2bb"],
    "vsr-realdata": ["make", "build-vsr",
                     f"ANNOTATIONS={os.path.join(ROOT, '..', 'shared', 'realdata', 'vsr', 'all_vsr_raw_data.jsonl')}"],
}
FILE_FOLDERS = ("compat", "crowd", "tasks", "review", "stats")
SKIPPED_FILES = ("stats/cache_files.json",)  # names this build's cache shards by run id


def _canonical(value):
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


def table_digest(folder: str) -> dict:
    rows = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".parquet"):
            rows += pq.read_table(os.path.join(folder, name)).to_pylist()
    lines = sorted(json.dumps(_canonical(r), sort_keys=True, ensure_ascii=False) for r in rows)
    return {"rows": len(lines), "sha256": hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()}


def release_digest(release: str) -> dict:
    out = {"tables": {}, "files": {}, "counters": {}}
    with open(os.path.join(release, "MANIFEST.json")) as f:
        manifest = json.load(f)
    for stage, counters in manifest["stages"].items():   # every stage counter, by name
        for name, value in counters.items():
            out["counters"][f"{stage}/{name}"] = value
    parquet = os.path.join(release, "parquet")
    for table in sorted(os.listdir(parquet)) if os.path.isdir(parquet) else []:
        out["tables"][table] = table_digest(os.path.join(parquet, table))
    out["tables"]["rejects"] = table_digest(os.path.join(release, "rejects"))
    for folder in FILE_FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(release, folder)):
            for name in files:
                path = os.path.join(dirpath, name)
                if os.path.relpath(path, release) in SKIPPED_FILES:
                    continue
                with open(path, "rb") as f:
                    out["files"][os.path.relpath(path, release)] = hashlib.sha256(f.read()).hexdigest()
    return dict(sorted(out.items()))


def build(out_dir: str, snapshot: str) -> None:
    digests = {}
    for label, command in BUILDS.items():
        target = os.path.join(os.path.abspath(out_dir), label)
        subprocess.run([*command, f"OUT={target}", "VERSION=1.0.0"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        benchmark = label.split("-")[0]
        digests[label] = release_digest(os.path.join(target, benchmark, "1.0.0"))
        print(f"{label}: " + ", ".join(f"{t} {d['rows']}" for t, d in digests[label]["tables"].items()))
    with open(snapshot, "w") as f:
        json.dump(digests, f, indent=1, sort_keys=True)


def compare(before: str, after: str) -> int:
    a, b = json.load(open(before)), json.load(open(after))
    problems = []
    for label in sorted(a.keys() | b.keys()):
        for kind in ("tables", "files", "counters"):
            x, y = a.get(label, {}).get(kind, {}), b.get(label, {}).get(kind, {})
            for name in sorted(x.keys() | y.keys()):
                if x.get(name) != y.get(name):
                    problems.append(f"{label} {kind[:-1]} {name}: {x.get(name)} -> {y.get(name)}")
    print("\n".join(problems) if problems else "identical: every table, compat file, reject and counter")
    return 1 if problems else 0


if __name__ == "__main__":
    verb, *args = sys.argv[1:]
    sys.exit(build(*args) or 0 if verb == "build" else compare(*args))
