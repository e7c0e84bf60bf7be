"""Faults on a Flink cluster mid-build: a TaskManager killed with SIGKILL, the job server
killed, the worker pool killed with its workers; and the cluster after a crash.

A build may survive a fault (the cluster's supervisor starts a TaskManager in the
place of the lost one, Flink restarts the job on it) or fail; either way it must never
publish a partial or different release: it completes with the release of the in-process
build, or it fails with one line on stderr and leaves no version folder (and no staging
folder) behind. No process of the cluster stays a zombie.

Each test builds the VSR sample on a local cluster (two TaskManagers of one slot,
pipelines/scaleout/flink.py) with `python -m pipelines vsr build` in a process of its
own, waits until the job runs on the cluster, and kills. `make check-flink` runs them
(FLINK_FAULTS=1); they need `make flink-setup` and take a few minutes each.
"""
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from pipelines import registry
from pipelines.release.check.digest import differences, release_digest
from pipelines.scaleout import compare, flink, workers

pytestmark = pytest.mark.skipif(
    os.environ.get("FLINK_FAULTS") != "1",
    reason="Flink fault tests run in `make check-flink` (FLINK_FAULTS=1, after make flink-setup)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARK, CONFIG = "vsr", "sample"
BUILD_TIMEOUT_S = 900


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    settings = flink.Settings(rest_port=workers.free_port(), pool_port=workers.free_port())
    cluster = flink.LocalCluster(str(tmp_path_factory.mktemp("flink-faults") / "cluster"),
                                 settings=settings)
    cluster.start(taskmanagers=2)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    """The digest of the in-process release, which a surviving build must equal."""
    release = compare.build(registry.load(BENCHMARK), CONFIG,
                            str(tmp_path_factory.mktemp("in-process")))
    return release_digest(release)


class Build:
    """`python -m pipelines vsr build` on the cluster, in a process of its own."""

    def __init__(self, cluster: flink.LocalCluster, output: str, name: str):
        self.cluster, self.output, self.job_name = cluster, output, name
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pipelines", BENCHMARK, "build", "--config", CONFIG,
             "--output", output, "--version", "1.0.0", "--no-explorer", "--quiet",
             *cluster.beam_options(), f"--job_name={name}"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def job(self):
        return flink.job_named(self.cluster.rest_address, self.job_name)

    def wait_until_midway(self, timeout_s: float = 600.0) -> dict:
        """The job once it runs on the cluster with some of its tasks finished."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"the build ended first: {self.finish()}"
            job = self.job()
            if job and job["state"] == "RUNNING":
                tasks = job["tasks"]
                if tasks["finished"] >= tasks["total"] // 5 and tasks["running"] > 0:
                    return job
            time.sleep(0.5)
        raise AssertionError(f"job {self.job_name} did not get midway in {timeout_s:.0f} s")

    def finish(self):
        stdout, stderr = self.process.communicate(timeout=BUILD_TIMEOUT_S)
        return self.process.returncode, stdout, stderr

    def job_server_pid(self) -> int:
        jar = self.cluster.install.job_server_jar
        for child in psutil.Process(self.process.pid).children(recursive=True):
            if jar in " ".join(child.cmdline()):
                return child.pid
        raise AssertionError("no job server process under the build")


def _published(output: str):
    """Every folder the build left under <output>/vsr/ (a version, a staging folder)."""
    folder = os.path.join(output, BENCHMARK)
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def _one_line_error(stderr: str) -> str:
    """The build's error: one `error: ...` line and no traceback after it (what Beam
    logs on the way is its own log; it shuts the job server down after the line)."""
    lines = stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    assert len(errors) == 1, stderr[-3000:]
    assert not any(line.startswith("Traceback") for line in lines[errors[0]:]), stderr[-3000:]
    return lines[errors[0]]


def _ended(cluster, build, states=("FAILED", "CANCELED", "FINISHED"), timeout_s=90.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = build.job()
        if job and job["state"] in states:
            return job["state"]
        time.sleep(1)
    return build.job()["state"]


def _taskmanagers_running(cluster):
    return sorted(n for n in cluster.pids() if n.startswith("taskmanager-"))


def _zombies(cluster, timeout_s=30.0):
    """Zombies among the children of this process, the worker pool and the supervisor,
    once each has had `timeout_s` to reap them."""
    deadline = time.monotonic() + timeout_s
    while True:
        cluster.pids()  # polls the processes this process started
        parents = [psutil.Process()] + [psutil.Process(pid) for name, pid in cluster.pids().items()
                                        if name in ("worker-pool", "supervisor")]
        zombies = []
        for parent in parents:
            for child in parent.children():
                try:
                    if child.status() == psutil.STATUS_ZOMBIE:
                        zombies.append(f"{child.pid} (child of {parent.pid})")
                except psutil.NoSuchProcess:
                    pass
        if not zombies or time.monotonic() > deadline:
            return zombies
        time.sleep(0.5)


def test_a_taskmanager_killed_mid_build_is_replaced_by_the_cluster_and_the_release_is_the_same(
        cluster, in_process, tmp_path):
    build = Build(cluster, str(tmp_path), "fault-taskmanager")
    job = build.wait_until_midway()
    running = _taskmanagers_running(cluster)
    victim = running[-1]
    cluster.kill(victim)      # SIGKILL: no goodbye to the JobManager, the pid file stays
    code, _, stderr = build.finish()   # nobody but the cluster's supervisor replaces it
    assert code == 0, f"the build did not survive the lost TaskManager: {stderr[-3000:]}"
    release = os.path.join(str(tmp_path), BENCHMARK, "1.0.0")
    assert differences(in_process, release_digest(release)) == []
    assert _published(str(tmp_path)) == ["1.0.0"]
    history = cluster.rest(f"/jobs/{job['jid']}/exceptions")
    assert history["exceptionHistory"]["entries"], "Flink recorded no failure: nothing was killed"
    replacements = sorted(set(_taskmanagers_running(cluster)) - set(running))
    assert len(replacements) == 1 and victim in cluster.lost(), cluster.pids()
    with open(os.path.join(cluster.folder, "supervisor.log")) as log:
        assert f"{victim} lost: {replacements[0]} started in its place" in log.read()
    assert _zombies(cluster) == []


def test_add_taskmanager_works_after_a_crash_that_left_its_pid_file(cluster):
    """`add_taskmanager` raised "taskmanager-N exited on start" for the crashed one."""
    cluster.kill("supervisor")   # the test replaces the TaskManager, not the supervisor
    try:
        running = _taskmanagers_running(cluster)
        cluster.kill(running[0])
        assert running[0] in cluster.lost()
        name = cluster.add_taskmanager()     # waits until it registers
        assert _taskmanagers_running(cluster) == sorted(running[1:] + [name])
    finally:
        cluster.start_supervisor()
    assert _zombies(cluster) == []


def test_the_job_server_killed_mid_build_fails_in_one_line_and_publishes_nothing(
        cluster, tmp_path):
    build = Build(cluster, str(tmp_path), "fault-job-server")
    build.wait_until_midway()
    os.kill(build.job_server_pid(), signal.SIGKILL)
    code, _, stderr = build.finish()
    assert code == 1
    line = _one_line_error(stderr)
    assert "nothing was published" in line
    assert _published(str(tmp_path)) == []
    # the cluster does not go on with a build nobody waits for
    assert _ended(cluster, build) == "CANCELED"


def test_the_worker_pool_killed_for_good_fails_in_one_line_and_publishes_nothing(
        cluster, tmp_path):
    build = Build(cluster, str(tmp_path), "fault-worker-pool")
    build.wait_until_midway()
    cluster.kill("worker-pool", with_children=True)   # the pool and its SDK workers
    try:
        code, _, stderr = build.finish()   # Flink restarts, finds no pool, gives up
    finally:
        cluster.start_pool()               # for whatever runs on this cluster next
    assert code == 1
    line = _one_line_error(stderr)
    assert "nothing was published" in line
    assert _published(str(tmp_path)) == []
    assert _ended(cluster, build) == "FAILED"
