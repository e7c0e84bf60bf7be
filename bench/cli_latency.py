"""How long the command line takes to answer what needs no work: CPU seconds (user +
system) of each command, in a process of its own, against the interpreter's floor.

    python -m bench.cli_latency [--repeat 3]

Each command runs as a user runs it (`python -m pipelines ...` from the repository root)
and is measured with resource.getrusage(RUSAGE_CHILDREN) around it: the CPU time of the
process and of anything it started, not wall time (the machine is shared). A command
runs `--repeat` times; the table shows the median. The errors are the ones a user makes
first (a mistyped `--set` key, a config name that does not exist, an input file that is
not there): each must answer in one line and exit 2 before anything heavy is imported
(issue 34: <= 1 CPU s each). Prints a table, then one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commands(scratch: str) -> List[Tuple[str, List[str], int]]:
    """(label, arguments of `python`, the exit code the command must give)."""
    build = ["-m", "pipelines", "imagecode", "build", "--config", "sample",
             "--output", os.path.join(scratch, "out"), "--version", "1.0.0"]
    return [
        ("floor: python -c pass", ["-c", "pass"], 0),
        ("python -m pipelines --help", ["-m", "pipelines", "--help"], 0),
        ("imagecode build --help", ["-m", "pipelines", "imagecode", "build", "--help"], 0),
        ("nlvr2 diff --help", ["-m", "pipelines", "nlvr2", "diff", "--help"], 0),
        ("build, mistyped --set key", build + ["--set", "mining.distance_treshold=0.3"], 2),
        ("build, unknown --config name", build[:5] + ["sampel"] + build[6:], 2),
        ("build, missing input file",
         build + ["--set", "inputs.videos=" + os.path.join(scratch, "missing.jsonl")], 2),
    ]


def cpu_seconds(argv: List[str], expect: int) -> float:
    """CPU seconds (user + system) of `python ARGV` and its children, from the root."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expect:
        raise SystemExit(f"cli_latency: python {' '.join(argv)} exited {done.returncode}, "
                         f"not {expect}:\n{done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(repeat: int) -> Dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        return {label: round(statistics.median(cpu_seconds(argv, expect) for _ in range(repeat)), 3)
                for label, argv, expect in commands(scratch)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cli_latency", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (the median is shown)")
    args = parser.parse_args(argv)
    figures = measure(args.repeat)
    width = max(map(len, figures))
    print(f"{'command':<{width}}  CPU s (median of {args.repeat})")
    for label, seconds in figures.items():
        print(f"{label:<{width}}  {seconds:6.2f}")
    print(json.dumps({"cpu_seconds": figures, "repeat": args.repeat}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
