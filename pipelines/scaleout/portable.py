"""Does a benchmark give the same release when its workers are other processes?

Flink, Spark and Dataflow Runner v2 run Python the same way: the driver submits the
pipeline to a job service over Beam's portable Job API, and SDK workers - separate
processes, with their own working directory and nothing of the driver's memory - run
the DoFns. This check runs each sample that way on one machine: Beam's embedded job
service (`--job_endpoint=embed`) and a worker pool started here in another process and
another working directory (`--environment_type=EXTERNAL`, as Flink's Beam worker pools
run: pipelines/scaleout/workers.py). Its release must equal the in-process build's
(pipelines/scaleout/compare.py). The Flink check (flink.py) does the same on a cluster.

It catches what only shows up across processes: a relative path resolved against the
driver's working directory, state kept in a module global, a file written on the driver
and read on a worker, counters that do not travel.
"""
from __future__ import annotations

from typing import List


def portable_options(worker_address: str) -> List[str]:
    return ["--runner=PortableRunner", "--job_endpoint=embed",
            "--environment_type=EXTERNAL", f"--environment_config={worker_address}"]
