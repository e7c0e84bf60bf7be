"""The Python worker pool that runners with an EXTERNAL environment ask for SDK workers.

A runner (Flink's TaskManagers, Beam's embedded job service) calls StartWorker with the
address of its control service; the pool starts a Beam SDK harness in a new process that
connects back there and runs the DoFns. Beam ships such a pool
(apache_beam.runners.worker.worker_pool_main), one per TaskManager as Beam's deployments
run it. This one can be shared by several TaskManagers on one machine, as the local
cluster does (pipelines/scaleout/flink.py):

- Beam's pool keeps its workers by worker id, and every TaskManager numbers its workers
  from the same start ("1-1", "2-1", ...). Two TaskManagers sharing it overwrite each
  other's entries, and the StopWorker of one kills the other's worker while it is still
  starting: that TaskManager then waits for it for ever. Here a worker is known by its
  id and its control address, which is one TaskManager's; a StopWorker whose id is not
  unique kills nothing (the worker ends when its TaskManager closes its control stream,
  as every worker does, or when the pool stops).
- Each worker writes its output to its own log file in the pool's log folder (Beam's pool
  sends it to a pipe nobody reads).
- A worker that ends is waited for at once (Beam's pool, and this one before, left it a
  zombie until the next StartWorker).
- It listens on localhost unless told otherwise (`--host`): whoever reaches the port can
  make it start processes, and the cluster's JVMs listen on localhost too.

    python -m pipelines.scaleout.workers --port 50000 --log-dir logs/ [--host localhost]
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures
from typing import Dict, Iterator, List, Optional, Tuple

import grpc
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
log = logging.getLogger("pipelines.scaleout.workers")

# What a worker process runs: Beam's SDK harness, as Beam's own pool starts it.
HARNESS = ("import sys; from apache_beam.runners.worker.sdk_worker import SdkHarness; "
           "SdkHarness(sys.argv[1], worker_id=sys.argv[2], state_cache_size=0, "
           "data_buffer_time_limit_ms=-1).run()")


class WorkerPool(beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolServicer):
    """The BeamFnExternalWorkerPool service; its workers are processes of this machine."""

    def __init__(self, log_dir: str, harness: Optional[List[str]] = None):
        self.log_dir = log_dir
        # the command a worker runs, given the control address and the worker id
        self.harness = harness or [sys.executable, "-c", HARNESS]
        self._lock = threading.Lock()
        self._workers: Dict[Tuple[str, str], subprocess.Popen] = {}
        self._started = 0

    def StartWorker(self, request, context):
        control = request.control_endpoint.url
        with self._lock:
            self._started += 1
            path = os.path.join(self.log_dir, f"sdk-worker-{self._started}.log")
            try:
                with open(path, "ab") as out:
                    process = subprocess.Popen(
                        [*self.harness, control, request.worker_id],
                        stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
            except OSError as error:
                return beam_fn_api_pb2.StartWorkerResponse(error=f"cannot start a worker: {error}")
            self._workers[(request.worker_id, control)] = process
        threading.Thread(target=self._reap_when_done, args=((request.worker_id, control), process),
                         name=f"reap-{process.pid}", daemon=True).start()
        log.info("worker %s for %s: pid %d, log %s", request.worker_id, control, process.pid, path)
        return beam_fn_api_pb2.StartWorkerResponse()

    def StopWorker(self, request, context):
        with self._lock:
            matching = [key for key in self._workers if key[0] == request.worker_id]
            process = self._workers.pop(matching[0]) if len(matching) == 1 else None
        if process is not None:
            _stop(process)
        elif matching:
            log.info("StopWorker %s: %d workers have that id (several TaskManagers); each "
                     "ends when its TaskManager closes its control stream",
                     request.worker_id, len(matching))
        return beam_fn_api_pb2.StopWorkerResponse()

    def stop_all(self) -> None:
        with self._lock:
            processes, self._workers = list(self._workers.values()), {}
        for process in processes:
            _stop(process)

    def _reap_when_done(self, key: Tuple[str, str], process: subprocess.Popen) -> None:
        """Wait for the worker to end (no zombie is left) and forget it."""
        code = process.wait()
        with self._lock:
            if self._workers.get(key) is process:
                del self._workers[key]
        log.info("worker %s for %s (pid %d) ended with %d", key[0], key[1], process.pid, code)


def _stop(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def serve(port: int, log_dir: str, host: str = "localhost") -> None:
    """Serve the pool on `host`:`port` until SIGTERM or SIGINT; then stop every worker.
    ("localhost" is every loopback address gRPC resolves it to, 127.0.0.1 and ::1.)"""
    os.makedirs(log_dir, exist_ok=True)
    pool = WorkerPool(log_dir)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(pool, server)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if not server.add_insecure_port(address):
        raise SystemExit(f"error: the worker pool cannot listen on {address}")
    server.start()
    log.info("worker pool listening on %s; workers log to %s", address, log_dir)
    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopped.set())
    stopped.wait()
    server.stop(grace=None)
    pool.stop_all()


# --- starting a pool from a driver ----------------------------------------------------

def pool_environment() -> Dict[str, str]:
    """The pool's environment: workers find the project on PYTHONPATH (as installed
    workers would), this interpreter first on PATH, and gRPC to localhost off proxies."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    for var in ("no_proxy", "NO_PROXY"):
        env[var] = ",".join(filter(None, [env.get(var, ""), "localhost", "127.0.0.1"]))
    return env


def start_pool(port: int, folder: str, detach: bool = False,
               host: str = "localhost") -> subprocess.Popen:
    """Start the pool as a process working in `folder` (not the driver's working
    directory), logging to `folder`/worker-pool.log and its workers beside it.
    `detach` puts it in its own session, so that it outlives the command that started it."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "worker-pool.log"), "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "pipelines.scaleout.workers", f"--port={port}",
             f"--host={host}", f"--log-dir={folder}"], cwd=folder, env=pool_environment(),
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=detach)


@contextlib.contextmanager
def worker_pool(start_timeout_s: float = 60.0) -> Iterator[str]:
    """A worker pool in another process and working directory for the length of the
    block; yields its address."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="beam-worker-pool-") as folder:
        pool = start_pool(port, folder)
        try:
            wait_for_port(port, pool, start_timeout_s, "the Beam worker pool")
            yield f"localhost:{port}"
        finally:
            pool.terminate()
            try:
                pool.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pool.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def port_open(port: int, host: str = "localhost") -> bool:
    with socket.socket() as s:
        return s.connect_ex((host, port)) == 0


def wait_for_port(port: int, process: Optional[subprocess.Popen], timeout_s: float,
                  what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} on start")
        if port_open(port):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on port {port} in {timeout_s:.0f} s")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines.scaleout.workers",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="localhost",
                        help="the address to listen on (default localhost; 0.0.0.0 or :: "
                             "for every interface: only where the network is trusted)")
    parser.add_argument("--log-dir", required=True, help="the pool's workers log here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(args.port, os.path.abspath(args.log_dir), args.host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
