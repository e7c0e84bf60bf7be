"""`python -m pipelines <benchmark> build`, the one runner: builds a release of any
registered benchmark (the release itself is written by pipelines/release/write/assemble.py).

    arguments, config + overrides (keys, types, ranges), the inputs the config names
    (checked by type), the release root and cache outside every folder an input reads
    (by device and inode), Beam options: all before Beam, torch or the benchmark is
    imported, so a mistake is one line within a second -> the benchmark loaded -> the
    embedded sample (if the config reads it, made on first use; its inputs checked then)
    -> benchmark.prepare (models, tools) -> output and cache writable -> Beam run into a
    staging folder -> counters reconciled, tables counted, at least one row in a main
    table -> data card, manifest, release notes -> rename

Everything a build shares lives here and in pipelines/release/; what differs lives in
the benchmark's package (pipelines/benchmark.py says what a benchmark provides).
"""
from __future__ import annotations

import argparse
import contextlib
import os
from typing import TYPE_CHECKING, List, Optional, Tuple, Union

from pipelines import cli, preflight, registry, stops
from pipelines.config import generating_sample, load_config, reads_sample
from transforms.io.paths import url_scheme

if TYPE_CHECKING:
    from pipelines import progress
    from pipelines.benchmark import Benchmark
    from pipelines.build_log import BuildLog


def build_parser(entry: registry.Registered) -> argparse.ArgumentParser:
    """`build`'s own arguments (pipelines/cli.py), read from the registry alone."""
    parser = argparse.ArgumentParser(
        prog=f"python -m pipelines {entry.name} build",
        description=f"Build a release of {entry.title}. Arguments not listed here are "
                    "Beam pipeline options (--runner, --direct_running_mode, ...).")
    cli.add_build_arguments(parser, configs=entry.config_names(), example_set=entry.example_set)
    return parser


def parse_build_args(benchmark: Union[str, Benchmark, registry.Registered],
                     argv: Optional[List[str]]) -> Tuple[argparse.Namespace, List[str]]:
    """(known args, the rest): what we do not know is for Beam (check_beam_args)."""
    return build_parser(_entry(benchmark)).parse_known_args(argv)


def check_beam_args(benchmark: Union[str, Benchmark, registry.Registered], beam_args: List[str]) -> None:
    """Every argument left by parse_build_args is a Beam pipeline option: else one line
    and exit 2, before any work (cli.check_beam_options; Beam is imported only when an
    argument is left)."""
    entry = _entry(benchmark)
    own = [o for a in build_parser(entry)._actions for o in a.option_strings]
    cli.check_beam_options(beam_args, entry.config_type, own_options=own)


def cache_root_of(config, output: str) -> Optional[str]:
    """`cache.dir`, else `<output>/.cache`; None when the config has no cache or it is off.
    (Without Beam: asked before Beam is imported, for the preflight.)"""
    cache = getattr(config, "cache", None)
    if cache is None or not cache.enabled:
        return None
    if cache.dir:
        return cache.dir
    return output.rstrip("/") + "/.cache" if url_scheme(output) else os.path.join(output, ".cache")


def build(benchmark: Union[str, Benchmark], argv: Optional[List[str]] = None) -> str:
    """Build one release; returns its folder. User-fixable problems raise UserError.

    Everything a user can get wrong in the command (arguments, config keys, types and
    ranges, the config's inputs, Beam options) is checked before Beam, torch or a
    benchmark is imported (seconds of start-up): the benchmark's registry entry names its
    config type, which imports neither (tests/test_cli_imports.py): a mistake there is the
    one line the command prints. From then on the build says what it is doing
    (pipelines/progress.py: a user error found later, by the benchmark's own preflight,
    comes after progress lines) and keeps a log (pipelines/build_log.py) of its lines and
    of what libraries would print beside them (transforms/core/quiet.py)."""
    entry = _entry(benchmark)
    args, beam_args = parse_build_args(entry, argv)
    cli.check_version(args.version)
    stops.leaves(f"nothing was published; version {args.version} is still unused")
    return _build(benchmark, entry, args, beam_args)


def _build(benchmark: Union[str, Benchmark], entry: registry.Registered, args: argparse.Namespace,
           beam_args: List[str]) -> str:
    """build() once its arguments are parsed: the config, its inputs, the benchmark."""
    if args.verbose:
        cli.configure_logging(verbose=True)
    config = load_config(entry.config_path(args.config), args.set, entry.config_type)
    sample = reads_sample(config)
    if not sample:   # the sample's files are made on first use, by the benchmark: below
        _check_inputs_and_outputs(config, args.output)
    check_beam_args(entry, beam_args)
    with _reporting(entry.name, args) as (reporter, log):
        if isinstance(benchmark, str):
            reporter.phase("loading the benchmark")   # Beam and its stages: seconds of imports
            benchmark = registry.load(benchmark)
        if sample:
            reporter.phase("preparing the sample")
            with generating_sample(benchmark.name):
                benchmark.ensure_sample(config)
            _check_inputs_and_outputs(config, args.output)
        return _run(benchmark, config, args, beam_args, reporter, log)


def _check_inputs_and_outputs(config, output: str) -> None:
    """The config's inputs, by their types, and the release root and cache outside every
    folder they read (pipelines/preflight.py): stat calls, no Beam."""
    preflight.check_inputs(config)
    preflight.check_outputs_outside_inputs(config, output, cache_root_of(config, output))


@contextlib.contextmanager
def _reporting(name: str, args: argparse.Namespace):
    """The build's progress reporter and its log (opened by `_run` once the output is
    known to be writable), third-party output kept in the log."""
    from pipelines import progress
    from pipelines.build_log import BuildLog, beam_records_into
    from transforms.core import quiet

    log = BuildLog()
    log.write(f"build {name} {args.version}: config {args.config}, output {args.output}, "
              f"set {args.set or []}")
    quiet.install()
    beam_records = contextlib.nullcontext() if args.verbose else beam_records_into(log.write)
    with quiet.quiet_environment_for_build() as quieted, \
            progress.reporting(enabled=not args.quiet, log=log.write) as reporter, \
            quiet.capture_into(log.write) as captured, beam_records:
        for variable, value in quieted.items():
            log.write(f"set {variable}={value} (model loaders' progress bars off)")
        try:
            yield reporter, log
        except BaseException as error:
            log.write(f"failed: {type(error).__name__}: {error}")
            raise
        else:
            counts = captured.counts()
            for kind, n in sorted(counts.items()):
                log.write(f"leptonica: {n} x {kind}")
            kept = sum(counts.values())
            reporter.close(f"built in {progress.duration(reporter.elapsed())}"
                           + (f", {kept} Leptonica messages kept" if kept else "")
                           + f" (log: {log.path})")
        finally:
            log.close()


def _run(benchmark: Benchmark, config, args: argparse.Namespace, beam_args: List[str],
         reporter: progress.Reporter, log: BuildLog) -> str:
    """The build itself, once everything it was given is known to be right: preflight of
    the benchmark's own (models, tools), outputs writable, the Beam run, the release."""
    # imported here, not above: build() has checked everything the user gave without them
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.beam_runners import counters_summed, is_local, run_failed, runner_for
    from pipelines.build_log import log_path
    from pipelines.release.cards.datacard import generated_note
    from pipelines.release.write import assemble as release
    from transforms.core.stage import read_stage_counts

    cache_root = cache_root_of(config, args.output)
    reporter.phase("loading models and tools")
    plan = benchmark.prepare(config, cache_root)
    preflight.check_outputs(args.output, cache_root)
    log.open(log_path(args.output, benchmark.name, args.version))
    options = PipelineOptions(beam_args)

    def execute(staging_dir: str):
        reporter.watch(benchmark.progress(plan))
        pipeline = beam.Pipeline(runner=runner_for(options), options=options)
        benchmark.build(pipeline, plan, staging_dir)
        try:
            result = counters_summed(pipeline.run())
            result.wait_until_finish()
            reporter.run_finished(read_stage_counts(result))
        except Exception as error:
            reporter.run_finished(None)
            user_error = benchmark.user_error(error)
            if user_error is not None:
                raise user_error from None
            if not is_local(options):  # the engine's trace is in its own logs
                raise run_failed(error, options) from error
            raise
        benchmark.after_run(plan, staging_dir)
        reporter.phase("writing the release")
        return result

    return release.build_release(
        benchmark=benchmark.release_name(plan.config), out=args.output, version=args.version,
        config=config, execute=execute, models=plan.models, inputs=plan.inputs,
        links=benchmark.links(plan), tables=benchmark.tables(plan), splits=benchmark.splits(plan),
        main_tables=benchmark.main_tables(plan),
        describe=lambda facts: benchmark.describe(plan, facts), cache_root=cache_root,
        check_counts=lambda stages: benchmark.check_counts(plan, stages),
        explorer=None if args.no_explorer else benchmark.explorer(plan),
        generated=generated_note(benchmark.name, benchmark.sample_generator) if reads_sample(config) else "")


def build_main(benchmark: Union[str, Benchmark], argv: Optional[List[str]] = None) -> int:
    """`build` as a command: progress logged, one line and exit 2 for a user error."""
    return cli.run_main(lambda args: build(benchmark, args), argv)


def _entry(benchmark: Union[str, Benchmark, registry.Registered]) -> registry.Registered:
    """The registry's entry of a benchmark given by name, object or entry (a Benchmark
    object passed in, e.g. a test's subclass, is registered under its name)."""
    if isinstance(benchmark, registry.Registered):
        return benchmark
    return registry.entry(benchmark if isinstance(benchmark, str) else benchmark.name)
