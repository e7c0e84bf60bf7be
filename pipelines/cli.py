"""The command line every benchmark shares: the arguments of `build` (config, overrides,
output, version) and of `diff`, and how a command ends: exit 0 on success, one line and
exit 2 for what a user can fix (found before any work where it can be), exit 1 with the
traceback for a failure of ours.

Arguments a build does not know are handed to Beam as pipeline options (--runner,
--direct_running_mode, --project, --setup_file, ...), but only those Beam knows: Beam
itself warns about any other and drops it, so `--rules.enforce=true` (no `--set`) built a
release with the config value unchanged. An unknown option is one line and exit 2
before any work, naming the `--set` it may have meant.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import errno
import logging
import re
import sys
from typing import Callable, Iterable, List, Optional

from pipelines.stops import Stopped
from transforms.core.errors import RunFailed, UserError
from transforms.io.paths import absolute_path

# A release version (README, "Building from your own data"): MAJOR.MINOR.PATCH of semantic versioning 2.0.0,
# ASCII digits without leading zeros, an optional pre-release after "-" (dot-separated
# identifiers of [0-9A-Za-z-], a numeric one without leading zeros), at most 64
# characters. No "+build" part: semver orders 1.0.0+a and 1.0.0+b equal, and the release
# notes compare a version with the highest one below it. Checked before any work: the
# version names a folder (and a URL) of the release, which takes safe names only
# (pipelines/release/write/manifest.py version_dir); a version this rule let through and the
# folder did not ("+build", a non-ASCII digit, 300 digits) failed there, after the
# whole run, with a traceback and exit 1.
MAX_VERSION_CHARS = 64
_NUMBER = r"(?:0|[1-9][0-9]*)"
_PRE_RELEASE_ID = rf"(?:{_NUMBER}|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
VERSION_PATTERN = re.compile(rf"{_NUMBER}\.{_NUMBER}\.{_NUMBER}(?:-{_PRE_RELEASE_ID}(?:\.{_PRE_RELEASE_ID})*)?",
                             re.ASCII)


def add_build_arguments(parser: argparse.ArgumentParser, configs=(), example_set: str = "") -> None:
    """--config, --set, --output, --version, --quiet, --verbose, --no-explorer: what every
    build takes. `example_set` is a KEY=VALUE of the benchmark's own config."""
    named = f" or a name: {', '.join(configs)}" if configs else ""
    example = f", e.g. {example_set}" if example_set else ""
    parser.add_argument("--config", required=True,
                        help=f"YAML config: a path{named} (pipelines/<benchmark>/configs/)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override a config value{example} (repeatable)")
    parser.add_argument("--output", required=True, type=absolute_path,
                        help="release root: writes <output>/<benchmark>/<version>/")
    parser.add_argument("--version", required=True,
                        help="release version: MAJOR.MINOR.PATCH[-PRE.RELEASE], e.g. 1.2.0 or "
                             "2.0.0-rc.1 (semver, ASCII digits, no leading zeros, no +build, "
                             f"at most {MAX_VERSION_CHARS} characters)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines on stderr (items done of the total per main "
                             "stage, rate, time left)")
    parser.add_argument("--verbose", action="store_true",
                        help="also the INFO log lines of Beam and of the stages (by default a "
                             "build shows its progress lines, warnings and errors only)")
    parser.add_argument("--no-explorer", action="store_true",
                        help="write no explorer/ (the static pages to browse the release, its "
                             "rejects and its changes; see docs/explorer.md)")


def parse_diff_args(argv: List[str], prog: str = "python -m pipelines BENCHMARK diff") -> argparse.Namespace:
    """The arguments of `diff OLD NEW [--json] [--examples N]` (pipelines/release/check/diff.py
    run), parsed before the comparison's modules (Beam's FileSystems, Arrow) are loaded."""
    parser = argparse.ArgumentParser(prog=prog, description="What changed between two releases: "
                                     "config, and per table the rows added, removed, moved "
                                     "between splits or changed.")
    parser.add_argument("old", help="version folder, e.g. releases/imagecode/1.0.0")
    parser.add_argument("new", help="version folder, e.g. releases/imagecode/1.1.0")
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--examples", type=int, default=10, help="keys listed per change kind")
    return parser.parse_args(argv)


class UsageError(UserError):
    """A command line the command cannot run as given (an option nobody knows)."""


def check_beam_options(args: List[str], config_type: Optional[type] = None,
                       own_options: Iterable[str] = ()) -> None:
    """Raise UsageError unless every argument in `args` (what the command's own parser
    left) is a Beam pipeline option. An option that looks like a config key of
    `config_type` (dotted, or one of its top-level fields) is told the `--set` to use;
    any other gets the closest option name, of the command's own or Beam's."""
    if not args:
        return   # nothing for Beam: its parser (and Beam) is not even loaded
    parser = beam_option_parser()
    parser.exit_on_error = False   # a bad value of a Beam option: one line, not its usage
    try:
        _, unknown = parser.parse_known_args(args)
    except argparse.ArgumentError as e:
        raise UsageError(str(e)) from None
    if not unknown:
        return
    first = unknown[0]
    if not first.startswith("-"):
        raise UsageError(f"unexpected argument {first!r} (options start with --)")
    name, has_value, value = first.lstrip("-").partition("=")
    if not has_value and len(unknown) > 1 and not unknown[1].startswith("-"):
        value = unknown[1]
    if _looks_like_config_key(name, config_type):
        raise UsageError(f"unknown option {first}: config values are set with --set, "
                         f"e.g. --set {name}={value or 'VALUE'}")
    known = [o for a in parser._actions for o in a.option_strings] + list(own_options)
    close = difflib.get_close_matches(first.split("=", 1)[0], known, n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise UsageError(f"unknown option {first}: neither an option of this command nor a Beam "
                     f"pipeline option{hint}")


def beam_option_parser() -> argparse.ArgumentParser:
    """The parser of every option Beam's PipelineOptions know, as Beam builds it (it hands
    the parser to `add_extra_args_fn`, its public hook), so that new Beam options and
    runner options (Dataflow's --project, --region, ...) are known without a list here."""
    from apache_beam.options.pipeline_options import PipelineOptions
    parsers: List[argparse.ArgumentParser] = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=parsers.append)
    return parsers[0]


def _looks_like_config_key(name: str, config_type: Optional[type]) -> bool:
    if "." in name:
        return True
    if config_type is not None and dataclasses.is_dataclass(config_type):
        return name.replace("-", "_") in {f.name for f in dataclasses.fields(config_type)}
    return False


def check_version(text: str) -> None:
    """UsageError (one line, exit 2) unless `text` is a release version (VERSION_PATTERN)."""
    if len(text) > MAX_VERSION_CHARS:
        raise UsageError(f"--version: at most {MAX_VERSION_CHARS} characters, got {len(text)}")
    if not VERSION_PATTERN.fullmatch(text):
        raise UsageError(f"--version: must be MAJOR.MINOR.PATCH[-PRE.RELEASE] with ASCII digits "
                         f"and no leading zeros (e.g. 1.2.3 or 2.0.0-rc.1; no +build), got {text!r}")


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(verbose: bool = False) -> None:
    """Warnings and errors only, or (`--verbose`) every INFO line too: Beam's own (30 to
    120 per build: type hints, sinks, bundles) and the stages' (a line per video). What a
    build has to say by default are its progress lines and its summary, printed apart."""
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    logging.getLogger().setLevel(logging.INFO if verbose else logging.WARNING)
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # it logs each CPU build it tries


def run_main(run: Callable[[Optional[List[str]]], object], argv: Optional[List[str]] = None) -> int:
    """A command's `main`: run, and turn the errors a user can fix (bad config, missing
    input, a release that cannot be written) into one line and exit 2, a run the engine
    failed (RunFailed: a lost cluster, nothing published) into one line and exit 1, a
    stop (Ctrl-C, SIGTERM: pipelines/stops.py) into its line and exit 128 + signal.
    Logging shows warnings and errors until the command asks for more (configure_logging)."""
    configure_logging(verbose=False)
    try:
        run(argv)
    except Stopped as stop:
        print(stop.line(), file=sys.stderr)
        return stop.code
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RunFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:
        if not disk_full(e):
            raise
        print("error: no space left on device: free space where the release and the cache "
              "are written, then run again (this build removed its partial files)",
              file=sys.stderr)
        return 2
    return 0


def disk_full(error: BaseException) -> bool:
    """ENOSPC anywhere in the chain; Beam re-raises a worker's error as text, so the
    message is read too."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            return True
        if "No space left on device" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False
