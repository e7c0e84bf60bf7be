"""The command line exits with the code it means (pipelines/__main__.py): 0 when it did
its job, 2 with one line on stderr for what the user can fix, before any work, and 1 for
a failure of ours. Each command runs as a user runs it, `python -m pipelines ...` in a
process of its own. Also: an option Beam does not know is such a line (Beam only warns
and drops it), and `--help` and `diff` import no model library."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from pipelines.build import check_beam_args, parse_build_args
from pipelines.registry import load
from tests.paths import ROOT
from tests.release.check.test_release_diff import make_release, sets

# What a command that needs no model must not import (each takes seconds to load, and
# a native thread of one alive at exit aborted `imagecode diff` with exit code 134).
MODEL_LIBRARIES = ("torch", "faiss", "tesserocr", "numba", "open_clip", "sentence_transformers",
                   "spacy", "cv2", "transformers", "tensorflow")


def run(*args, script=None):
    """`python -m pipelines ARGS` (or `python -c SCRIPT`) from the repository root."""
    command = [sys.executable, "-c", script] if script else [sys.executable, "-m", "pipelines", *args]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(command, cwd=str(ROOT), env=env, capture_output=True, text=True,
                          timeout=600)


def one_line_error(done, code=2):
    assert done.returncode == code, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@pytest.mark.parametrize("args, code", [
    ((), 2), (("--help",), 0), (("nlvr2",), 2), (("nlvr2", "--help"), 0),
    (("imagecode", "--help"), 0)])
def test_usage(args, code):
    done = run(*args)
    assert done.returncode == code
    assert "usage: python -m pipelines" in (done.stdout if code == 0 else done.stderr)


def test_help_into_a_closed_pipe_ends_quietly():
    """`python -m pipelines --help | head -1`: the reader has gone before the help is
    written, and the command ends as `cat` does (exit 141, no traceback)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen([sys.executable, "-m", "pipelines", "--help"], cwd=str(ROOT), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        process.stdout.close()   # long before the interpreter has started and imported
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=600) == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr


def test_what_a_user_mistyped_is_one_line_and_exit_2():
    assert "unknown benchmark 'nope'" in one_line_error(run("nope", "build"))
    assert "nlvr2 has no command 'nope'" in one_line_error(run("nlvr2", "nope"))
    assert "unknown benchmark(s) nope" in one_line_error(run("check", "dataflow", "nope"))
    # argparse's own errors (a missing or malformed argument) exit 2 too, with its usage
    assert run("nlvr2", "build").returncode == 2
    assert run("nlvr2", "diff", "only-one").returncode == 2
    assert run("cache").returncode == 2


def test_an_option_without_set_is_one_line_before_any_work(tmp_path):
    out = tmp_path / "out"
    base = ["nlvr2", "build", "--config", "sample", "--output", str(out), "--version", "1.0.0"]
    line = one_line_error(run(*base, "--rules.enforce=true"))
    assert line == ("error: unknown option --rules.enforce=true: config values are set with "
                    "--set, e.g. --set rules.enforce=true")
    assert "e.g. --set rules.enforce=false" in one_line_error(run(*base, "--rules.enforce", "false"))
    assert "e.g. --set seed=3" in one_line_error(run(*base, "--seed=3"))
    assert "did you mean --runner?" in one_line_error(run(*base, "--runer=DirectRunner"))
    assert "neither an option of this command nor a Beam pipeline option" in \
        one_line_error(run(*base, "--frobnicate"))
    assert "invalid int value: 'abc'" in one_line_error(run(*base, "--direct_num_workers=abc"))
    assert not out.exists()


def test_beam_options_keep_working():
    benchmark = load("vsr")
    common = ["--config", "sample", "--output", "out", "--version", "1.0.0"]
    for beam in (["--runner", "DirectRunner", "--direct_running_mode=multi_processing",
                  "--direct_num_workers", "2"],
                 ["--runner=DataflowRunner", "--project", "p", "--region=europe-west1",
                  "--temp_location", "gs://b/tmp", "--setup_file=./setup.py",
                  "--experiments=use_runner_v2", "--sdk_container_image", "img:1",
                  "--max_num_workers", "4", "--save_main_session"]):
        args, beam_args = parse_build_args(benchmark, common + beam)
        assert beam_args == beam and args.config == "sample"
        check_beam_args(benchmark, beam_args)   # no UsageError: every one is Beam's


def test_a_build_exits_0_and_honours_beam_options(tmp_path):
    done = run("vsr", "build", "--config", "sample", "--output", str(tmp_path), "--version",
               "1.0.0", "--quiet", "--no-explorer", "--runner=DirectRunner",
               "--direct_running_mode=in_memory")
    assert done.returncode == 0, done.stderr[-2000:]
    assert os.path.isfile(tmp_path / "vsr" / "1.0.0" / "MANIFEST.json")
    # the same version again: the user's to fix, one line, exit 2
    again = run("vsr", "build", "--config", "sample", "--output", str(tmp_path), "--version",
                "1.0.0", "--quiet")
    assert "already exists" in one_line_error(again)


def test_a_release_that_fails_its_own_checks_exits_1(tmp_path):
    """A benchmark whose declared key does not identify its rows is a bug of ours: the
    traceback and exit 1, no version published."""
    script = textwrap.dedent(f"""
        import sys
        from pipelines import build
        from pipelines.release.write.tables import Table
        from pipelines.vsr.benchmark import Vsr

        class SplitAsKey(Vsr):
            def tables(self, plan):
                return {{name: Table(t.stage, t.counter, key="split")
                        for name, t in super().tables(plan).items()}}

        sys.exit(build.build_main(SplitAsKey(), ["--config", "sample", "--output", {str(tmp_path)!r},
                                                 "--version", "1.0.0", "--quiet", "--no-explorer"]))
    """)
    done = run(script=script)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "ReleaseCheckError: table keys do not identify their rows" in done.stderr
    assert os.listdir(tmp_path / "vsr") == []


def test_diff_exits_0_or_2_and_verify_0_1_or_2(tmp_path):
    a = make_release(str(tmp_path), "1.0.0", {}, {"video_sets": sets(s1=("train", [1]))})
    b = make_release(str(tmp_path), "1.1.0", {}, {"video_sets": sets(s1=("train", [2]))})
    done = run("imagecode", "diff", a, b, "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["tables"]["video_sets"]["changed"] == ["s1"]
    assert "not a release" in one_line_error(run("imagecode", "diff", a, str(tmp_path / "none")))
    shard = os.path.join(b, "parquet", "video_sets", "video_sets-00000-of-00001.parquet")
    os.chmod(shard, 0o644)   # a published file is read-only
    with open(shard, "r+b") as f:   # a damaged release: verified first, so the user's to fix
        f.truncate(20)
    error = one_line_error(run("imagecode", "diff", a, b))
    assert error.endswith("is not as published: checksum differs: "
                          "parquet/video_sets/video_sets-00000-of-00001.parquet (python -m pipelines "
                          f"verify {b} lists them; restore it or rebuild it)"), error
    done = run("verify", b)
    assert (done.returncode, done.stdout.splitlines()[0]) == (
        1, "checksum differs: parquet/video_sets/video_sets-00000-of-00001.parquet")
    assert run("verify", a).returncode == 0
    assert "not a release" in one_line_error(run("verify", str(tmp_path / "none")))


def test_verify_of_a_local_release_imports_no_beam(tmp_path):
    """`verify` reads files and Parquet with os and pyarrow: it starts at once (Beam's
    import alone costs seconds)."""
    a = make_release(str(tmp_path), "1.0.0", {}, {"video_sets": sets(s1=("train", [1]))})
    script = textwrap.dedent(f"""
        import contextlib, io, json, sys
        from pipelines.__main__ import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["verify", {a!r}])
        print(json.dumps([code, sorted(m for m in sys.modules if m.split(".")[0] == "apache_beam")]))
    """)
    done = run(script=script)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, []]


def test_help_and_diff_import_no_model_library(tmp_path):
    a = make_release(str(tmp_path), "1.0.0", {}, {"video_sets": sets(s1=("train", [1]))})
    b = make_release(str(tmp_path), "1.1.0", {}, {"video_sets": sets(s2=("test", [1]))})
    for args in (["--help"], ["imagecode", "--help"], ["fg", "--help"], ["imagecode", "diff", a, b],
                 ["verify", a]):
        script = textwrap.dedent(f"""
            import contextlib, io, json, sys
            from pipelines.__main__ import main
            with contextlib.redirect_stdout(io.StringIO()):
                code = main({args!r})
            print(json.dumps([code, sorted(m for m in sys.modules if m.split(".")[0] in {MODEL_LIBRARIES!r})]))
        """)
        done = run(script=script)
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, []], args


def test_calibrate_table3_and_cache_prune_exit_2_on_bad_arguments(tmp_path):
    assert "not a release" in one_line_error(run(
        "imagecode", "calibrate", "--release", str(tmp_path), "--param",
        "mining.distance_threshold", "--values", "0.3"))
    assert "cannot read the captions file" in one_line_error(run(
        "fg", "table3", "--original", str(tmp_path / "a.json"), "--renovated", str(tmp_path / "b.json")))
    assert "--releases: no such folder" in one_line_error(run(
        "cache", "prune", "--cache", str(tmp_path / "cache"), "--releases", str(tmp_path / "none")))
    done = run("cache", "prune", "--cache", str(tmp_path / "cache"), "--releases", str(tmp_path))
    assert done.returncode == 0 and "removed 0 " in done.stdout


def test_a_build_shows_its_progress_and_beam_info_lines_only_with_verbose(tmp_path):
    """By default a build prints its progress lines, warnings and summary: none of Beam's
    INFO lines (30 to 120 a build) nor the stages' (a line per video); `--verbose` shows
    them all."""
    base = ["vsr", "build", "--config", "sample", "--output", str(tmp_path / "out"), "--no-explorer"]
    quiet = run(*base, "--version", "1.0.0")
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert "progress: annotations" in quiet.stderr and quiet.stdout.startswith("release: ")
    assert " INFO " not in quiet.stderr, quiet.stderr[:2000]
    verbose = run(*base, "--version", "1.0.1", "--verbose")
    assert verbose.returncode == 0, verbose.stderr[-2000:]
    assert "INFO apache_beam" in verbose.stderr and "progress: annotations" in verbose.stderr
    assert "INFO pipelines.release.write.assemble: building vsr 1.0.1" in verbose.stderr
