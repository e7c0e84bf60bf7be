"""Every registered benchmark keeps the contract (pipelines/benchmark.py): each embedded
sample (Benchmark.sample_configs) builds through the one runner, its counters reconcile, its tables hold the rows
its counters say, and every reject reason it writes is in its vocabulary.

Registering a benchmark (pipelines/registry.py) adds it here.
"""
import json
import os

import pyarrow.parquet as pq
import pytest

from pipelines import registry, runner
from pipelines.config import load_config
from pipelines.release.manifest import verify_manifest
from transforms.core.errors import ConfigError
from transforms.core.stage import check_links, reconcile


SAMPLES = [(name, config) for name in registry.names()
           for config in registry.load(name).sample_configs()]


@pytest.fixture(scope="module", params=SAMPLES, ids=[f"{n}-{c}" for n, c in SAMPLES])
def built(request, tmp_path_factory):
    name, sample = request.param
    benchmark = registry.load(name)
    out = tmp_path_factory.mktemp(f"conformance-{name}-{sample}")
    release = runner.build(benchmark, ["--config", sample, "--output", str(out),
                                       "--version", "1.0.0"])
    return benchmark, release, sample


def test_it_ships_a_paper_and_a_sample_config(built):
    benchmark, _, _ = built
    assert {"paper", "sample"} <= set(benchmark.config_names())
    assert set(benchmark.sample_configs()) <= set(benchmark.config_names())
    for name in benchmark.config_names():
        try:  # every key known and typed; a paper config may wait for the user's inputs
            load_config(benchmark.config_path(name), [], benchmark.config_type)
        except ConfigError as e:
            assert name not in benchmark.sample_configs() and "inputs." in str(e), (name, e)


def test_the_sample_release_is_whole_and_reconciles(built):
    benchmark, release, sample = built
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert manifest["benchmark"] == benchmark.release_name(load_config(
        benchmark.config_path(sample), [], benchmark.config_type))
    assert manifest["reconciled"] is True and verify_manifest(release) == []
    stages = manifest["stages"]
    assert stages and reconcile(stages) == []
    plan = benchmark.prepare(load_config(benchmark.config_path(sample), [], benchmark.config_type), None)
    assert check_links(stages, benchmark.links(plan)) == []
    assert benchmark.check_counts(plan, stages) == []


def test_its_tables_hold_what_its_counters_say(built):
    benchmark, release, sample = built
    plan = benchmark.prepare(load_config(benchmark.config_path(sample), [], benchmark.config_type), None)
    tables = benchmark.tables(plan)
    assert tables, "a benchmark publishes at least one table"
    stages = json.load(open(os.path.join(release, "MANIFEST.json")))["stages"]
    for table, (stage, counter) in tables.items():
        rows = pq.read_table(os.path.join(release, "parquet", table)).num_rows
        assert rows == stages[stage][counter] > 0, table


def test_every_reject_reason_is_in_its_vocabulary(built):
    benchmark, release, _ = built
    reasons = set(pq.read_table(os.path.join(release, "rejects"), columns=["reason"])
                  .column("reason").to_pylist())
    assert reasons, "the sample exercises its rejects"
    assert reasons <= set(benchmark.vocabulary), reasons - set(benchmark.vocabulary)
