"""The benchmarks this project builds: name -> (module holding its BENCHMARK, title).

Adding a benchmark adds one line here (README, "Adding a benchmark"). Modules are
imported only when used, so `python -m pipelines --help` stays fast and a benchmark's
dependencies load only for its own builds.
"""
from __future__ import annotations

import importlib
from typing import Dict, Tuple

from transforms.core.errors import UserError

BENCHMARKS: Dict[str, Tuple[str, str]] = {
    "imagecode": ("pipelines.imagecode.benchmark", "ImageCoDe (Krojer et al. 2022): video-frame and static image sets, describe/retrieve rounds"),
    "vsr": ("pipelines.vsr.benchmark", "VSR (Liu et al. 2023): COCO concept pairs, caption and validation rounds, splits"),
    "bd2bb": ("pipelines.bd2bb.benchmark", "BD2BB (Pezzelle et al. 2020): filtered tuples, topic clusters, argument codes, decoys"),
    "nlvr2": ("pipelines.nlvr2.benchmark", "NLVR2 (Suhr et al. 2019): sentence and validation rounds on image pairs, public re-release"),
    "fg": ("pipelines.fg.benchmark", "MSCOCO-FG / Flickr30K-FG (Chen et al. 2023): similar-image pools, renovated coarse captions"),
}


def names():
    return list(BENCHMARKS)


def load(name: str):
    """The Benchmark object registered under `name`."""
    if name not in BENCHMARKS:
        raise UserError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}")
    return importlib.import_module(BENCHMARKS[name][0]).BENCHMARK
