"""No variable dropped without a word (issue 44, item 4): every input and answer variable the
Makefile documents for `make build-<benchmark>` reaches the build, with or without the
benchmark's main input (a sample build takes an answer file beside the sample's other
inputs), and one the goal's benchmark does not take stops make with one line naming it.

The documented variables are read from the Makefile's own comment above `build-%`, so a
variable added there is tested here; `make -n` shows the command each would run.
"""
import json
import os
import re
import subprocess

import pytest

from tests.paths import ROOT

MAKEFILE = os.path.join(str(ROOT), "Makefile")
SELECTORS = {"FG": "flickr30k"}   # a variable that picks a configuration, not a file


def documented():
    """{benchmark: [variables]} of the comment above `build-%`."""
    text = open(MAKEFILE, encoding="utf-8").read()
    block = text.split("# `make build-<benchmark>`", 1)[1].split("MAIN_INPUT_", 1)[0]
    found, benchmark = {}, None
    for line in block.splitlines():
        named = re.match(r"#   ([a-z0-9]+)\s", line)
        if named:
            benchmark = named.group(1)
        if benchmark and line.startswith("#   "):
            found.setdefault(benchmark, []).extend(v for v in re.findall(r"\b([A-Z][A-Z_]*)=", line)
                                                   if v not in found.get(benchmark, []))
    return found


def main_inputs():
    """{benchmark: [its main input variables]} (MAIN_INPUT_<benchmark>)."""
    text = open(MAKEFILE, encoding="utf-8").read()
    return {b: re.findall(r"\$\(([A-Z_]+)\)", rest) for b, rest in re.findall(r"^MAIN_INPUT_(\w+) = (.*)$", text, re.M)}


VARIABLES = documented()
MAIN = main_inputs()
EVERY = sorted({v for vs in VARIABLES.values() for v in vs})


def make(*args):
    env = {k: v for k, v in os.environ.items() if k not in EVERY}
    return subprocess.run(["make", "--no-print-directory", *args], cwd=str(ROOT), env=env,
                          capture_output=True, text=True)


def test_the_makefile_documents_every_benchmark():
    assert set(VARIABLES) == set(MAIN) == {"imagecode", "vsr", "bd2bb", "fg", "nlvr2"}
    assert VARIABLES["imagecode"] == ["VIDEOS", "IMAGES", "DESCRIPTIONS", "RETRIEVALS"]


@pytest.mark.parametrize("with_main", [False, True], ids=["sample", "your-data"])
@pytest.mark.parametrize("benchmark, variable", [(b, v) for b, vs in sorted(VARIABLES.items()) for v in vs])
def test_a_documented_variable_reaches_the_build(benchmark, variable, with_main):
    main = {m: f"/given/{m.lower()}.main" for m in MAIN[benchmark][:1]} if with_main else {}
    value = SELECTORS.get(variable, f"/given/{variable.lower()}.file")
    done = make("-n", f"build-{benchmark}", "VERSION=1.0.1", *(f"{k}={v}" for k, v in {**main, variable: value}.items()))
    assert done.returncode == 0, done.stderr
    command = done.stdout.replace("\\\n", " ")
    assert f"-m pipelines {benchmark} build" in command
    assert value in command, f"{variable}={value} does not reach the build:\n{command}"
    if not with_main and variable not in MAIN[benchmark]:   # the sample's inputs, this one replaced
        assert re.search(r"--config (sample|flickr30k-sample)\b", command), command


@pytest.mark.parametrize("benchmark, variable", [(b, v) for b in sorted(VARIABLES) for v in EVERY
                                                 if v not in VARIABLES[b]])
def test_another_benchmarks_variable_stops_the_build_with_one_line(benchmark, variable):
    done = make("-n", f"build-{benchmark}", f"{variable}=/given/file")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{variable}=/given/file is not a variable of build-{benchmark}" in lines[0], lines
    assert done.stdout == ""   # stopped before any command


def test_an_answer_file_given_to_a_sample_build_is_read_with_the_samples_inputs(tmp_path):
    """`make build-vsr VOTES=...` without COCO or ANNOTATIONS: the sample's pairs, captions
    and COCO files, and these votes (a part of the sample's) instead of the sample's."""
    from pipelines.vsr.sample import make_vsr_sample
    sample = make_vsr_sample(str(tmp_path / "sample"))
    with open(os.path.join(str(sample), "votes.jsonl"), encoding="utf-8") as f:
        lines = f.readlines()[:12]
    votes = tmp_path / "my_votes.jsonl"
    votes.write_text("".join(lines), encoding="utf-8")
    done = make("build-vsr", f"OUT={tmp_path / 'releases'}", "VERSION=1.0.1", f"VOTES={votes}",
                "ARGS=--quiet --no-explorer")
    assert done.returncode == 0, done.stderr[-3000:]
    with open(tmp_path / "releases" / "vsr" / "1.0.1" / "MANIFEST.json") as f:
        manifest = json.load(f)
    inputs = manifest["config"]["inputs"]   # (paths relative to the input root)
    assert [os.path.basename(p) for p in inputs["votes"]] == ["my_votes.jsonl"]
    assert [p.endswith("samples/vsr/captions.jsonl") for p in inputs["captions"]] == [True]
    assert manifest["stages"]["votes"]["line.in"] == len(lines)
