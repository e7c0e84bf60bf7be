"""Validate first, import later (issue 34): `--help` at every level and every mistake a
user can make in a build's command (a mistyped `--set` key, an unknown config name, an
input file that is not there, a bad --version) are answered before Beam, torch or any
model library is imported, so each answers within a second (bench/cli_latency.py
measures it; no time is asserted here).

Each command runs as a user runs it, `python -X importtime -m pipelines ...` in a
process of its own: the interpreter lists every module it imports on stderr, and the
test reads which top-level packages were loaded."""
import os
import subprocess
import sys

import pytest

from pipelines import registry
from pipelines.config import InputFile, input_fields, load_config
from tests.paths import ROOT
from tests.test_cli import MODEL_LIBRARIES

HEAVY = ("apache_beam", "pyarrow", "numpy", *MODEL_LIBRARIES)
BENCHMARKS = registry.names()


def run(*args):
    """(exit code, the lines on stderr that are not the import list, top-level packages
    imported, stdout) of `python -m pipelines ARGS` from the repository root."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "pipelines", *args],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=600)
    imported, lines = set(), []
    for line in done.stderr.splitlines():
        if line.startswith("import time:"):
            imported.add(line.rsplit("|", 1)[-1].strip().split(".")[0])
        else:
            lines.append(line)
    return done.returncode, lines, imported, done.stdout


def assert_light(imported):
    assert "yaml" in imported or "pipelines" in imported   # the import list was read at all
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def one_line(code, lines, expected_code=2):
    assert code == expected_code and len(lines) == 1 and lines[0].startswith("error: "), (code, lines)
    return lines[0]


def build(name, *extra, config="sample", output="/nonexistent/out", version="1.0.0"):
    """(exit code, stderr lines, imported) of a build."""
    return run(name, "build", "--config", config, "--output", output, "--version", version, *extra)[:3]


def test_top_level_help_imports_nothing_heavy():
    code, _, imported, out = run("--help")
    assert code == 0 and "usage: python -m pipelines" in out
    assert_light(imported)


@pytest.mark.parametrize("name", BENCHMARKS)
def test_help_mistakes_and_missing_inputs_are_answered_before_beam_or_a_model(name, tmp_path):
    entry = registry.entry(name)
    own = [[name, verb, "--help"] for verb in entry.commands]   # calibrate, table3
    for args in ([name, "--help"], [name, "build", "--help"], [name, "diff", "--help"], *own):
        code, _, imported, out = run(*args)
        assert code == 0 and "usage:" in out, args
        assert_light(imported)

    # build --help shows a --set of this benchmark's own config, and it is a valid one
    out = " ".join(run(name, "build", "--help")[3].split())
    assert f"e.g. {entry.example_set}" in out
    load_config(entry.config_path("sample"), [entry.example_set], entry.config_type)

    key = entry.example_set.split("=")[0] + "x"   # a mistyped key of its own config
    code, lines, imported = build(name, "--set", f"{key}=1")
    assert f"unknown config key(s): {key}" in one_line(code, lines)
    assert_light(imported)

    code, lines, imported = build(name, config="sampel")
    line = one_line(code, lines)
    assert "sampel" in line and all(n in line for n in entry.config_names()), line
    assert_light(imported)

    # every input file the config can name, set to a path that is not there
    missing = []
    for key, kind, is_list in input_fields(entry.config_type):
        if kind is InputFile:
            path = str(tmp_path / key)
            missing += ["--set", f"{key}=[{path}]" if is_list else f"{key}={path}"]
    code, lines, imported = build(name, *missing, output=str(tmp_path / "out"))
    assert "no such file: " + str(tmp_path) in one_line(code, lines)
    assert_light(imported)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("version", ["01.0.0", "1.0.0+build.5", "1.0.\u0663", "\uff11.0.0",
                                     "1." + "9" * 300 + ".0", "1.0", "1.0.0\n", "1.0.0-", "1.0.0-01"])
def test_a_bad_version_is_one_line_before_any_work(version, tmp_path):
    code, lines, imported = build("vsr", output=str(tmp_path / "out"), version=version)
    assert one_line(code, lines).startswith("error: --version: "), lines
    assert_light(imported)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("version", ["0.0.0", "1.2.3", "10.20.30", "2.0.0-rc.1", "1.0.0-alpha-a.b-c",
                                     "1.0.0-" + "a" * 58])
def test_a_good_version_passes_the_check_and_is_a_safe_folder_name(version):
    """Every version the rule takes is a folder name the release accepts as it is
    (pipelines/release/write/manifest.py version_dir): a version outside it (a "+", a non-ASCII
    digit, 300 digits) used to fail there, after the whole run, with a traceback."""
    from pipelines import cli
    from schemas.names import safe_name
    cli.check_version(version)
    assert safe_name(version) == version


@pytest.mark.parametrize("name", BENCHMARKS)
def test_the_registry_names_what_the_benchmark_uses(name):
    """What the runner reads before loading a benchmark (its config type and configs, and
    whether a config reads the embedded sample) is what the loaded benchmark uses."""
    entry, benchmark = registry.entry(name), registry.load(name)
    assert entry.config_type is benchmark.config_type
    assert os.path.samefile(entry.configs_dir, os.path.join(benchmark.package_dir, "configs"))
    assert entry.config_names() == benchmark.config_names()
    for config in benchmark.sample_configs():
        assert benchmark.reads_sample(load_config(entry.config_path(config), [], entry.config_type))
    assert not benchmark.reads_sample(entry.config_type())   # the defaults name no sample file
