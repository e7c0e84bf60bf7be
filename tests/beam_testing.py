"""Beam test helpers: pipelines on the in-process runner (never Prism, never a download)."""
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline

from pipelines.beam_runners import runner_for


def local_test_pipeline(**options) -> TestPipeline:
    """A TestPipeline on the FnApiRunner; `options` become pipeline flags."""
    flags = [f"--{k}={v}" for k, v in options.items()]
    return TestPipeline(runner=runner_for(PipelineOptions(flags)), options=PipelineOptions(flags),
                        blocking=True)
