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
from pipelines.release.digest import differences, release_digest
from pipelines.release.manifest import verify_manifest
from transforms.core.errors import ConfigError
from tests.paths import ROOT
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


def test_every_table_loads_as_a_hugging_face_dataset(built, tmp_path, monkeypatch):
    """README.md is a dataset card: `load_dataset(<release>, <config>)` yields each split
    scheme of each table with exactly its splits and rows (pyarrow reads the same rows
    from parquet/), offline, and the other files of the folder (compat/, some of them
    empty in the sample) never get in the way."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets   # requirements-dev.txt: never skipped
    from pipelines.release.hf_card import config_name

    benchmark, release, sample = built
    plan = benchmark.prepare(load_config(benchmark.config_path(sample), [], benchmark.config_type), None)
    schemes = benchmark.splits(plan)
    assert set(schemes) == set(benchmark.tables(plan))
    loaded_configs = set(datasets.get_dataset_config_names(release))
    expected_configs = set()
    for table, table_schemes in schemes.items():
        rows = pq.read_table(os.path.join(release, "parquet", table)).to_pylist()
        for scheme in table_schemes:
            expected = {}
            for row in rows:
                split = scheme.split_of(row[scheme.column])
                if split is not None:
                    expected.setdefault(split, []).append(_canonical(row))
            if not expected:
                continue
            name = config_name(table, scheme)
            expected_configs.add(name)
            loaded = datasets.load_dataset(release, name, cache_dir=str(tmp_path / "cache"))
            assert set(loaded) == set(expected), (name, set(loaded))
            for split, want in expected.items():
                got = [_canonical(r) for r in loaded[split].data.table.to_pylist()]
                assert sorted(got) == sorted(want), (name, split)
    assert loaded_configs == expected_configs
    assert len(expected_configs) >= len(schemes)


def test_every_table_reads_with_pandas(built):
    """The README's pandas line: a table's folder, all its splits (requirements.txt)."""
    import pandas as pd

    benchmark, release, sample = built
    plan = benchmark.prepare(load_config(benchmark.config_path(sample), [], benchmark.config_type), None)
    for table in benchmark.tables(plan):
        folder = os.path.join(release, "parquet", table)
        frame = pd.read_parquet(folder)
        assert len(frame) == pq.read_table(folder).num_rows > 0
        assert set(frame["split"]) == set(pq.read_table(folder, columns=["split"]).column("split").to_pylist())


def test_its_explorer_shows_every_row_and_reject(built):
    """explorer/ (pipelines/release/explorer.py): every row of every table is one card on
    its pages, the first page is full (or holds the whole group), every reject is counted
    by reason, every thumbnail is there, nothing refers to the network, and the manifest
    checksums it (tests/release/test_explorer_browser.py opens it in Chromium)."""
    from pipelines.release.explorer import PAGE_SIZE
    from tests.release.explorer_pages import all_cards, load_index, load_page, network_references

    benchmark, release, sample = built
    plan = benchmark.prepare(load_config(benchmark.config_path(sample), [], benchmark.config_type), None)
    explorer = os.path.join(release, "explorer")
    index = load_index(explorer)
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert {v["table"] for v in index["views"]} == set(benchmark.tables(plan))
    for view in index["views"]:
        rows = pq.read_table(os.path.join(release, "parquet", view["table"])).num_rows
        assert sum(g["items"] for g in view["groups"]) == rows
        for group in view["groups"]:
            assert len(load_page(explorer, group["path"], 1)) == min(PAGE_SIZE, group["items"])
            cards = all_cards(explorer, group["path"], group["pages"])
            assert len(cards) == group["items"]
            assert {(c["split"], c["source"]) for c in cards} == {(group["split"], group["source"])}
            for image in (i for c in cards for i in c.get("images", ())):
                assert image["t"] is None or os.path.isfile(os.path.join(explorer, image["t"]))
    assert index["rejects"]["total"] == manifest["counts"]["rejects"]["total"]
    assert {r["reason"]: r["count"] for r in index["rejects"]["reasons"]} == \
        manifest["counts"]["rejects"]["by_reason"]
    assert index["diff"] is None   # the first version in its folder
    assert network_references(explorer) == []
    assert any(path.startswith("explorer/") for path in manifest["files"])
    assert manifest["explorer"]["files"] == sum(p.startswith("explorer/") for p in manifest["files"])


# Every sample's decisions, pinned: each table row-sorted, rejects, the compat/crowd/tasks/
# review/stats files and every stage counter, digested as scripts/release_snapshot.py does
# (pipelines/release/digest.py). Taken before the memory and growth work of issues 27-28
# and kept through it. A difference here is a behaviour change: explain it, then re-pin:
#   .venv/bin/python scripts/release_snapshot.py samples build/snapshot tests/sample_decisions.json
PINNED_DECISIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample_decisions.json")


def test_its_decisions_are_the_pinned_ones(built):
    benchmark, release, sample = built
    label = f"{benchmark.name}-{sample}"
    with open(PINNED_DECISIONS) as f:
        pinned = json.load(f)
    assert label in pinned, f"{label} has no pinned digest: re-pin (see above)"
    assert differences(pinned[label], release_digest(release, root=str(ROOT)), label=f"{label} ") == []


def _canonical(row: dict) -> str:
    return json.dumps(row, sort_keys=True, default=str)
