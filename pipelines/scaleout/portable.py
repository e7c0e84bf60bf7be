"""Does a benchmark give the same release when its workers are other processes?

Flink, Spark and Dataflow Runner v2 run Python the same way: the driver submits the
pipeline to a job service over Beam's portable Job API, and SDK workers - separate
processes, with their own working directory and nothing of the driver's memory - run
the DoFns. This check runs each sample that way on one machine: Beam's embedded job
service (`--job_endpoint=embed`) and a worker pool started here in another process and
another working directory (`--environment_type=EXTERNAL`, as Flink's Beam worker pools
run). Its release must equal the in-process build's, table by table (row order and
shards aside: pipelines/release/digest.py), file by file and counter by counter.

It catches what only shows up across processes: a relative path resolved against the
driver's working directory, state kept in a module global, a file written on the driver
and read on a worker, counters that do not travel.
"""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Iterator, List

from pipelines import runner
from pipelines.benchmark import Benchmark
from pipelines.release.digest import differences, release_digest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@contextlib.contextmanager
def worker_pool(start_timeout_s: float = 60.0) -> Iterator[str]:
    """A Beam SDK worker pool in another process and working directory; yields its
    address. Workers find the project as installed workers would (on PYTHONPATH) and
    this interpreter first on PATH (the pool starts workers as `python`)."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="beam-worker-cwd-") as cwd:
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        for var in ("no_proxy", "NO_PROXY"):  # gRPC to localhost must not go to a proxy
            env[var] = ",".join(filter(None, [env.get(var, ""), "localhost", "127.0.0.1"]))
        log = open(os.path.join(cwd, "worker_pool.log"), "w")
        pool = subprocess.Popen(
            [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
             f"--service_port={port}"], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for_port(port, pool, start_timeout_s)
            yield f"localhost:{port}"
        finally:
            pool.terminate()
            try:
                pool.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pool.kill()
            log.close()


def portable_options(worker_address: str) -> List[str]:
    return ["--runner=PortableRunner", "--job_endpoint=embed",
            "--environment_type=EXTERNAL", f"--environment_config={worker_address}"]


def compare(benchmark: Benchmark, config_name: str, worker_address: str, work: str) -> List[str]:
    """Build `config_name` in process and through the portable runner; the differences
    between the two releases (empty when they hold the same)."""
    common = ["--config", config_name, "--version", "1.0.0"]
    in_process = runner.build(benchmark, [*common, "--output", os.path.join(work, "in-process")])
    portable = runner.build(benchmark, [*common, "--output", os.path.join(work, "portable"),
                                        *portable_options(worker_address)])
    return differences(release_digest(in_process), release_digest(portable),
                       label=f"{benchmark.name} ({config_name}) ")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the Beam worker pool exited with {process.returncode} on start")
        with socket.socket() as s:
            if s.connect_ex(("localhost", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the Beam worker pool did not listen on port {port} in {timeout_s:.0f} s")
