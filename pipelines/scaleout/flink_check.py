"""`python -m pipelines check flink`: every sample built on a Flink cluster of separate JVMs.

A local cluster (pipelines/scaleout/flink.py: a JobManager, two TaskManagers, a worker
pool) is started in build/flink/check/ (its logs stay there after the check). Each
sample is built in process and on the cluster; the two releases must be equal
(pipelines/scaleout/compare.py), and Flink's REST API must show that the job's subtasks
ran on every TaskManager, and that some operator ran on several at once: the work was
spread, not merely accepted by a cluster.
"""
from __future__ import annotations

import os
import time
import uuid
from typing import List, Sequence, Tuple

from pipelines.benchmark import Benchmark
from pipelines.release.write.manifest import remove_tree
from pipelines.scaleout import compare, flink, workers

CHECK_DIR = os.path.join(flink.SETUP_DIR, "check")


def run(samples: Sequence[Tuple[Benchmark, str]], taskmanagers: int = 2) -> List[str]:
    install = flink.Install.locate()
    remove_tree(CHECK_DIR, ignore_errors=True)  # the last check's logs and releases
    cluster = flink.LocalCluster(
        os.path.join(CHECK_DIR, "cluster"), install,
        flink.Settings(rest_port=workers.free_port(), pool_port=workers.free_port()))
    started = time.monotonic()
    cluster.start(taskmanagers)
    print(f"Flink {flink.FLINK_VERSION} cluster: JobManager, {taskmanagers} TaskManagers and "
          f"the worker pool up in {time.monotonic() - started:.0f} s "
          f"(logs in {cluster.folder})", flush=True)
    failures = []
    try:
        for benchmark, config in samples:
            failures += _check_sample(cluster, benchmark, config)
    finally:
        cluster.stop()
    return failures


def _check_sample(cluster: flink.LocalCluster, benchmark: Benchmark, config: str) -> List[str]:
    label = f"{benchmark.name} ({config})"
    job_name = f"check-{benchmark.name}-{config}-{uuid.uuid4().hex[:8]}"
    work = os.path.join(CHECK_DIR, f"{benchmark.name}-{config}")
    try:
        result = compare.compare(benchmark, config, work,
                                 [*cluster.beam_options(), f"--job_name={job_name}"],
                                 "Flink")
    except Exception as error:  # report every sample, then fail
        return [f"{label}: the build failed: {type(error).__name__}: "
                + str(error).strip().splitlines()[0][:500]]
    print(result.line(), flush=True)
    problems = list(result.problems)
    problems += _placement(cluster, job_name, label)
    if not problems:  # kept otherwise, to compare the two releases
        remove_tree(work, ignore_errors=True)
    return problems


def _placement(cluster: flink.LocalCluster, job_name: str, label: str) -> List[str]:
    """Problems unless the job ran on every registered TaskManager, some operator on
    several at once. Prints what the REST API says."""
    job = flink.job_named(cluster.rest_address, job_name)
    if job is None:
        return [f"{label}: no Flink job named {job_name} in the JobManager's REST API"]
    placed = flink.taskmanagers_of_job(cluster.rest_address, job["jid"])
    registered = {tm["id"] for tm in cluster.taskmanagers()}
    used = set().union(*placed.values()) if placed else set()
    spread = [name for name, tms in placed.items() if len(tms) > 1]
    print(f"  Flink job {job['jid']} ({job['state']}): {len(placed)} operators, "
          f"{len(spread)} with subtasks on {len(registered)} TaskManagers; TaskManagers "
          f"used: {len(used & registered)} of {len(registered)}", flush=True)
    problems = []
    if job["state"] != "FINISHED":
        problems.append(f"{label}: Flink job {job['jid']} ended {job['state']}")
    if used != registered:
        problems.append(f"{label}: subtasks ran on {sorted(used)}, not on every TaskManager "
                        f"{sorted(registered)}")
    if not spread:
        problems.append(f"{label}: no operator had subtasks on more than one TaskManager")
    return problems
