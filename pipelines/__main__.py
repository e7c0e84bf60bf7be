"""The command line: `python -m pipelines <benchmark> <command> ...`.

    python -m pipelines --help                         the benchmarks and commands
    python -m pipelines imagecode build --config sample --output releases --version 1.0.0
    python -m pipelines imagecode diff releases/imagecode/1.0.0 releases/imagecode/1.1.0
    python -m pipelines imagecode calibrate ...        a benchmark's own commands
    python -m pipelines verify releases/imagecode/1.0.0  a release against its MANIFEST.json
    python -m pipelines cache prune --cache C --releases R
    python -m pipelines approvals RELEASE RESULTS_CSV  MTurk's approve/reject file (docs/crowd.md)
    python -m pipelines htmlquestions RELEASE PAGE --output DIR   each HIT's HTMLQuestion (MTurk's API)
    python -m pipelines check dataflow|portable|flink [benchmark ...]   scale-out checks
    python -m pipelines cluster start|stop|status      a local Flink cluster (docs/scale-out.md)

Every command exits 0 when it did its job, 2 with one line on stderr for what the user
can fix (a wrong argument, an unknown benchmark or option, a bad config or input: found
before any work where it can be), and 1 for a failure of ours (with its traceback) or a
run the engine failed (one line: nothing was published), and 128 + signal with one line
when stopped (130 for Ctrl-C, 143 for SIGTERM; pipelines/stops.py). `verify` exits 1 with a line
per problem of the release against its manifest (a file, a value, a count); `diff`, and a
build that compares itself with a previous version, exit 2 with one line when a release
they read differs or has no manifest (pipelines/release/check/verify.py).
`--help`, `verify` and `diff` read pipelines/registry.py and the releases only: they import
no benchmark and no model library. Every command parses its arguments first, and `build`
also loads and checks its config and the inputs it names, before Beam, torch or a
benchmark is imported: `--help` at every level and every mistake of that kind answer in
well under a second (tests/test_cli_imports.py; bench/cli_latency.py measures it).
"""
from __future__ import annotations

# First of all, before any import that can take seconds: a stop (Ctrl-C, SIGTERM) from
# the first instant on ends the command with one line and exit 128 + signal, never a
# traceback from inside an import (pipelines/stops.py). Only when run as the command: a
# test that imports main() keeps its own handlers.
from pipelines import stops
if __name__ == "__main__":
    stops.install()

import sys  # noqa: E402
from typing import List, Optional  # noqa: E402

from pipelines import registry  # noqa: E402

COMMON = {"build": "build a release (--config NAME|PATH --output DIR --version X.Y.Z [--set K=V] [Beam options])",
          "diff": "what changed between two releases (config; per table the rows unchanged, "
                  "changed, moved between splits, added, removed, matched by the table's key)"}


def usage() -> str:
    lines = ["usage: python -m pipelines <benchmark> <command> [arguments]",
             "       python -m pipelines verify RELEASE_DIR   (a release against its MANIFEST.json)",
             "       python -m pipelines cache prune --cache DIR --releases DIR",
             "       python -m pipelines approvals RELEASE RESULTS_CSV [--output FILE]   (MTurk's approve/reject file)",
             "       python -m pipelines htmlquestions RELEASE PAGE --output DIR   (each HIT's HTMLQuestion, MTurk's API)",
             "       python -m pipelines check dataflow|portable|flink [benchmark ...]",
             "       python -m pipelines cluster start|stop|status [--taskmanagers N]", "",
             "benchmarks:"]
    width = max(map(len, registry.names()))
    lines += [f"  {name:<{width}}  {entry.title}" for name, entry in registry.BENCHMARKS.items()]
    lines += ["", "commands of every benchmark:"]
    lines += [f"  {verb:<9} {text}" for verb, text in COMMON.items()]
    lines += ["", "`python -m pipelines <benchmark> --help` lists a benchmark's own commands."]
    return "\n".join(lines)


def benchmark_usage(name: str) -> str:
    entry = registry.BENCHMARKS[name]
    commands = {**COMMON, **{verb: text for verb, (text, _) in entry.commands.items()}}
    return (f"usage: python -m pipelines {name} <command> [arguments]\n\n{entry.title}\n\n"
            "commands:\n" + "\n".join(f"  {verb:<9} {text}" for verb, text in commands.items()))


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name == "verify":
        from pipelines.release.check import verify
        return verify.main(rest)
    if name == "approvals":
        from pipelines.crowd import approvals
        return approvals.main(rest)
    if name == "htmlquestions":
        from pipelines.crowd import htmlquestions
        return htmlquestions.main(rest)
    if name == "cache":
        from pipelines import cache
        return cache.main(rest)
    if name == "check":
        from pipelines import scaleout
        return scaleout.main(rest)
    if name == "cluster":
        from pipelines.scaleout import flink
        return flink.main(rest)
    if name not in registry.BENCHMARKS:
        print(f"error: unknown benchmark {name!r}; known: {', '.join(registry.names())} "
              "(python -m pipelines --help)", file=sys.stderr)
        return 2
    if not rest or rest[0] in ("-h", "--help"):
        print(benchmark_usage(name), file=sys.stdout if rest else sys.stderr)
        return 0 if rest else 2
    verb, args = rest[0], rest[1:]
    if verb == "build":
        from pipelines import build
        return build.build_main(name, args)
    if verb == "diff":
        from pipelines.cli import parse_diff_args
        diff_args = parse_diff_args(args, prog=f"python -m pipelines {name} diff")
        from pipelines.release.check import diff   # Beam's FileSystems and Arrow: once it has work
        return diff.run(diff_args)
    if verb in registry.BENCHMARKS[name].commands:
        return registry.command(name, verb)(args)
    print(f"error: {name} has no command {verb!r}; try: python -m pipelines {name} --help",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(stops.run_process(main))
