"""The benchmarks this project builds: name -> where its Benchmark lives, its title and
its own commands.

Adding a benchmark adds one entry here (docs/architecture.md, "Adding a benchmark"). Modules are
imported only when used: `python -m pipelines --help`, `<benchmark> --help` and `diff`
read this table and import no benchmark (and so no model library: torch, faiss, spaCy
...), and a benchmark's dependencies load only for its own builds and commands.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Tuple

from transforms.core.errors import UserError


@dataclass(frozen=True)
class Registered:
    """`module` holds the benchmark's BENCHMARK; `commands` its own commands beyond build
    and diff: {verb: (one-line help, "module:function")}, the function main(argv) -> exit
    code, imported only when the command runs."""
    module: str
    title: str
    commands: Dict[str, Tuple[str, str]] = field(default_factory=dict)


BENCHMARKS: Dict[str, Registered] = {
    "imagecode": Registered(
        "pipelines.imagecode.benchmark",
        "ImageCoDe (Krojer et al. 2022): video-frame and static image sets, describe/retrieve rounds",
        {"calibrate": ("sets per source for candidate thresholds, from the cache only",
                       "pipelines.imagecode.calibrate:main")}),
    "vsr": Registered("pipelines.vsr.benchmark", "VSR (Liu et al. 2023): COCO concept pairs, caption and validation rounds, splits"),
    "bd2bb": Registered("pipelines.bd2bb.benchmark", "BD2BB (Pezzelle et al. 2020): filtered tuples, topic clusters, argument codes, decoys"),
    "nlvr2": Registered("pipelines.nlvr2.benchmark", "NLVR2 (Suhr et al. 2019): sentence and validation rounds on image pairs, public re-release"),
    "fg": Registered(
        "pipelines.fg.benchmark",
        "MSCOCO-FG / Flickr30K-FG (Chen et al. 2023): similar-image pools, renovated coarse captions",
        {"table3": ("Table 3 of an original and a renovated annotation file",
                    "pipelines.fg.table3:main")}),
}


def names() -> List[str]:
    return list(BENCHMARKS)


def load(name: str):
    """The Benchmark object registered under `name`."""
    if name not in BENCHMARKS:
        raise UserError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}")
    return importlib.import_module(BENCHMARKS[name].module).BENCHMARK


def command(name: str, verb: str) -> Callable[[List[str]], int]:
    """The main(argv) of a benchmark's own command (imports its module now)."""
    module, function = BENCHMARKS[name].commands[verb][1].split(":")
    return getattr(importlib.import_module(module), function)
