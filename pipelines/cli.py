"""The command line every pipeline shares: config, overrides, output, version.

Arguments we do not know are handed to Beam as pipeline options (--runner,
--direct_running_mode, --project, --setup_file, ...).
"""
from __future__ import annotations

import argparse
import logging
import re
import sys
from typing import Callable, List, Optional, Tuple

from pipelines.errors import UserError

VERSION_PATTERN = re.compile(r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")


def parse_args(argv: Optional[List[str]], description: str) -> Tuple[argparse.Namespace, List[str]]:
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="YAML config (pipelines/configs/)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. mining.distance_threshold=0.3 (repeatable)")
    parser.add_argument("--output", required=True, help="release root: writes <output>/<benchmark>/<version>/")
    parser.add_argument("--version", required=True, type=_version, help="release version, x.y.z")
    return parser.parse_known_args(argv)


def _version(text: str) -> str:
    if not VERSION_PATTERN.match(text):
        raise argparse.ArgumentTypeError(f"version must look like 1.2.3, got {text!r}")
    return text


def run_main(run: Callable[[Optional[List[str]]], str], argv: Optional[List[str]] = None) -> int:
    """A pipeline's `main`: log progress, run, and turn the errors a user can fix (bad
    config, missing input, a release that cannot be written) into one line and exit 2."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # it logs each CPU build it tries
    try:
        run(argv)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
