"""pipelines/scaleout/workers.py: a worker pool that several TaskManagers can share.

Every TaskManager numbers its SDK workers from the same start, so two of them ask one
pool for workers with the same id; each must get its own process, and a StopWorker that
cannot tell them apart must kill neither (Beam's own pool killed the other's worker
while it started, and that TaskManager waited for it for ever). A worker that ends is
reaped, not left a zombie; the pool listens on loopback addresses only."""
import ipaddress
import os
import sys
import time

import psutil
from apache_beam.portability.api import beam_fn_api_pb2, endpoints_pb2

from pipelines.scaleout import workers
from pipelines.scaleout.workers import WorkerPool

# Stands in for the SDK harness: lives until stopped, says which control address it got.
SLEEPER = [sys.executable, "-c", "import sys, time; print(sys.argv[1:], flush=True); time.sleep(120)"]


def _start(pool, worker_id, control):
    request = beam_fn_api_pb2.StartWorkerRequest(
        worker_id=worker_id, control_endpoint=endpoints_pb2.ApiServiceDescriptor(url=control))
    return pool.StartWorker(request, None)


def _stop(pool, worker_id):
    return pool.StopWorker(beam_fn_api_pb2.StopWorkerRequest(worker_id=worker_id), None)


def _alive(pool):
    return sorted(key for key, process in pool._workers.items() if process.poll() is None)


def test_two_taskmanagers_get_two_workers_with_the_same_id(tmp_path):
    pool = WorkerPool(str(tmp_path), harness=SLEEPER)
    try:
        assert not _start(pool, "1-1", "localhost:1001").error
        assert not _start(pool, "1-1", "localhost:1002").error
        assert _alive(pool) == [("1-1", "localhost:1001"), ("1-1", "localhost:1002")]
        _stop(pool, "1-1")  # which TaskManager sent it is unknown: nobody is killed
        assert _alive(pool) == [("1-1", "localhost:1001"), ("1-1", "localhost:1002")]
    finally:
        pool.stop_all()
    assert _alive(pool) == []


def test_a_stop_with_an_unambiguous_id_stops_that_worker(tmp_path):
    pool = WorkerPool(str(tmp_path), harness=SLEEPER)
    try:
        _start(pool, "1-1", "localhost:1001")
        _start(pool, "2-1", "localhost:1001")
        processes = dict(pool._workers)
        _stop(pool, "2-1")
        assert processes[("2-1", "localhost:1001")].poll() is not None
        assert _alive(pool) == [("1-1", "localhost:1001")]
    finally:
        pool.stop_all()


def test_each_worker_logs_to_its_own_file(tmp_path):
    pool = WorkerPool(str(tmp_path), harness=SLEEPER)
    try:
        _start(pool, "1-1", "localhost:1001")
        _start(pool, "1-1", "localhost:1002")
        deadline = time.monotonic() + 30
        logs = [tmp_path / "sdk-worker-1.log", tmp_path / "sdk-worker-2.log"]
        while time.monotonic() < deadline and not all(p.exists() and p.read_text() for p in logs):
            time.sleep(0.1)
        assert "localhost:1001" in logs[0].read_text()
        assert "localhost:1002" in logs[1].read_text()
    finally:
        pool.stop_all()


def test_a_worker_that_cannot_start_is_an_error_not_a_crash(tmp_path):
    pool = WorkerPool(str(tmp_path), harness=[os.path.join(str(tmp_path), "no-such-program")])
    response = _start(pool, "1-1", "localhost:1001")
    assert "cannot start a worker" in response.error


def test_a_worker_that_ends_is_reaped_without_another_call(tmp_path):
    """Before, an ended worker stayed a zombie until the next StartWorker or StopWorker."""
    pool = WorkerPool(str(tmp_path), harness=[sys.executable, "-c", "pass"])
    _start(pool, "1-1", "localhost:1001")
    process = pool._workers[("1-1", "localhost:1001")]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (psutil.pid_exists(process.pid) or pool._workers):
        time.sleep(0.1)
    assert not psutil.pid_exists(process.pid), "the ended worker is still a process (a zombie)"
    assert pool._workers == {}


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return (getattr(address, "ipv4_mapped", None) or address).is_loopback  # ::ffff:127.0.0.1


def test_the_pool_listens_on_loopback_only(tmp_path):
    port = workers.free_port()
    pool = workers.start_pool(port, str(tmp_path))
    try:
        workers.wait_for_port(port, pool, 300, "the worker pool")  # a bound: slow under load
        listening = [c.laddr for c in psutil.Process(pool.pid).net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN]
        assert [address.port for address in listening] and \
            {address.port for address in listening} == {port}
        assert all(_loopback(address.ip) for address in listening), listening
    finally:
        pool.terminate()
        pool.wait(timeout=30)
