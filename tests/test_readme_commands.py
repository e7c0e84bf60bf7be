"""The README's build commands, exactly as written, in a fresh clone (issue 10).

Every other test passes absolute temporary paths; a user types `make build-imagecode`
in a new checkout, with the default relative `OUT=releases`. This test clones the
repository (with this working tree's changes laid over it, so it tests what is about to
be committed), reuses this environment's `.venv`, and runs each build with no arguments.
"""
import os
import re
import shutil
import subprocess

import pytest

from pipelines.release.write.manifest import verify_manifest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Variables a user's shell could carry into make; the README's commands assume none.
MAKE_VARIABLES = ("OUT", "VERSION", "CONFIG", "ARGS", "VIDEOS", "IMAGES", "DESCRIPTIONS",
                  "RETRIEVALS", "COCO", "ANNOTATIONS", "CAPTIONS", "VOTES", "EXTRA_LABELS",
                  "TUPLES", "PARSES", "BD2BB_CONFIG", "CACHE", "PUBLIC")


def readme_build_commands():
    """`make build-...` commands the README's Quick start gives."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return sorted(set(re.findall(r"`?(make build-[a-z0-9]+)`?", quick_start)))


def git(*args, cwd=ROOT):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.fail("the README test needs the repository's .git to clone from")
    target = str(tmp_path_factory.mktemp("fresh") / "clone")
    git("clone", "-q", "--no-hardlinks", ROOT, target)
    # What this working tree holds (tracked and new files, not ignored ones) replaces
    # the clone's files, so uncommitted changes are what gets tested.
    wanted = set(git("ls-files", "-z", "-co", "--exclude-standard").decode().split("\0")) - {""}
    for rel in set(git("ls-files", "-z", cwd=target).decode().split("\0")) - {""} - wanted:
        os.remove(os.path.join(target, rel))
    for rel in wanted:
        source = os.path.join(ROOT, rel)
        if os.path.isfile(source):
            os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
            shutil.copy2(source, os.path.join(target, rel))
    os.symlink(os.path.join(ROOT, ".venv"), os.path.join(target, ".venv"))
    return target


def test_the_quick_start_names_the_three_builds():
    assert readme_build_commands() == ["make build-bd2bb", "make build-imagecode", "make build-vsr"]


@pytest.mark.parametrize("command", ["make build-imagecode", "make build-vsr", "make build-bd2bb"])
def test_a_readme_build_runs_as_written_in_a_fresh_clone(clone, command):
    env = {k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES}
    done = subprocess.run(command.split(), cwd=clone, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    benchmark = command.split("build-", 1)[1]
    # one build, one release: a first build makes its embedded sample (the crowd answers
    # included) without building anything else first
    printed = [line for line in done.stdout.splitlines() if line.startswith("release: ")]
    assert printed == [f"release: releases/{benchmark}/1.0.0"], printed
    release = os.path.join(clone, "releases", benchmark, "1.0.0")
    assert verify_manifest(release) == []
    assert [n for n in os.listdir(os.path.dirname(release)) if n.startswith(".")] == []
