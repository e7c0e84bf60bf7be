"""VSR inputs: patterns are expanded once, before any work, into the files the readers read
and the manifest lists; a pattern that matches nothing stops the build early."""
import json
import os

import pytest

from pipelines import build
from pipelines.config import load_config
from pipelines.vsr import pipeline as vsr
from pipelines.vsr.config import VsrConfig
from pipelines.vsr.sample import make_vsr_sample
from tests.release.release_files import build_record
from transforms.core.errors import PreflightError


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_vsr_sample(str(tmp_path_factory.mktemp("sample")))


def _cfg(**inputs):
    return load_config("pipelines/vsr/configs/paper.yaml",
                       [f"inputs.{k}=[{','.join(v)}]" for k, v in inputs.items()], VsrConfig)


def test_globs_expand_to_files_in_name_order(sample):
    cfg = _cfg(coco=[f"{sample}/instances_*2017.json"], annotations=[f"{sample}/public_*.jsonl"])
    files = vsr.expand_inputs(cfg)
    assert files["coco"] == [f"{sample}/instances_train2017.json", f"{sample}/instances_val2017.json"]
    assert files["annotations"] == [f"{sample}/public_layout.jsonl"] and files["votes"] == []
    assert vsr.preflight(cfg).inputs.coco == files["coco"]


def test_a_file_a_glob_and_a_path_both_name_is_refused_not_read_once(sample):
    """Issue 24: the same file named twice in one key used to be read once, silently."""
    cfg = _cfg(coco=[f"{sample}/instances_*2017.json", f"{sample}/instances_train2017.json"])
    with pytest.raises(PreflightError, match=f"inputs.coco: {sample}/instances_train2017.json is named "
                                             f"twice, by {sample}/instances_\\*2017.json and by"):
        vsr.preflight(cfg)


@pytest.mark.parametrize("pattern", ["instances_*2019.json", "no_such_file.json", ""])
def test_a_pattern_that_matches_nothing_fails_before_any_work(sample, tmp_path, pattern):
    cfg = _cfg(coco=[f"{sample}/{pattern}" if pattern else str(tmp_path)])   # a folder is no file
    with pytest.raises(PreflightError, match="inputs.coco"):
        vsr.preflight(cfg)
    with pytest.raises(PreflightError):
        build.build("vsr", ["--config", "pipelines/vsr/configs/paper.yaml", "--set", f"inputs.coco=[{cfg.inputs.coco[0]}]",
                "--output", str(tmp_path / "out"), "--version", "1.0.0"])
    assert not os.path.exists(tmp_path / "out" / "vsr" / "1.0.0")


def test_a_build_from_globs_reads_and_lists_every_matched_file(sample, tmp_path):
    release = build.build("vsr", ["--config", "pipelines/vsr/configs/sample.yaml",
                      "--set", f"inputs.coco=[{sample}/instances_*.json]",
                      "--set", f"inputs.annotations=[{sample}/public_*.jsonl]",
                      "--set", "inputs.captions=[]", "--set", "inputs.votes=[]",
                      "--set", "inputs.extra_labels=[]", "--set", f"inputs.coco_images={sample}/images",
                      "--output", str(tmp_path), "--version", "1.0.0"])
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    listed = {name: entry["path"] for name, entry in manifest["inputs"].items()}
    assert build_record(release)["input_root"] == str(sample)   # paths relative to it, recorded once
    assert listed == {"coco[0]": "instances_broken.json", "coco[1]": "instances_train2017.json",
                      "coco[2]": "instances_val2017.json", "annotations[0]": "public_layout.jsonl"}
    assert manifest["config"]["inputs"]["coco"] == ["instances_*.json"]   # as given
    stages = manifest["stages"]
    assert stages["coco"]["file.in"] == 3 and stages["coco"]["file.rejected.malformed_coco"] == 1
    assert manifest["counts"]["tables"]["image_pairs"]["total"] == 12
