"""pipelines/scaleout/dataflow.py: a sample translates for Dataflow offline, and the
check fails on what would fail on Dataflow (a DoFn that cannot be pickled, a module the
staged sdist lacks). `make check-dataflow` runs it over every benchmark in CI."""
import dataclasses
import os

import apache_beam as beam
import pytest

from pipelines import registry
from pipelines.benchmark import Benchmark, Plan
from pipelines.scaleout import dataflow
from transforms.core.errors import UserError


def test_the_vsr_sample_translates_for_runner_v2():
    translation = dataflow.translate(registry.load("vsr"), "sample")
    assert translation.transforms > 100
    assert translation.proto_bytes > 100_000
    assert "vl_bench_pipelines-0.1.0.tar.gz" in translation.staged


@dataclasses.dataclass
class _TinyConfig:
    size: int = 3


class _HoldsAGenerator(beam.DoFn):
    """What a DoFn must not hold (a live iterator, like an open reader): pickling it for
    the workers fails. (Beam pickles locks as new locks, so a lock would pass.)"""

    def __init__(self):
        self.rows = (i for i in range(3))

    def process(self, x):
        yield x


class _Tiny(Benchmark):
    name, title, config_type = "tiny", "a benchmark made for this test", _TinyConfig

    def __init__(self, folder, dofn):
        self.package_dir, self._dofn = folder, dofn

    def prepare(self, config, cache_root):
        return Plan(config)

    def build(self, pipeline, plan, staging_dir):
        _ = pipeline | beam.Create(range(plan.config.size)) | beam.ParDo(self._dofn)

    def tables(self, plan):
        return {}

    def links(self, plan):
        return []

    def describe(self, plan, facts):
        return {}


@pytest.fixture
def tiny_folder(tmp_path):
    os.makedirs(tmp_path / "configs")
    (tmp_path / "configs" / "sample.yaml").write_text("size: 3\n")
    return tmp_path


class _PassThrough(beam.DoFn):
    def process(self, x):
        yield x


def test_a_picklable_graph_passes(tiny_folder):
    assert dataflow.translate(_Tiny(tiny_folder, _PassThrough()), "sample").transforms > 0


def test_a_dofn_that_cannot_be_pickled_fails_the_check(tiny_folder):
    with pytest.raises(Exception, match="(?i)pickl|generator"):
        dataflow.translate(_Tiny(tiny_folder, _HoldsAGenerator()), "sample")


def test_a_module_missing_from_the_staged_sdist_fails_the_check(tiny_folder, monkeypatch):
    real = dataflow._project_modules
    monkeypatch.setattr(dataflow, "_project_modules",
                        lambda: real() + ["pipelines/ghost/not_packaged.py"])
    with pytest.raises(UserError, match="pipelines/ghost/not_packaged.py"):
        dataflow.translate(_Tiny(tiny_folder, _PassThrough()), "sample")
