"""The command line every build shares: config, overrides, output, version, and how a
command ends (one line and exit 2 for what a user can fix).

Arguments a build does not know are handed to Beam as pipeline options (--runner,
--direct_running_mode, --project, --setup_file, ...).
"""
from __future__ import annotations

import argparse
import errno
import logging
import re
import sys
from typing import Callable, List, Optional


from transforms.core.errors import RunFailed, UserError
from transforms.io.files import absolute_path

VERSION_PATTERN = re.compile(r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")


def add_build_arguments(parser: argparse.ArgumentParser, configs=()) -> None:
    """--config, --set, --output, --version, --quiet, --no-explorer: what every build takes."""
    named = f" or a name: {', '.join(configs)}" if configs else ""
    parser.add_argument("--config", required=True,
                        help=f"YAML config: a path{named} (pipelines/<benchmark>/configs/)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. mining.distance_threshold=0.3 (repeatable)")
    parser.add_argument("--output", required=True, type=absolute_path,
                        help="release root: writes <output>/<benchmark>/<version>/")
    parser.add_argument("--version", required=True, type=_version, help="release version, x.y.z")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines on stderr (items done of the total per main "
                             "stage, rate, time left)")
    parser.add_argument("--no-explorer", action="store_true",
                        help="write no explorer/ (the static pages to browse the release, its "
                             "rejects and its changes; see README, \"The release explorer\")")


def _version(text: str) -> str:
    if not VERSION_PATTERN.match(text):
        raise argparse.ArgumentTypeError(f"version must look like 1.2.3, got {text!r}")
    return text


def run_main(run: Callable[[Optional[List[str]]], object], argv: Optional[List[str]] = None) -> int:
    """A command's `main`: log progress, run, and turn the errors a user can fix (bad
    config, missing input, a release that cannot be written) into one line and exit 2,
    a run the engine failed (RunFailed: a lost cluster, nothing published) into one line
    and exit 1."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # it logs each CPU build it tries
    try:
        run(argv)
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
