"""Scale-out checks: `python -m pipelines check dataflow|portable [benchmark ...]`.

    dataflow   every benchmark's sample translated for Dataflow Runner v2, offline
               (dataflow.py): the graph translates, every DoFn pickles, the project stages
    portable   every sample built through Beam's portable Job API with workers in other
               processes, and compared with the in-process build (portable.py)

Both exit 1 naming what failed (2 for an unknown benchmark, before any work);
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
    parser.add_argument("check", choices=["dataflow", "portable"])
    parser.add_argument("benchmarks", nargs="*", help="default: every registered benchmark")
    args = parser.parse_args(argv)
    unknown = [name for name in args.benchmarks if name not in registry.BENCHMARKS]
    if unknown:
        print(f"error: unknown benchmark(s) {', '.join(unknown)}; known: "
              f"{', '.join(registry.names())}", file=sys.stderr)
        return 2
    names = args.benchmarks or registry.names()
    failures = []
    if args.check == "dataflow":
        from pipelines.scaleout.dataflow import translate
        for name in names:
            benchmark = registry.load(name)
            for config in benchmark.sample_configs():
                try:
                    print(translate(benchmark, config).line(), flush=True)
                except Exception as error:  # report every benchmark, then fail
                    failures.append(f"{name} ({config}): {type(error).__name__}: {error}")
    else:
        from pipelines.scaleout import portable
        with portable.worker_pool() as address, tempfile.TemporaryDirectory() as work:
            for name in names:
                benchmark = registry.load(name)
                for config in benchmark.sample_configs():
                    problems = portable.compare(benchmark, config, address,
                                                f"{work}/{name}-{config}")
                    failures += problems
                    print(f"{name} ({config}): portable runner "
                          + ("release equals the in-process one" if not problems
                             else f"{len(problems)} difference(s)"), flush=True)
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0
