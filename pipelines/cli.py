"""The command line every pipeline shares: config, overrides, output, version.

Arguments we do not know are handed to Beam as pipeline options (--runner,
--direct_running_mode, --project, --setup_file, ...).
"""
from __future__ import annotations

import argparse
import re
from typing import List, Optional, Tuple

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
