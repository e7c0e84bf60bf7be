"""Builds that cannot start, and builds that die: one clear line before any work, and no
garbage left for the next build (issue 10, cases 6, 10 and 11; docs/reliability.md)."""
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pipelines import runner
from pipelines.registry import load
from pipelines.release import build as release
from pipelines.release import cache as cache_cli
from pipelines.release import runs
from pipelines.runner import parse_build_args
from pipelines.vsr.sample import make_vsr_sample
from tests.paths import ROOT as REPO_ROOT

ROOT = str(REPO_ROOT)
VSR_SAMPLE_CONFIG = os.path.join(ROOT, "pipelines/vsr/configs/sample.yaml")


@pytest.fixture(scope="module")
def vsr_sample(tmp_path_factory):
    return make_vsr_sample(str(tmp_path_factory.mktemp("vsr_sample")))


def vsr_args(sample, out, version="1.0.0"):
    files = {"coco": [f"{sample}/instances_train2017.json", f"{sample}/instances_val2017.json"],
             "annotations": [f"{sample}/public_layout.jsonl"], "captions": [f"{sample}/captions.jsonl"],
             "votes": [f"{sample}/votes.jsonl"], "extra_labels": []}
    sets = [a for key, paths in files.items() for a in ("--set", f"inputs.{key}=[{','.join(paths)}]")]
    return ["--config", VSR_SAMPLE_CONFIG, "--output", str(out), "--version", version, *sets]


def without_progress(err):
    """stderr less the build's progress lines: an output found unwritable after the
    benchmark loaded (seconds) comes after them (pipelines/progress.py)."""
    return "".join(line for line in err.splitlines(keepends=True) if not line.startswith("progress: "))


def hidden(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith(".")) if os.path.isdir(folder) else []


# --- a relative release root (the README's default OUT=releases) ------------------------

def test_a_relative_output_becomes_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args, _ = parse_build_args(load("vsr"), ["--config", "c.yaml", "--output", "releases", "--version", "1.0.0"])
    assert args.output == os.path.join(str(tmp_path), "releases")
    args, _ = parse_build_args(load("vsr"), ["--config", "c.yaml", "--output", "gs://b/r", "--version", "1.0.0"])
    assert args.output == "gs://b/r"


def test_a_build_into_a_relative_output_publishes(vsr_sample, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    final = runner.build("vsr", vsr_args(vsr_sample, "releases"))
    assert final == os.path.join(str(tmp_path), "releases", "vsr", "1.0.0")
    assert "release: releases/vsr/1.0.0" in capsys.readouterr().out
    assert hidden(os.path.join(str(tmp_path), "releases", "vsr")) == []


# --- empty inputs (case 6) --------------------------------------------------------------

def test_an_empty_video_manifest_stops_before_any_work(tmp_path, capsys):
    manifest = tmp_path / "videos.jsonl"
    manifest.write_text("\n  \n")
    code = runner.build_main("imagecode", ["--config", "pipelines/imagecode/configs/sample.yaml",
                           "--set", f"inputs.videos={manifest}", "--set", "static.images=null",
                           "--set", "crowd.descriptions=null", "--set", "crowd.retrievals=null",
                           "--output", str(tmp_path / "out"), "--version", "1.0.0"])
    err = capsys.readouterr().err
    assert code == 2 and err == f"error: inputs.videos: {manifest} is empty: nothing to build\n"
    assert not os.path.exists(tmp_path / "out" / "imagecode")


def test_empty_vsr_and_bd2bb_inputs_stop_before_any_work(vsr_sample, tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    args = vsr_args(vsr_sample, tmp_path / "out")
    args[args.index(f"inputs.annotations=[{vsr_sample}/public_layout.jsonl]")] = f"inputs.annotations=[{empty}]"
    assert runner.build_main("vsr", args) == 2
    assert capsys.readouterr().err == f"error: inputs.annotations: {empty} is empty: nothing to build\n"

    code = runner.build_main("bd2bb", ["--config", "pipelines/bd2bb/configs/sample.yaml", "--set", f"inputs.tuples={empty}",
                       "--output", str(tmp_path / "out"), "--version", "1.0.0"])
    assert code == 2
    assert capsys.readouterr().err == f"error: inputs.tuples: {empty} is empty: nothing to build\n"
    assert not os.path.exists(tmp_path / "out" / "vsr") and not os.path.exists(tmp_path / "out" / "bd2bb")


# --- unwritable output or cache (case 11) -----------------------------------------------

def test_an_unwritable_output_is_one_line_before_any_work(vsr_sample, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert runner.build_main("vsr", vsr_args(vsr_sample, blocker / "releases")) == 2
    err = without_progress(capsys.readouterr().err)
    assert err.startswith(f"error: --output: cannot write to {blocker / 'releases'}: ")
    assert err.count("\n") == 1


def test_an_unwritable_cache_is_one_line_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code = runner.build_main("bd2bb", ["--config", "pipelines/bd2bb/configs/sample.yaml",
                       "--set", f"cache.dir={blocker}/cache",
                       "--output", str(tmp_path / "out"), "--version", "1.0.0"])
    err = without_progress(capsys.readouterr().err)
    assert code == 2 and err.startswith(f"error: cache.dir: cannot write to {blocker}/cache: ")
    assert err.count("\n") == 1
    assert not os.path.exists(tmp_path / "out" / "bd2bb")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits")
def test_a_read_only_output_folder_is_one_line(vsr_sample, tmp_path, capsys):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o500)
    try:
        assert runner.build_main("vsr", vsr_args(vsr_sample, out)) == 2
        assert without_progress(capsys.readouterr().err).startswith(f"error: --output: cannot write to {out}: ")
    finally:
        out.chmod(0o700)


# --- failures clean up after themselves (case 10) ---------------------------------------

@dataclasses.dataclass
class DemoConfig:
    seed: int = 0


def _run_release(tmp_path, execute, cache_root=None, version="1.0.0"):
    return release.build_release(
        benchmark="demo", out=str(tmp_path / "out"), version=version, config=DemoConfig(),
        execute=execute,
        models={}, inputs={}, tables={}, describe=lambda facts: {}, cache_root=cache_root)


def test_a_failing_build_removes_its_staging_its_lock_and_its_cache_temp(tmp_path):
    cache = str(tmp_path / "cache")

    def execute(staging):
        run_id = "demo-" + staging.rsplit("-", 1)[1]
        assert os.path.isfile(runs.staging_lock_path(staging))
        assert os.path.isfile(runs.cache_lock_path(cache, run_id))
        os.makedirs(os.path.join(cache, "embed", f"beam-temp-{run_id}-0123abcd"))
        open(os.path.join(cache, "embed", f"beam-temp-{run_id}-0123abcd", "part"), "w").close()
        raise RuntimeError("a stage failed")

    with pytest.raises(RuntimeError, match="a stage failed"):
        _run_release(tmp_path, execute, cache)
    assert hidden(tmp_path / "out" / "demo") == []
    assert os.listdir(os.path.join(cache, "embed")) == []
    assert os.listdir(os.path.join(cache, runs.CACHE_RUNS_DIR)) == []


class _NoCounters:
    """What a pipeline result offers the release, for a run that counted nothing."""

    def metrics(self):
        return self

    def query(self):
        return {"counters": []}


def test_the_loser_of_two_builds_of_one_version_leaves_nothing(tmp_path):
    def execute(staging):  # another build publishes the same version meanwhile
        os.makedirs(tmp_path / "out" / "demo" / "1.0.0")
        return _NoCounters()

    with pytest.raises(release.ReleaseError):
        release.build_release(benchmark="demo", out=str(tmp_path / "out"), version="1.0.0",
                              config=DemoConfig(), execute=execute, models={}, inputs={}, tables={},
                              describe=lambda facts: {})
    assert os.listdir(tmp_path / "out" / "demo") == ["1.0.0"]


def test_a_build_stops_before_any_work_when_its_previous_version_is_not_as_published(tmp_path, capsys):
    """Its release notes would show a flipped bit as changed rows: one line (exit 2)
    naming the file, before the pipeline runs, and nothing left behind."""
    from pipelines import cli
    from tests.release.release_files import writable_copy

    previous = _run_release(tmp_path, lambda staging: _NoCounters())
    assert _modes(previous) == {0}   # published read-only
    damaged = writable_copy(previous, str(tmp_path / "copy"))
    card = os.path.join(damaged, "DATACARD.md")
    data = bytearray(open(card, "rb").read())
    data[len(data) // 2] ^= 0x01
    open(card, "wb").write(bytes(data))
    os.rename(previous, str(tmp_path / "published"))
    os.rename(damaged, previous)
    ran = []
    code = cli.run_main(lambda argv: _run_release(tmp_path, ran.append, version="1.1.0"), [])
    err = capsys.readouterr().err
    assert (code, ran, err.count("\n")) == (2, [], 1), err
    assert err.startswith(f"error: the previous version {previous} is not as published: "
                          "checksum differs: DATACARD.md"), err
    assert sorted(os.listdir(tmp_path / "out" / "demo")) == ["1.0.0"]


def _modes(folder):
    """The write bits (of anyone) of a folder and everything below it."""
    found = {os.stat(folder).st_mode & 0o222}
    for parent, folders, files in os.walk(folder):
        found |= {os.stat(os.path.join(parent, n)).st_mode & 0o222 for n in folders + files}
    return found


def test_a_full_disk_ends_in_one_line_and_removes_the_partial_build(tmp_path, monkeypatch, capsys):
    from pipelines import cli

    def execute(staging):
        open(os.path.join(staging, "partial"), "w").close()
        raise RuntimeError("... while running 'Write rejects': OSError: [Errno 28] No space left on device")

    code = cli.run_main(lambda argv: _run_release(tmp_path, execute), [])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no space left on device") and err.count("\n") == 1
    assert hidden(tmp_path / "out" / "demo") == []


def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_garbage_of_dead_builds_is_swept_and_live_builds_are_left_alone(tmp_path):
    bench_dir = tmp_path / "out" / "demo"
    cache = tmp_path / "cache"
    dead, alive, elsewhere = runs.this_process(), runs.this_process(), runs.this_process()
    dead.update(pid=_dead_pid(), started=None)
    elsewhere.update(host="another-host")
    for name, holder in (("dead", dead), ("alive", alive), ("elsewhere", elsewhere), ("nolock", None)):
        staging = bench_dir / f".1.0.0.staging-{name}"
        (staging / "parquet").mkdir(parents=True)
        temp = cache / "embed" / f"beam-temp-demo-{name}-0123abcd"
        temp.mkdir(parents=True)
        if holder is not None:
            (cache / runs.CACHE_RUNS_DIR).mkdir(exist_ok=True)
            for lock in (runs.staging_lock_path(str(staging)),
                         runs.cache_lock_path(str(cache), f"demo-{name}")):
                with open(lock, "w") as f:
                    json.dump(holder, f)
    (cache / "embed" / "demo-dead-00000-of-00001.parquet").write_bytes(b"a finished shard")

    removed = runs.sweep_release_dir(str(bench_dir))
    assert sorted(os.path.basename(p) for p in removed) == [".1.0.0.staging-dead", ".1.0.0.staging-nolock"]
    assert hidden(bench_dir) == [".1.0.0.staging-alive", ".1.0.0.staging-alive.lock",
                                 ".1.0.0.staging-elsewhere", ".1.0.0.staging-elsewhere.lock"]
    removed = runs.sweep_cache(str(cache))
    assert sorted(os.path.basename(p) for p in removed) == ["beam-temp-demo-dead-0123abcd",
                                                            "beam-temp-demo-nolock-0123abcd"]
    assert sorted(os.listdir(cache / "embed")) == [
        "beam-temp-demo-alive-0123abcd", "beam-temp-demo-elsewhere-0123abcd",
        "demo-dead-00000-of-00001.parquet"]


def test_cache_prune_frees_temp_folders_of_dead_builds(tmp_path, capsys):
    temp = tmp_path / "cache" / "embed" / "beam-temp-demo-gone-0123abcd"
    temp.mkdir(parents=True)
    (temp / "partial.parquet").write_bytes(b"x" * 1000)
    (tmp_path / "releases").mkdir()
    assert cache_cli.main(["prune", "--cache", str(tmp_path / "cache"),
                           "--releases", str(tmp_path / "releases")]) == 0
    out = capsys.readouterr().out
    assert "1000 bytes" in out and not temp.exists()


def _start_build(vsr_sample, out):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "pipelines", "vsr", "build", *vsr_args(vsr_sample, out)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bench_dir = os.path.join(str(out), "vsr")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
            not n.endswith(".lock") for n in hidden(bench_dir)):
        time.sleep(0.02)
    assert proc.poll() is None, "the build ended before it could be stopped"
    return proc, bench_dir


def test_kill_9_leaves_garbage_that_the_next_build_removes(vsr_sample, tmp_path):
    proc, bench_dir = _start_build(vsr_sample, tmp_path / "out")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = hidden(bench_dir)
    assert any(n.endswith(".lock") for n in left) and len(left) == 2
    runner.build("vsr", vsr_args(vsr_sample, tmp_path / "out", version="1.0.1"))
    assert hidden(bench_dir) == [] and os.listdir(bench_dir) == ["1.0.1"]


def test_cache_prune_removes_what_a_killed_build_left(vsr_sample, tmp_path):
    """`make cache-prune` after `kill -9` (it left the staging folder and its lock): both
    go, while a staging folder whose lock was taken on another host stays, as its build
    may still run there."""
    out = tmp_path / "out"
    proc, bench_dir = _start_build(vsr_sample, out)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = hidden(bench_dir)
    assert len(left) == 2 and any(n.endswith(".lock") for n in left)
    elsewhere = os.path.join(bench_dir, ".2.0.0.staging-elsewhere")
    os.makedirs(os.path.join(elsewhere, "parquet"))
    with open(runs.staging_lock_path(elsewhere), "w") as f:
        json.dump({**runs.this_process(), "host": "another-host"}, f)
    done = subprocess.run([sys.executable, "-m", "pipelines", "cache", "prune",   # make cache-prune
                           "--cache", str(out / ".cache"), "--releases", str(out)],
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert hidden(bench_dir) == [".2.0.0.staging-elsewhere", ".2.0.0.staging-elsewhere.lock"]
    assert all(f"removed {os.path.join(bench_dir, name)}" in done.stdout for name in left)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_stop_signal_removes_the_build_s_own_staging(vsr_sample, tmp_path, signum):
    proc, bench_dir = _start_build(vsr_sample, tmp_path / "out")
    proc.send_signal(signum)
    assert proc.wait(timeout=60) == 128 + signum
    assert hidden(bench_dir) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
@pytest.mark.parametrize("step", ["WriteImpl min_shards", "Renamed"])
def test_a_stop_signal_in_the_write_phase_publishes_nothing(vsr_sample, tmp_path, signum, step):
    """Stopped while Beam's sinks write or rename their shards (its INFO lines, shown by
    --verbose): the build exits 128 + signal and leaves neither a release nor its staging.
    Ctrl-C there used to be swallowed and the build published with exit 0."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "pipelines", "vsr", "build", "--verbose",
                             *vsr_args(vsr_sample, out)], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    seen = False
    for line in proc.stderr:
        if step in line:
            proc.send_signal(signum)
            seen = True
            break
    proc.stderr.read()   # drain, so the build never blocks on a full pipe
    code = proc.wait(timeout=120)
    assert seen, f"the build never logged {step!r}"
    assert code == 128 + signum
    bench_dir = os.path.join(str(out), "vsr")
    assert not os.path.exists(bench_dir) or os.listdir(bench_dir) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small file system needs root")
def test_a_really_full_disk(vsr_sample, tmp_path):
    """A 100 kB tmpfs: the release does not fit. One line, nothing left, and a rerun fails
    the same way (not earlier) because nothing was left behind. The build runs as a user
    runs it, in a process of its own: Beam's in-process runner keeps the failed Parquet
    writer (and its open file) until the process ends, which would keep the disk busy."""
    disk = tmp_path / "small"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=100k", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("this machine does not allow mounting a tmpfs")
    try:
        for _ in range(2):
            # --quiet: on a loaded machine progress lines would come before the error
            done = subprocess.run([sys.executable, "-m", "pipelines", "vsr", "build",
                                   *vsr_args(vsr_sample, disk), "--quiet"], cwd=ROOT,
                                  env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
                                  text=True, timeout=300)
            assert done.returncode == 2, done.stderr
            assert done.stderr.startswith("error: no space left on device"), done.stderr
            assert hidden(disk / "vsr") == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)
