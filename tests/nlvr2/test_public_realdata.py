"""The public NLVR2 files (../shared/realdata/nlvr2: dev.json, test1.json) re-released
through the one runner: every line comes back byte for byte, and the release's figures are
the ones measured on the files (spec S10-S12, ../shared/realdata/README.md). One build of
both files serves the whole module. Fails (does not skip) when the data is missing."""
import json
import os

import pyarrow.parquet as pq
import pytest

from pipelines import build, registry
from pipelines.config import load_config
from pipelines.release.write.manifest import verify_manifest
from transforms.core.stage import check_links, reconcile
from tests.paths import REALDATA
from tests.release.release_files import on_building_machine

DEV, TEST1 = REALDATA / "nlvr2" / "dev.json", REALDATA / "nlvr2" / "test1.json"
ANOMALIES = {("dev-88-1-0", "extra_validation_disagrees"), ("dev-458-2-1", "extra_judgements_count")}


def _build(out, *settings, files=(DEV, TEST1)):
    for path in files:
        assert path.exists(), f"public NLVR2 data not found at {path} (../shared/realdata)"
    return build.build("nlvr2", ["--config", "public", "--output", str(out), "--version", "1.0.0",
                                 "--set", f"inputs.public=[{','.join(map(str, files))}]",
                                 *[a for s in settings for a in ("--set", s)]])


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("nlvr2-public"))


def _stats(release, name):
    return json.load(open(os.path.join(release, "stats", f"{name}.json")))


def _table(release, name):
    return pq.read_table(os.path.join(release, "parquet", name)).to_pylist()


def test_every_line_comes_back_byte_for_byte_in_its_order(release):
    for path in (DEV, TEST1):
        assert open(os.path.join(release, "compat", path.name), "rb").read() == path.read_bytes()


def test_the_release_is_whole_and_reconciles(release):
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert manifest["reconciled"] is True and verify_manifest(release) == []
    benchmark = registry.load("nlvr2")
    config = load_config(benchmark.config_path("public"),
                         [f"inputs.public=[{DEV},{TEST1}]"], benchmark.config_type)
    plan = benchmark.prepare(config, None)
    assert reconcile(manifest["stages"]) == [] and check_links(manifest["stages"], benchmark.links(plan)) == []
    assert manifest["stages"]["public"]["line.in"] == 6982 + 6967
    assert pq.read_table(os.path.join(release, "rejects")).num_rows == 0


def test_table4_counts(release):
    table4 = _stats(release, "table4")[0]["table4"]
    dev = table4["dev"]
    assert (dev["examples"], dev["groups"], dev["sentences"]) == (6982, 2018, 2004)
    assert (table4["test1"]["examples"], table4["test1"]["groups"]) == (6967, 1995)
    rows = _table(release, "examples")
    assert len(rows) == 13949 and len({r["identifier"] for r in rows}) == 13949
    assert len(_table(release, "sentences")) == 2018 + 1995


def test_fleiss_kappa_on_the_five_label_examples(release):
    after = {r["when"]: r for r in _stats(release, "agreement")}["after_rules"]
    assert after["examples_with_all_labels"] == 13711
    assert round(after["fleiss_kappa"], 3) == 0.894
    assert after["examples_by_labels"] == {"5": 13711, "4": 237, "3": 1}


def test_human_performance_by_the_papers_procedure(release):
    splits = _stats(release, "human")[0]["splits"]
    assert (round(splits["dev"]["mean"], 2), round(splits["dev"]["sd"], 2)) == (96.28, 2.13)
    assert (round(splits["test1"]["mean"], 2), round(splits["test1"]["sd"], 2)) == (96.36, 2.89)


def test_every_complete_group_is_two_true_two_false(release):
    groups = _table(release, "sentences")
    complete = [g for g in groups if g["examples"] == 4]
    assert len(complete) == 1196 + 1223
    assert all(g["true_examples"] == 2 for g in complete)
    assert all(g["true_examples"] <= 2 and g["examples"] - g["true_examples"] <= 2 for g in groups)


def test_image_urls_in_two_splits_are_reported(release):
    url = {r["kind"]: r for r in _stats(release, "leakage")}["url"]
    assert url["in_several_splits"] == 45 and url["by_split_pair"] == {"dev|test1": 45}
    assert url["in_several_sets"] == 84
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert manifest["leakage_check"] == {"passed": False, "image_urls_in_several_splits": 45}
    card = open(os.path.join(release, "DATACARD.md")).read()
    assert "45 image URLs occur in two or more splits" in card


def test_the_anomalies_are_reported_not_rejected(release):
    found = {(a["identifier"], a["reason"]) for a in _stats(release, "anomalies")}
    assert found == ANOMALIES
    card = open(os.path.join(release, "DATACARD.md")).read()
    assert "dev-88-1-0" in card and "dev-458-2-1" in card


def test_balanced_and_unbalanced_subsets_as_published(release):
    # sizes of nlvr2/data/{balanced,unbalanced}/*.json in lil-lab/nlvr at 18924841
    files = _stats(release, "compat")[0]["files"]
    assert {k: v for k, v in files.items() if "/" in k} == {
        "balanced/balanced_dev.json": 2300, "balanced/balanced_test1.json": 2316,
        "unbalanced/unbalanced_dev.json": 3562, "unbalanced/unbalanced_test1.json": 3536}
    dev = open(DEV).read().splitlines()
    balanced = open(os.path.join(release, "compat", "balanced", "balanced_dev.json")).read().splitlines()
    assert [line for line in dev if line in set(balanced)] == balanced   # input order kept


def test_the_anomalies_become_rejects_with_rules_enforce(tmp_path):
    release = _build(tmp_path, "rules.enforce=true", files=(DEV,))
    rejects = pq.read_table(os.path.join(release, "rejects")).to_pylist()
    assert {(r["item_id"], r["reason"]) for r in rejects} == ANOMALIES
    assert {(r["stage"], on_building_machine(release, r["file"])) for r in rejects} == {
        ("paper_rules", str(DEV))}
    assert {r["line"] for r in rejects} == {1699, 5436}
    lines = open(os.path.join(release, "compat", "dev.json")).read().splitlines()
    assert len(lines) == 6980 and all(json.loads(x)["identifier"] not in {"dev-88-1-0", "dev-458-2-1"}
                                      for x in lines)
    after = {r["when"]: r for r in json.load(open(os.path.join(release, "stats", "agreement.json")))}
    assert after["before_rules"]["examples"] == 6982 and after["after_rules"]["examples"] == 6980


def test_the_tables_load_as_hugging_face_datasets(release, tmp_path, monkeypatch):
    """Until the sample builds (the collection half), the conformance test does not reach
    NLVR2: this checks the same card on the public re-release."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets

    assert set(datasets.get_dataset_config_names(release)) == {"examples", "sets", "sentences"}
    loaded = datasets.load_dataset(release, "examples", cache_dir=str(tmp_path / "cache"))
    assert {split: len(rows) for split, rows in loaded.items()} == {"dev": 6982, "test1": 6967}
