"""Choosing a Beam runner that never downloads anything.

Beam's DirectRunner (2.77) first tries the Prism runner, which fetches a Go binary at
run time. Locally we therefore run Beam's in-process FnApiRunner, the same engine the
DirectRunner falls back to. It honours `--direct_running_mode` (in_memory,
multi_threading, multi_processing) and `--direct_num_workers`. Any other runner
(DataflowRunner, ...) is passed through unchanged.
"""
from __future__ import annotations

from typing import Optional

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

LOCAL_RUNNER_NAMES = (None, "", "DirectRunner", "FnApiRunner", "local")


def runner_for(options: PipelineOptions):
    """The runner object (or name) to give `beam.Pipeline` for these options."""
    name: Optional[str] = options.view_as(StandardOptions).runner
    if name in LOCAL_RUNNER_NAMES:
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner
        return FnApiRunner()
    return name


def is_local(options: PipelineOptions) -> bool:
    return options.view_as(StandardOptions).runner in LOCAL_RUNNER_NAMES
