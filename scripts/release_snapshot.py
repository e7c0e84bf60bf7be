"""What a set of builds published, as content digests, to show that a change of code
layout changed no output (issue 11: "behaviour is unchanged").

    .venv/bin/python scripts/release_snapshot.py build OUT_DIR SNAPSHOT.json
    .venv/bin/python scripts/release_snapshot.py compare BEFORE.json AFTER.json
    .venv/bin/python scripts/release_snapshot.py samples OUT_DIR SNAPSHOT.json

`samples` builds every registered benchmark's sample configs (pipelines/registry.py) and
the two public-file builds (VSR's raw annotations, NLVR2's dev + test1) through
`python -m pipelines`, with the same digests: tests/test_conformance.py compares the
samples with tests/data/sample_decisions.json, written by this verb.

`build` runs the README's make targets (so it works before and after a move of the
Python entry points) for the three embedded samples and for VSR from the public raw
file, into OUT_DIR, then records per release:
  - every Parquet table (parquet/<table>/ and rejects/) as row-sorted canonical JSON:
    row count and sha256 (row order and sharding carry no meaning);
  - every file under compat/, crowd/, tasks/, review/ and stats/: sha256 of its bytes;
  - every stage counter of the manifest (what came in, went out, was rejected, by stage).
The manifest, data card, release notes and plots hold times and paths, and
stats/cache_files.json names cache shards by run id, so they are left out; their counts
are inside the tables (pipelines/release/check/digest.py). `compare` prints every difference
and exits 1 when there is one.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run as a script: the project's packages come from this checkout

from pipelines.release.check.digest import differences, release_digest  # noqa: E402

BUILDS = {
    "imagecode": ["make", "build-imagecode"],
    "vsr": ["make", "build-vsr"],
    "bd2bb": ["make", "build-bd2bb"],
    "vsr-realdata": ["make", "build-vsr",
                     f"ANNOTATIONS={os.path.normpath(os.path.join(ROOT, '..', 'shared', 'realdata', 'vsr', 'all_vsr_raw_data.jsonl'))}"],
}


REALDATA = os.path.normpath(os.path.join(ROOT, "..", "..", "shared", "realdata"))
if not os.path.isdir(REALDATA):   # a checkout beside shared/ rather than in a worktree folder
    REALDATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "realdata"))
PUBLIC_BUILDS = {
    "vsr-realdata": ("vsr", "paper", ["--set", "inputs.annotations=[{}]".format(
        os.path.join(REALDATA, "vsr", "all_vsr_raw_data.jsonl"))]),
    "nlvr2-public": ("nlvr2", "public", ["--set", "inputs.public=[{},{}]".format(
        os.path.join(REALDATA, "nlvr2", "dev.json"), os.path.join(REALDATA, "nlvr2", "test1.json"))]),
}


def samples(out_dir: str, snapshot: str, only: str = "") -> None:
    """Every sample config of every benchmark, and the public-file builds, digested."""
    from pipelines import registry
    builds = {f"{name}-{config}": (name, config, [])
              for name in registry.names() for config in registry.load(name).sample_configs()}
    builds.update(PUBLIC_BUILDS)
    digests = {}
    for label, (benchmark, config, extra) in builds.items():
        if only and label not in only.split(","):
            continue
        target = os.path.join(os.path.abspath(out_dir), label)
        subprocess.run([sys.executable, "-m", "pipelines", benchmark, "build", "--config", config,
                        *extra, "--output", target, "--version", "1.0.0", "--quiet"],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": ROOT})
        # FG names its folder after the dataset (mscoco-fg, flickr30k-fg); .logs/ and
        # .cache/ sit beside it
        folder = [n for n in os.listdir(target) if not n.startswith(".")][0] if benchmark == "fg" else benchmark
        release = os.path.join(target, folder, "1.0.0")
        digests[label] = release_digest(release, root=ROOT)
        print(f"{label}: " + ", ".join(f"{t} {d['rows']}" for t, d in digests[label]["tables"].items()),
              flush=True)
    with open(snapshot, "w") as f:
        json.dump(digests, f, indent=1, sort_keys=True)


def build(out_dir: str, snapshot: str) -> None:
    digests = {}
    for label, command in BUILDS.items():
        target = os.path.join(os.path.abspath(out_dir), label)
        subprocess.run([*command, f"OUT={target}", "VERSION=1.0.0"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        benchmark = label.split("-")[0]
        # config paths are absolute once loaded: compare them relative to the checkout
        digests[label] = release_digest(os.path.join(target, benchmark, "1.0.0"), root=ROOT)
        print(f"{label}: " + ", ".join(f"{t} {d['rows']}" for t, d in digests[label]["tables"].items()))
    with open(snapshot, "w") as f:
        json.dump(digests, f, indent=1, sort_keys=True)


def compare(before: str, after: str) -> int:
    a, b = json.load(open(before)), json.load(open(after))
    problems = []
    for label in sorted(a.keys() | b.keys()):
        problems += differences(a.get(label, {}), b.get(label, {}), label=f"{label} ")
    print("\n".join(problems) if problems else "identical: every table, compat file, reject and counter")
    return 1 if problems else 0


if __name__ == "__main__":
    verb, *args = sys.argv[1:]
    if verb == "compare":
        sys.exit(compare(*args))
    sys.exit({"build": build, "samples": samples}[verb](*args) or 0)
