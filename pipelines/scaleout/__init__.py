"""Scale-out checks: `python -m pipelines check dataflow|portable|flink [benchmark ...]`.

    dataflow   every benchmark's sample translated for Dataflow Runner v2, offline
               (dataflow.py): the graph translates, every DoFn pickles, the project stages
    portable   every sample built through Beam's portable Job API with workers in other
               processes, and compared with the in-process build (portable.py)
    flink      every sample built on a Flink cluster of separate JVMs started here (two
               TaskManagers), compared with the in-process build, and its subtasks shown
               by Flink's REST API to have run on both TaskManagers (flink.py)

Each exits 1 naming what failed (2 for an unknown benchmark, before any work);
docs/scale-out.md says what each proves.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from typing import List, Optional

from pipelines import registry


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines check",
        description="Scale-out checks over every registered benchmark's sample configs.")
    parser.add_argument("check", choices=["dataflow", "portable", "flink"])
    parser.add_argument("benchmarks", nargs="*", help="default: every registered benchmark")
    args = parser.parse_args(argv)
    unknown = [name for name in args.benchmarks if name not in registry.BENCHMARKS]
    if unknown:
        print(f"error: unknown benchmark(s) {', '.join(unknown)}; known: "
              f"{', '.join(registry.names())}", file=sys.stderr)
        return 2
    names = args.benchmarks or registry.names()
    samples = [(registry.load(name), config) for name in names
               for config in registry.load(name).sample_configs()]
    if args.check == "dataflow":
        failures = _dataflow(samples)
    elif args.check == "portable":
        failures = _portable(samples)
    else:
        from pipelines.scaleout import flink_check
        from transforms.core.errors import UserError
        try:
            failures = flink_check.run(samples)
        except UserError as error:       # java or the jars are missing: say what to run
            print(f"error: {error}", file=sys.stderr)
            return 2
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


def _dataflow(samples) -> List[str]:
    from pipelines.scaleout.dataflow import translate
    failures = []
    for benchmark, config in samples:
        try:
            print(translate(benchmark, config).line(), flush=True)
        except Exception as error:  # report every benchmark, then fail
            failures.append(f"{benchmark.name} ({config}): {type(error).__name__}: {error}")
    return failures


def _portable(samples) -> List[str]:
    from pipelines.scaleout import compare, portable, workers
    failures = []
    with workers.worker_pool() as address, tempfile.TemporaryDirectory() as work:
        for benchmark, config in samples:
            result = compare.compare(benchmark, config, f"{work}/{benchmark.name}-{config}",
                                     portable.portable_options(address), "portable runner")
            failures += result.problems
            print(result.line(), flush=True)
    return failures
