"""Does a benchmark give the same release on another runner as in process?

A sample is built twice, in process (Beam's FnApiRunner) and with the runner options of
a check (pipelines/scaleout/portable.py, flink.py), and the two releases are compared
twice over:

- by content: table by table (rows sorted), file by file and counter by counter
  (pipelines/release/check/digest.py), which names the rows or counters that differ;
- byte for byte: every file's checksum in MANIFEST.json, every value of the manifest and
  the whole-release digest (`release_sha256`, which covers both): a release is
  reproducible when a rebuild, on any runner, has the same digest. The build's own
  record (BUILD.json: its time, its cache, its workers' work) is not compared.

Both builds leave the release explorer out: it is written by the driver after the run,
whatever the runner.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import List, Sequence

from pipelines import build as build_command
from pipelines.benchmark import Benchmark
from pipelines.release.check.digest import differences, release_digest
from pipelines.release.check.verify import DIGEST_KEYS, RELEASE_SHA256, load_manifest

VERSION = "1.0.0"


@dataclasses.dataclass
class Comparison:
    benchmark: str
    config: str
    runner: str                 # how the second build ran, for the report
    problems: List[str]         # one line per table, file or counter that differs
    in_process_s: float
    other_s: float
    release: str                # the second build's release folder

    def line(self) -> str:
        verdict = ("release equals the in-process one" if not self.problems
                   else f"{len(self.problems)} difference(s) from the in-process release")
        return (f"{self.benchmark} ({self.config}): {self.runner} {verdict} "
                f"({self.other_s:.0f} s; in process {self.in_process_s:.0f} s)")


def build(benchmark: Benchmark, config_name: str, output: str,
          runner_options: Sequence[str] = ()) -> str:
    """One build of `config_name` into `output`; returns the release folder."""
    return build_command.build(benchmark, ["--config", config_name, "--version", VERSION,
                                           "--output", output, "--no-explorer", *runner_options])


def compare(benchmark: Benchmark, config_name: str, work: str, runner_options: Sequence[str],
            runner_label: str) -> Comparison:
    """Build in process and with `runner_options` under `work`; what differs."""
    started = time.monotonic()
    in_process = build(benchmark, config_name, os.path.join(work, "in-process"))
    middle = time.monotonic()
    other = build(benchmark, config_name, os.path.join(work, "other"), runner_options)
    ended = time.monotonic()
    label = f"{benchmark.name} ({config_name}) "
    problems = (differences(release_digest(in_process), release_digest(other), label=label)
                + checksum_differences(in_process, other, label=label))
    return Comparison(benchmark.name, config_name, runner_label, problems,
                      in_process_s=middle - started, other_s=ended - middle, release=other)


def checksum_differences(a: str, b: str, label: str = "") -> List[str]:
    """Lines naming every file whose bytes differ between releases `a` and `b` (their
    MANIFEST.json checksums), every value of the manifests that differs, and the
    whole-release digest when it differs. [] when `b` reproduces `a` byte for byte."""
    old, new = load_manifest(a), load_manifest(b)
    problems = [f"{label}file bytes {path}: {_short(old['files'].get(path))} -> "
                f"{_short(new['files'].get(path))}"
                for path in sorted(old["files"].keys() | new["files"].keys())
                if old["files"].get(path) != new["files"].get(path)]
    if old.get(RELEASE_SHA256) != new.get(RELEASE_SHA256):
        problems.append(f"{label}{RELEASE_SHA256}: {_short(old.get(RELEASE_SHA256))} -> "
                        f"{_short(new.get(RELEASE_SHA256))}")
    problems += [f"{label}MANIFEST.json {key} differs" for key in sorted(old.keys() | new.keys())
                 if key not in DIGEST_KEYS and old.get(key) != new.get(key)]
    return problems


def _short(sha) -> str:
    return sha[:12] if sha else "(none)"
