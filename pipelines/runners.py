"""Choosing a Beam runner that never downloads anything.

Beam's DirectRunner (2.77) first tries the Prism runner, which fetches a Go binary at
run time. Locally we therefore run Beam's in-process FnApiRunner, the same engine the
DirectRunner falls back to. It honours `--direct_running_mode` (in_memory,
multi_threading, multi_processing) and `--direct_num_workers`. Any other runner
(DataflowRunner, ...) is passed through unchanged.
"""
from __future__ import annotations

import os
from typing import Optional

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

LOCAL_RUNNER_NAMES = (None, "", "DirectRunner", "FnApiRunner", "local")


def runner_for(options: PipelineOptions):
    """The runner object (or name) to give `beam.Pipeline` for these options."""
    name: Optional[str] = options.view_as(StandardOptions).runner
    _keep_loopback_off_proxies()
    if name in LOCAL_RUNNER_NAMES:
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner
        return FnApiRunner()
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
