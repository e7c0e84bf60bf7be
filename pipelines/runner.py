"""The one runner: builds a release of any registered benchmark.

    config + overrides -> the embedded sample (if the config reads it) -> preflight (the
    inputs the config names, checked by type; then benchmark.prepare) -> output and cache
    writable -> Beam run into a staging folder -> counters reconciled, tables counted, at
    least one row in a main table -> data card, manifest, release notes -> rename

Everything a build shares lives here and in pipelines/release/; what differs lives in
the benchmark's package (pipelines/benchmark.py says what a benchmark provides).
"""
from __future__ import annotations

import argparse
from typing import List, Optional, Union

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import cli, preflight, progress, registry
from pipelines.benchmark import Benchmark
from pipelines.config import load_config
from pipelines.release import build as release
from pipelines.release.datacard import generated_note
from pipelines.runners import counters_summed, is_local, run_failed, runner_for
from transforms.core.stage import read_stage_counts


def parse_build_args(benchmark: Benchmark, argv: Optional[List[str]]):
    """(known args, Beam pipeline options): arguments we do not know go to Beam, if Beam
    knows them (cli.check_beam_options: else one line and exit 2, before any work)."""
    parser = argparse.ArgumentParser(
        prog=f"python -m pipelines {benchmark.name} build",
        description=f"Build a release of {benchmark.title}. Arguments not listed here are "
                    "Beam pipeline options (--runner, --direct_running_mode, ...).")
    cli.add_build_arguments(parser, configs=benchmark.config_names())
    args, beam_args = parser.parse_known_args(argv)
    cli.check_beam_options(beam_args, benchmark.config_type,
                           own_options=[o for a in parser._actions for o in a.option_strings])
    return args, beam_args


def cache_root_of(config, output: str) -> Optional[str]:
    """`cache.dir`, else `<output>/.cache`; None when the config has no cache or it is off."""
    cache = getattr(config, "cache", None)
    if cache is None or not cache.enabled:
        return None
    return cache.dir or FileSystems.join(output, ".cache")


def build(benchmark: Union[str, Benchmark], argv: Optional[List[str]] = None) -> str:
    """Build one release; returns its folder. User-fixable problems raise UserError."""
    if isinstance(benchmark, str):
        benchmark = registry.load(benchmark)
    args, beam_args = parse_build_args(benchmark, argv)
    if args.verbose:
        cli.configure_logging(verbose=True)
    config = load_config(benchmark.config_path(args.config), args.set, benchmark.config_type)
    benchmark.ensure_sample(config)
    cache_root = cache_root_of(config, args.output)
    preflight.check_inputs(config)
    plan = benchmark.prepare(config, cache_root)
    preflight.check_outputs(args.output, cache_root)
    options = PipelineOptions(beam_args)

    def execute(staging_dir: str):
        pipeline = beam.Pipeline(runner=runner_for(options), options=options)
        benchmark.build(pipeline, plan, staging_dir)
        try:
            with progress.reporting(benchmark.progress(plan), enabled=not args.quiet) as reporter:
                result = counters_summed(pipeline.run())
                result.wait_until_finish()
                if reporter is not None:
                    reporter.finish(read_stage_counts(result))
        except Exception as error:
            user_error = benchmark.user_error(error)
            if user_error is not None:
                raise user_error from None
            if not is_local(options):  # the engine's trace is in its own logs
                raise run_failed(error, options) from error
            raise
        benchmark.after_run(plan, staging_dir)
        return result

    return release.build_release(
        benchmark=benchmark.release_name(plan.config), out=args.output, version=args.version,
        config=config, execute=execute, models=plan.models, inputs=plan.inputs,
        links=benchmark.links(plan), tables=benchmark.tables(plan), splits=benchmark.splits(plan),
        main_tables=benchmark.main_tables(plan),
        describe=lambda facts: benchmark.describe(plan, facts), cache_root=cache_root,
        check_counts=lambda stages: benchmark.check_counts(plan, stages),
        explorer=None if args.no_explorer else benchmark.explorer(plan),
        generated=generated_note(benchmark.name) if benchmark.reads_sample(config) else "")


def build_main(benchmark: Union[str, Benchmark], argv: Optional[List[str]] = None) -> int:
    """`build` as a command: progress logged, one line and exit 2 for a user error."""
    return cli.run_main(lambda args: build(benchmark, args), argv)
