"""`verify` covers a whole release (issue 45, point 1): every value of its MANIFEST.json
(in the digest, and checked against what the files show), every file a regular file of
its own; and a rebuild and `diff` refuse, in one line, a previous version that fails any
of this or has no MANIFEST.json. Small releases made by build_release here; every sample
release of every benchmark: tests/test_conformance.py."""
import dataclasses
import json
import os

import pytest

from pipelines import cli
from pipelines.__main__ import main as pipelines_main
from pipelines.release.check.verify import main as verify_main
from pipelines.release.check.verify import release_problems
from pipelines.release.write import assemble as release
from tests.release.release_files import writable_copy


@dataclasses.dataclass
class DemoConfig:
    seed: int = 0


class _Counted:
    """What a pipeline result offers the release: a run that counted `counters`."""

    def __init__(self, counters=()):
        self.counters = counters

    def metrics(self):
        return self

    def query(self):
        return {"counters": list(self.counters)}


def publish(out, version="1.0.0"):
    return release.build_release(
        benchmark="demo", out=str(out), version=version, config=DemoConfig(),
        execute=lambda staging: _Counted(), models={}, inputs={}, tables={},
        describe=lambda facts: {"manifest": {"figure": {"share": 0.25}}}, explorer=None)


def damaged(published, tmp_path, damage):
    """`published` replaced by a writable copy that `damage(folder)` changed (the original
    kept aside): a release as a user might find it after an edit or a copy."""
    copy = writable_copy(published, str(tmp_path / "copy"))
    damage(copy)
    os.rename(published, str(tmp_path / "published"))
    os.rename(copy, published)
    return published


def edit_manifest(change):
    def damage(folder):
        path = os.path.join(folder, "MANIFEST.json")
        manifest = json.load(open(path))
        change(manifest)
        with open(path, "w") as f:
            json.dump(manifest, f, indent=2)
    return damage


def verify(folder, capsys):
    capsys.readouterr()   # what the build printed
    code = verify_main([folder])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_a_published_release_verifies_with_its_build_record_apart(tmp_path, capsys):
    published = publish(tmp_path / "out")
    code, lines, _ = verify(published, capsys)
    assert code == 0 and "as published (MANIFEST.json checksums, values, files and counts)" in lines[0]
    record = json.load(open(os.path.join(published, "BUILD.json")))
    manifest = json.load(open(os.path.join(published, "MANIFEST.json")))
    assert record["release_sha256"] == manifest["release_sha256"]
    assert {"build", "input_root", "work"} <= record.keys() and "build" not in manifest
    assert "BUILD.json" not in manifest["files"]


@pytest.mark.parametrize("change, named", [
    (lambda m: m.update(version="1.0.1"), "value differs: MANIFEST.json `version`"),
    (lambda m: m.update(reconciled=False), "not reconciled: MANIFEST.json `reconciled` is false"),
    (lambda m: m.update(config_sha256="0" * 64),
     "value differs: MANIFEST.json `config_sha256` is not the digest of its `config`"),
    (lambda m: m["figures"]["figure"].update(share=0.5), "value differs: MANIFEST.json `figures`"),
    (lambda m: m.update(extra=1), "not in the digest: MANIFEST.json `extra`"),
    (lambda m: m.pop("built_from"), "missing: MANIFEST.json `built_from`"),
    (lambda m: m["values_sha256"].update(version="0" * 64), "value differs: MANIFEST.json `version`"),
    (lambda m: m.update(release_sha256="0" * 64), "digest differs: MANIFEST.json `release_sha256`"),
], ids=["version", "reconciled", "config_sha256", "a-figure", "a-key-added", "a-key-removed",
        "a-value-digest", "the-release-digest"])
def test_an_edited_manifest_value_fails_verify_naming_it(tmp_path, capsys, change, named):
    """Issue 45: these edits passed `verify` ("as published", exit 0)."""
    published = damaged(publish(tmp_path / "out"), tmp_path, edit_manifest(change))
    code, lines, err = verify(published, capsys)
    assert code == 1 and any(line.startswith(named) for line in lines), lines
    assert "problem(s) against MANIFEST.json" in err


def test_a_key_named_twice_in_the_manifest_is_named(tmp_path, capsys):
    """json keeps the last of two values: a second `version` would hide an edit."""
    def twice(folder):
        path = os.path.join(folder, "MANIFEST.json")
        text = open(path).read().rstrip()
        open(path, "w").write(text[:-1] + ', "version": "9.9.9"}\n')
    published = damaged(publish(tmp_path / "out"), tmp_path, twice)
    code, lines, _ = verify(published, capsys)
    assert code == 1 and lines == ["MANIFEST.json: not JSON (the key 'version' appears twice in one object)"]


@pytest.mark.parametrize("how", ["symlink", "hard-link", "symlinked-folder"])
def test_a_file_of_a_release_that_is_a_link_is_named(tmp_path, capsys, how):
    """Issue 45: a file replaced by a symlink or a hard link to an identical copy outside
    the version passed `verify`, so a later edit there changed a "read-only" release."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    def link(folder):
        if how == "symlinked-folder":
            os.rename(os.path.join(folder, "rejects"), outside / "rejects")
            os.symlink(outside / "rejects", os.path.join(folder, "rejects"))
            return
        card = os.path.join(folder, "DATACARD.md")
        os.rename(card, outside / "DATACARD.md")
        (os.symlink if how == "symlink" else os.link)(outside / "DATACARD.md", card)
    published = damaged(publish(tmp_path / "out"), tmp_path, link)
    code, lines, _ = verify(published, capsys)
    expected = {"symlink": "symlink: DATACARD.md (", "hard-link": "hard link: DATACARD.md (the file has 2 names",
                "symlinked-folder": "symlink: rejects/ ("}[how]
    assert code == 1 and any(line.startswith(expected) for line in lines), lines


def _previous_without_manifest(published):
    os.chmod(published, 0o755)
    os.chmod(os.path.join(published, "MANIFEST.json"), 0o644)
    os.remove(os.path.join(published, "MANIFEST.json"))


def _previous_with_edited_counters(published, tmp_path):
    def change(manifest):   # the edit: a counter + 5, reconciled false
        manifest["stages"]["demo"] = {"item.in": 5, "item.out": 0}
        manifest["reconciled"] = False
    damaged(published, tmp_path, edit_manifest(change))


def _previous_with_a_hard_link(published, tmp_path):
    def link(folder):
        os.link(os.path.join(folder, "RELEASE_NOTES.md"), tmp_path / "notes-elsewhere.md")
    damaged(published, tmp_path, link)


@pytest.mark.parametrize("damage, says", [
    ("no-manifest", "has no MANIFEST.json: a version is published whole"),
    ("edited-counters", "is not as published: value differs: MANIFEST.json `reconciled`"),
    ("hard-link", "is not as published: hard link: RELEASE_NOTES.md"),
])
def test_a_rebuild_refuses_a_damaged_previous_version_in_one_line(tmp_path, capsys, damage, says):
    """Issue 45: a previous version without MANIFEST.json was skipped (1.0.1 built beside
    it, its notes said "the first version"); one with a counter + 5 and `reconciled:
    false` was taken as it was."""
    previous = publish(tmp_path / "out")
    if damage == "no-manifest":
        _previous_without_manifest(previous)
    elif damage == "edited-counters":
        _previous_with_edited_counters(previous, tmp_path)
    else:
        _previous_with_a_hard_link(previous, tmp_path)
    capsys.readouterr()
    code = cli.run_main(lambda argv: publish(tmp_path / "out", "1.0.1"), [])
    err = capsys.readouterr().err
    assert (code, err.count("\n")) == (2, 1), err
    assert err.startswith(f"error: the previous version {previous} ") and says in err, err
    assert err.rstrip().endswith("nothing was built"), err
    assert sorted(os.listdir(tmp_path / "out" / "demo")) == ["1.0.0"]


@pytest.mark.parametrize("damage", ["no-manifest", "edited-counters"])
def test_diff_refuses_a_damaged_release_in_one_line(tmp_path, capsys, damage):
    old = publish(tmp_path / "out")
    new = publish(tmp_path / "out", "1.1.0")
    if damage == "no-manifest":
        _previous_without_manifest(old)
    else:
        _previous_with_edited_counters(old, tmp_path)
    capsys.readouterr()
    code = pipelines_main(["vsr", "diff", old, new])   # diff reads manifests: any benchmark
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert old in err


def test_a_previous_version_that_is_as_published_is_compared_with(tmp_path):
    publish(tmp_path / "out")
    notes = open(os.path.join(publish(tmp_path / "out", "1.0.1"), "RELEASE_NOTES.md")).read()
    assert notes.startswith("# demo 1.0.1: changes since 1.0.0")
    assert release_problems(os.path.join(tmp_path, "out", "demo", "1.0.1")) == []
