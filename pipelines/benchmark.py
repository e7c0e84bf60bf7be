"""What a benchmark is, to the one build command (pipelines/build.py) that builds them all.

A benchmark package (`pipelines/<name>/`) declares one `Benchmark` object in its
`benchmark.py` and registers its name in pipelines/registry.py. The runner does what every
build shares - config and overrides, the embedded sample, output checks, staging, the
Beam run, reconciliation, the release and its errors - and asks the benchmark only for
what is its own:

    prepare(config, cache_root) -> Plan   preflight: inputs exist and hold something,
                                          models are where the config says; rules and model
                                          specs are built here once, never per stage
    build(pipeline, plan, staging)        wire the stages (reads like the paper)
    tables(plan), links(plan)             what the release must hold: each table with the
                                          counter its rows must equal and the key columns
                                          that identify a row (Table,
                                          pipelines/release/write/tables.py), and which
                                          counters must agree (checked before a release is
                                          written)
    main_tables(plan)                     the tables that must hold a row: a build that
                                          yields nothing fails, its version unused
    progress(plan)                        its main stages, for the progress lines
    splits(plan)                          the split schemes of each table (default: its
                                          `split` column); one Hugging Face config each
    describe(plan, facts)                 the data card's summary, thresholds, sections
    explorer(plan)                        how its tables look in the release explorer
                                          (pipelines/release/explorer/views.py)

A benchmark's own commands (ImageCoDe's `calibrate`) are registered beside its title in
pipelines/registry.py, so that `--help` and `diff` load no benchmark and no model.

TFDS is the model: a builder per dataset with named configs (`configs/<name>.yaml`, a
"paper" and a "sample" one at least), release notes and checksums kept with the release.
"""
from __future__ import annotations

import abc
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import apache_beam as beam

from pipelines.config import config_names, config_path, reads_sample
from pipelines.progress import Progress
from pipelines.release.explorer.views import Explorer
from pipelines.release.write.split_files import MAIN, SplitScheme
from pipelines.release.write.tables import Table


@dataclass
class Plan:
    """What preflight resolved for one build, handed whole to build and describe.

    `config` may differ from the one loaded (e.g. glob patterns expanded to files);
    `models` are the identities (weights checksums) the manifest records; `inputs` the
    files whose checksums the manifest records; `rules` the benchmark's own objects built
    once from the config (encoder and filter specs, a review sheet, ...)."""
    config: Any
    models: Dict[str, dict] = field(default_factory=dict)
    inputs: Dict[str, Optional[str]] = field(default_factory=dict)
    cache_root: Optional[str] = None
    rules: Any = None


Tables = Dict[str, Table]   # table -> its counter and key, e.g. Table("sets", "set.out", key="set")
Links = Sequence[Tuple[str, str, str, str]]   # (stage, counter) passed on == (stage, counter) taken in


class Benchmark(abc.ABC):
    """One benchmark's collection stages, as the runner sees them."""

    name: str              # the CLI name and, by default, the release folder
    title: str             # "ImageCoDe (Krojer et al. 2022)"
    config_type: type      # the dataclass its YAML is checked against
    package_dir: str       # the benchmark's folder (its configs/ live there)
    vocabulary: Tuple[str, ...] = ()   # every reject reason its releases can hold

    # --- configs -----------------------------------------------------------------------

    def config_names(self) -> List[str]:
        """The named configs shipped in `configs/` (at least "paper" and "sample")."""
        return config_names(os.path.join(self.package_dir, "configs"))

    def config_path(self, name_or_path: str) -> str:
        """A named config's YAML, or the path itself when it names a file."""
        return config_path(os.path.join(self.package_dir, "configs"), name_or_path)

    def release_name(self, config) -> str:
        """The folder under the release root (one benchmark may publish several, as FG
        does for its two configurations)."""
        return self.name

    def sample_configs(self) -> List[str]:
        """The shipped configs that build the embedded sample (the conformance test and
        the scale-out checks build each); one benchmark may ship one per configuration."""
        return ["sample"]

    def reads_sample(self, config) -> bool:
        """Whether `config` reads the embedded sample (generated inputs, not the
        benchmark's data: the release's cards say so first). The config says
        (pipelines/config.py reads_sample), so the runner can ask before loading this."""
        return reads_sample(config)

    def ensure_sample(self, config) -> None:
        """Generate the embedded sample when `config` reads it and it is not there yet."""

    @property
    def sample_generator(self) -> str:
        """What makes the embedded sample, as its release's cards name it: the package's
        `sample.py`, or a `sample/` package where the sample has parts (ImageCoDe)."""
        return f"pipelines/{self.name}/sample.py"

    # --- a build ------------------------------------------------------------------------

    @abc.abstractmethod
    def prepare(self, config, cache_root: Optional[str]) -> Plan:
        """Checks before any work (raise transforms.core.errors.PreflightError naming the
        config key) and everything resolved once for the build."""

    @abc.abstractmethod
    def build(self, pipeline: beam.Pipeline, plan: Plan, staging_dir: str) -> None:
        """Wire the stages into `pipeline`, writing under `staging_dir`."""

    @abc.abstractmethod
    def tables(self, plan: Plan) -> Tables:
        """Tables this build writes under parquet/, each a Table: the (stage, counter) its
        rows must equal and its key, the columns that identify one row (one or more, e.g.
        `key=("example_id", "scheme")`). The key is how `diff` and the release notes match
        the rows of two versions; a table without one is an error before any work, and a
        key that two written rows share fails the build (pipelines/release/write/tables.py)."""

    def main_tables(self, plan: Plan) -> Sequence[str]:
        """The tables this build is for: when any of them has no row the build fails
        before publishing (exit 2) and the version stays unused. Default: every table it
        writes, since each is there because the config asked for it; a benchmark whose
        plan writes a table that may rightly stay empty leaves it out."""
        return list(self.tables(plan))

    def splits(self, plan: Plan) -> Dict[str, Sequence[SplitScheme]]:
        """Each table's split schemes, main one first: the release writes one set of
        Parquet files per split and the dataset card one config per scheme
        (pipelines/release/write/split_files.py, cards/hf_card.py). Declare a second scheme for a table
        that holds one (e.g. `SplitScheme("zeroshot_split", "zeroshot")`)."""
        return {table: MAIN for table in self.tables(plan)}

    def explorer(self, plan: Plan) -> Explorer:
        """The release explorer's views of its tables (images, target, text, choices,
        figures; pipelines/release/explorer/views.py). A table not named here gets a
        plain view: its key and scalar columns."""
        return Explorer()

    def links(self, plan: Plan) -> Links:
        return ()

    def progress(self, plan: Plan) -> Sequence[Progress]:
        """The main stages a local build reports items done of the total for
        (pipelines/progress.py), e.g. `Progress("videos", "video", "shots", ...)`."""
        return ()

    def check_counts(self, plan: Plan, stages: dict) -> List[str]:
        """Problems beyond per-stage reconciliation and links (e.g. a sum over sources)."""
        return []

    def after_run(self, plan: Plan, staging_dir: str) -> None:
        """Checks on what the run wrote, before the release is counted (may raise a
        UserError, e.g. a policy that fails the build)."""

    def user_error(self, error: Exception) -> Optional[Exception]:
        """The user-fixable error a failed run stands for, if any (an error raised inside
        a stage reaches the driver wrapped in the runner's own)."""
        return None

    @abc.abstractmethod
    def describe(self, plan: Plan, facts: dict) -> dict:
        """The data card's summary, thresholds and sections (pipelines/release/cards/datacard.py)."""
