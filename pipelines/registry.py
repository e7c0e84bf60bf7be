"""The benchmarks this project builds: name -> its package (where its Benchmark, its
config type and its named configs live), its title, an example `--set` and its own
commands.

Adding a benchmark adds one entry here (docs/architecture.md, "Adding a benchmark"). Modules are
imported only when used: `python -m pipelines --help`, `<benchmark> --help` and `diff`
read this table and import no benchmark (and so no model library: torch, faiss, spaCy
...); a build reads its config type through it and checks the config and its inputs
before the benchmark (Beam, its models) is imported (pipelines/build.py).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Tuple

from transforms.core.errors import UserError


@dataclass(frozen=True)
class Registered:
    """One benchmark, as the command line sees it before loading it.

    `package` holds the benchmark: its benchmark.py the BENCHMARK object (Beam, models),
    its config.py the config dataclass named `config` (a module that imports neither Beam
    nor a model: the runner loads and checks a config before either, tests/test_cli_imports.py),
    its configs/ the named configs. `example_set` is a `--set` of its own config, shown by
    `build --help`. `commands` are its own commands beyond build and diff:
    {verb: (one-line help, "module:function")}, the function main(argv) -> exit code,
    imported only when the command runs."""
    name: str
    package: str
    config: str
    title: str
    example_set: str
    commands: Dict[str, Tuple[str, str]] = field(default_factory=dict)

    @property
    def config_type(self) -> type:
        """The dataclass its YAML configs are checked against (imports no Beam, no model)."""
        return getattr(importlib.import_module(f"{self.package}.config"), self.config)

    @property
    def configs_dir(self) -> str:
        """Its named configs' folder, found without importing the benchmark."""
        return os.path.join(importlib.util.find_spec(self.package).submodule_search_locations[0],
                            "configs")

    def config_names(self) -> List[str]:
        from pipelines.config import config_names   # YAML's loader: only for a command that reads configs
        return config_names(self.configs_dir)

    def config_path(self, name_or_path: str) -> str:
        from pipelines.config import config_path
        return config_path(self.configs_dir, name_or_path)


BENCHMARKS: Dict[str, Registered] = {entry.name: entry for entry in (
    Registered(
        "imagecode", "pipelines.imagecode", "ImageCodeConfig",
        "ImageCoDe (Krojer et al. 2022): video-frame and static image sets, describe/retrieve rounds",
        "mining.distance_threshold=0.3",
        {"calibrate": ("sets per source for candidate thresholds, from the cache only",
                       "pipelines.imagecode.calibrate:main")}),
    Registered("vsr", "pipelines.vsr", "VsrConfig",
               "VSR (Liu et al. 2023): COCO concept pairs, caption and validation rounds, splits",
               "sampling.pairs=1000"),
    Registered("bd2bb", "pipelines.bd2bb", "BD2BBConfig",
               "BD2BB (Pezzelle et al. 2020): filtered tuples, topic clusters, argument codes, decoys",
               "clusters.k=20"),
    Registered("nlvr2", "pipelines.nlvr2", "Nlvr2Config",
               "NLVR2 (Suhr et al. 2019): sentence and validation rounds on image pairs, public re-release",
               "rules.enforce=false"),
    Registered(
        "fg", "pipelines.fg", "FgConfig",
        "MSCOCO-FG / Flickr30K-FG (Chen et al. 2023): similar-image pools, renovated coarse captions",
        "similar.image_k=30",
        {"table3": ("Table 3 of an original and a renovated annotation file",
                    "pipelines.fg.table3:main")}),
)}


def names() -> List[str]:
    return list(BENCHMARKS)


def entry(name: str) -> Registered:
    """What is registered under `name` (imports nothing)."""
    if name not in BENCHMARKS:
        raise UserError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}")
    return BENCHMARKS[name]


def load(name: str):
    """The Benchmark object registered under `name` (imports it: Beam, its models)."""
    return importlib.import_module(f"{entry(name).package}.benchmark").BENCHMARK


def command(name: str, verb: str) -> Callable[[List[str]], int]:
    """The main(argv) of a benchmark's own command (imports its module now)."""
    module, function = BENCHMARKS[name].commands[verb][1].split(":")
    return getattr(importlib.import_module(module), function)
