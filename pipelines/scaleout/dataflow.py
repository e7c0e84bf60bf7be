"""Is a benchmark Dataflow-ready? Translate its sample build for Dataflow, offline.

Beam's DataflowRunner with the `dry_run` test option does everything a submission does
except the API call: it applies Dataflow's overrides, pickles every DoFn into the
Runner API pipeline proto, builds the Runner v2 job with the worker image as
`sdk_container_image`, and stages the project as `--setup_file` makes it (an sdist).
A DoFn that cannot be pickled, a side input whose key coder is not deterministic, or a
setup.py that does not build fails here, in seconds, instead of on a paid cluster.

What it cannot see: whether the workers can reach the inputs (local paths in a sample
config would not exist on Dataflow workers: docs/scale-out.md) and whether the image
has the Debian programs. The portable-runner check (portable.py) runs the same graph
with workers in other processes and another working directory.

Needs `apache-beam[gcp]` (requirements-dev.txt, or `pip install .[dataflow]`).
"""
from __future__ import annotations

import os
import tarfile
import tempfile
from dataclasses import dataclass
from typing import List

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import preflight
from pipelines.benchmark import Benchmark
from pipelines.build import cache_root_of
from pipelines.config import load_config
from transforms.core.errors import UserError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Stand-ins for what a real submission names: none of them is contacted in a dry run.
DRY_RUN_OPTIONS = ["--runner=DataflowRunner", "--project=dry-run-project",
                   "--region=us-central1", "--temp_location=gs://dry-run-bucket/tmp",
                   "--sdk_container_image=REGION-docker.pkg.dev/PROJECT/REPO/vl-pipelines:0.1.0",
                   "--experiments=use_runner_v2", "--sdk_location=container",
                   "--dry_run=True"]
PACKAGES = ("pipelines", "transforms", "schemas")


@dataclass
class Translation:
    benchmark: str
    config: str
    transforms: int          # primitive and composite transforms in the pipeline proto
    proto_bytes: int         # the Runner API pipeline proto the job carries
    staged: List[str]        # the files staged beside the job (the project's sdist, ...)

    def line(self) -> str:
        return (f"{self.benchmark} ({self.config}): translated for Dataflow Runner v2, "
                f"{self.transforms} transforms, pipeline proto {self.proto_bytes / 1e6:.2f} MB, "
                f"staged {', '.join(self.staged)}")


def translate(benchmark: Benchmark, config_name: str, extra_options=()) -> Translation:
    """Build `config_name`'s pipeline and translate it for Dataflow without submitting.
    Raises on any translation, pickling or staging error."""
    config = load_config(benchmark.config_path(config_name), [], benchmark.config_type)
    benchmark.ensure_sample(config)
    with tempfile.TemporaryDirectory(prefix="dataflow-dry-run-") as work:
        output = os.path.join(work, "releases")
        cache_root = cache_root_of(config, output)
        preflight.check_inputs(config)
        plan = benchmark.prepare(config, cache_root)
        preflight.check_outputs(output, cache_root)
        options = PipelineOptions([*DRY_RUN_OPTIONS, f"--setup_file={os.path.join(ROOT, 'setup.py')}",
                                   *extra_options])
        pipeline = beam.Pipeline(options=options)
        benchmark.build(pipeline, plan, os.path.join(work, "staging-release"))
        result = pipeline.run()
        proto = result.job.proto_pipeline
        staged = _staged_files(proto)
        _check_sdist(proto)
        return Translation(benchmark=benchmark.name, config=config_name,
                           transforms=len(proto.components.transforms),
                           proto_bytes=proto.ByteSize(), staged=staged)


def _artifact_paths(proto) -> List[str]:
    from apache_beam.portability.api import beam_runner_api_pb2
    paths = []
    for environment in proto.components.environments.values():
        for artifact in environment.dependencies:
            payload = beam_runner_api_pb2.ArtifactFilePayload.FromString(artifact.type_payload)
            paths.append(payload.path)
    return paths


def _staged_files(proto) -> List[str]:
    return sorted({os.path.basename(path) for path in _artifact_paths(proto)})


def _check_sdist(proto) -> None:
    """Workers import the project from the staged sdist: every module of the checkout
    must be in it (a package folder without __init__.py is silently left out)."""
    sdists = [p for p in _artifact_paths(proto) if p.endswith(".tar.gz")]
    if not sdists:
        raise UserError("the Dataflow job stages no sdist of the project (--setup_file)")
    with tarfile.open(sdists[0]) as archive:
        in_sdist = {"/".join(name.split("/")[1:]) for name in archive.getnames()}
    missing = [module for module in _project_modules() if module not in in_sdist]
    if missing:
        raise UserError(f"the staged sdist lacks {len(missing)} module(s) the workers need, "
                        f"e.g. {', '.join(missing[:5])} (a package folder without __init__.py?)")


def _project_modules() -> List[str]:
    modules = []
    for package in PACKAGES:
        for folder, dirs, files in os.walk(os.path.join(ROOT, package)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            modules += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files
                        if f.endswith(".py")]
    return sorted(modules)
