"""Choosing a Beam runner that never downloads anything, and what differs by runner.

Beam's DirectRunner (2.77) first tries the Prism runner, which fetches a Go binary at
run time. Locally we therefore run Beam's in-process FnApiRunner, the same engine the
DirectRunner falls back to. It honours `--direct_running_mode` (in_memory,
multi_threading, multi_processing) and `--direct_num_workers`. Any other runner
(DataflowRunner, FlinkRunner, ...) is passed through unchanged.

For runners behind Beam's portable Job API (PortableRunner, FlinkRunner) this module
also mends what the driver reads back (`counters_summed`) and what a failed run leaves
behind (`run_failed`): docs/scale-out.md.
"""
from __future__ import annotations

import collections
import json
import logging
import os
import re
import time
import urllib.request
import uuid
from typing import Optional

from apache_beam.metrics.metric import MetricResults
from apache_beam.options.pipeline_options import (FlinkRunnerOptions, GoogleCloudOptions,
                                                  PipelineOptions, StandardOptions)

from transforms.core.errors import RunFailed

LOCAL_RUNNER_NAMES = (None, "", "DirectRunner", "FnApiRunner", "local")
log = logging.getLogger("pipelines.beam_runners")


def runner_for(options: PipelineOptions):
    """The runner object (or name) to give `beam.Pipeline` for these options."""
    name: Optional[str] = options.view_as(StandardOptions).runner
    _keep_loopback_off_proxies()
    if name in LOCAL_RUNNER_NAMES:
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner
        return FnApiRunner()
    if _is_flink(options) and not options.view_as(GoogleCloudOptions).job_name:
        # A name of our own, so that a failed build can find its job on the cluster.
        options.view_as(GoogleCloudOptions).job_name = f"vl-bench-{uuid.uuid4().hex[:12]}"
    return name


def _keep_loopback_off_proxies() -> None:
    """The multi-process mode and the portable runner's local job service and workers
    talk gRPC over localhost; with http(s)_proxy set and no no_proxy entry for it, gRPC
    sends that traffic to the proxy and the run hangs."""
    for var in ("no_proxy", "NO_PROXY"):
        entries = [e for e in os.environ.get(var, "").split(",") if e]
        missing = [h for h in ("localhost", "127.0.0.1") if h not in entries]
        if missing:
            os.environ[var] = ",".join(entries + missing)


def is_local(options: PipelineOptions) -> bool:
    return options.view_as(StandardOptions).runner in LOCAL_RUNNER_NAMES


def _is_flink(options: PipelineOptions) -> bool:
    return options.view_as(StandardOptions).runner in ("FlinkRunner", "flink")


# --- counters --------------------------------------------------------------------------

def counters_summed(result):
    """The result of a run, with counters that add up on every runner.

    A transform that reads a Flatten runs in every stage the Flatten's inputs were fused
    into, and a job service behind the portable Job API (Flink's) reports its counters
    once per stage: two MonitoringInfos with the same transform, namespace and name.
    Beam's Python client keeps only the last of them (portable_metrics), so a counter
    like `example.in` lost what the other stage counted and the release did not
    reconcile. Here such duplicates are summed: each stage counted its own elements."""
    from apache_beam.runners.portability import portable_runner
    if isinstance(result, portable_runner.PipelineResult):
        return _SummedCountersResult(result)
    return result


class _SummedCountersResult:
    """A portable PipelineResult whose metrics() sums counters reported per stage."""

    def __init__(self, result):
        self._result = result
        self._metrics = None

    def __getattr__(self, name):
        return getattr(self._result, name)

    def metrics(self) -> MetricResults:
        if self._metrics is None:
            from apache_beam.portability.api import beam_job_api_pb2
            response = self._result._job_service.GetJobMetrics(
                beam_job_api_pb2.GetJobMetricsRequest(job_id=self._result._job_id))
            self._metrics = SummedCounters(response)
        return self._metrics


class SummedCounters(MetricResults):
    """MetricResults of a GetJobMetrics response: counters with the same key summed,
    everything else as Beam's PortableMetrics reads it."""

    def __init__(self, response):
        from apache_beam.runners.portability.portable_runner import PortableMetrics
        self._rest = PortableMetrics(response)
        self._committed = _sum_counters(response.metrics.committed)
        self._attempted = _sum_counters(response.metrics.attempted)

    def query(self, filter=None):
        from apache_beam.metrics.execution import MetricResult
        results = self._rest.query(filter)
        keys = set(self._committed) | set(self._attempted)
        results[self.COUNTERS] = [
            MetricResult(key, self._committed.get(key), self._attempted.get(key))
            for key in keys if MetricResults.matches(filter, key)]
        return results


def _sum_counters(infos) -> dict:
    from apache_beam.metrics import monitoring_infos
    from apache_beam.runners.portability import portable_metrics
    totals = collections.Counter()
    for info in infos:
        if not monitoring_infos.is_counter(info):
            continue
        try:
            key = portable_metrics._create_metric_key(info)
        except ValueError:  # a system metric without a transform: not ours
            continue
        totals[key] += monitoring_infos.extract_metric_result_map_value(info)
    return dict(totals)


# --- a failed run ----------------------------------------------------------------------

def run_failed(error: BaseException, options: PipelineOptions) -> RunFailed:
    """The one-line error for a run that a remote runner failed. On Flink, the job is
    also cancelled if it still runs (when the job server died, the cluster would go on
    writing into a staging folder that the failed build removes)."""
    runner = options.view_as(StandardOptions).runner
    first_line = next((line.strip() for line in str(error).splitlines() if line.strip()),
                      type(error).__name__)
    if len(first_line) > 300:
        first_line = first_line[:300] + " ..."
    cancelled = _cancel_flink_job(options) if _is_flink(options) else ""
    cause = _flink_cause(str(error)) if _is_flink(options) else ""
    return RunFailed(f"the {runner} run failed, nothing was published{cancelled}: "
                     f"{first_line}{cause}")


# Flink fails a job whose tasks waited `slot.request.timeout` for a slot with these (the
# root cause Beam reports is the bare TimeoutException): name the likely cause, since the
# exception alone does not say that slots were missing.
_SLOT_TIMEOUT = re.compile(r"NoResourceAvailableException|TimeoutException: Timeout has occurred")


def _flink_cause(text: str) -> str:
    if not _SLOT_TIMEOUT.search(text):
        return ""
    return (" (the cluster had not the task slots the job needs within slot.request.timeout:"
            " a TaskManager lost and not replaced? `python -m pipelines cluster status` lists them)")


def _cancel_flink_job(options: PipelineOptions, wait_s: float = 60.0) -> str:
    """Cancel the build's job if the cluster still runs it, and wait until it has
    stopped (its tasks could still write into the staging folder the build removes);
    a note for the message."""
    master = options.view_as(FlinkRunnerOptions).flink_master
    name = options.view_as(GoogleCloudOptions).job_name
    if not master or master.startswith("[") or not name:
        return ""
    base = (master if "://" in master else f"http://{master}").rstrip("/")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def running():
        with opener.open(f"{base}/jobs/overview", timeout=10) as answer:
            jobs = json.load(answer).get("jobs", [])
        return [j["jid"] for j in jobs if j.get("name") == name and j.get("state") not in TERMINAL]

    try:
        cancelled = running()
        for jid in cancelled:
            request = urllib.request.Request(f"{base}/jobs/{jid}?mode=cancel", method="PATCH")
            opener.open(request, timeout=10).close()
            log.warning("cancelling Flink job %s (%s): it went on after the build failed", jid, name)
        deadline = time.monotonic() + wait_s
        while cancelled and running() and time.monotonic() < deadline:
            time.sleep(1)
    except (OSError, ValueError) as err:
        return f" (could not reach Flink at {base} to cancel job {name}: {err})"
    return f" (Flink job {name} cancelled)" if cancelled else ""


TERMINAL = ("FINISHED", "FAILED", "CANCELED")
