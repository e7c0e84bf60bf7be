"""pipelines/beam_runners.py on runners behind Beam's portable Job API: counters a job
service reports once per fused stage add up, and a failed run ends in one line and
leaves no job running on the cluster."""
import http.server
import json
import threading

import pytest
from apache_beam.metrics import monitoring_infos
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_job_api_pb2

from pipelines import beam_runners
from transforms.core.errors import RunFailed
from transforms.core.stage import read_stage_counts


def _response(*infos):
    response = beam_job_api_pb2.GetJobMetricsResponse()
    response.metrics.attempted.extend(infos)
    response.metrics.committed.extend(infos)
    return response


class _Result:
    def __init__(self, metrics):
        self._metrics = metrics

    def metrics(self):
        return self._metrics


def test_a_counter_reported_by_two_stages_is_summed():
    # What Flink's job service sent for VSR's "All examples/Count sources", which reads a
    # Flatten and so ran in the stages of both of the Flatten's inputs.
    step = "ref_AppliedPTransform_All-examples-Count-sources_229"
    response = _response(
        monitoring_infos.int64_user_counter("stage.examples", "example.in", 24, ptransform=step),
        monitoring_infos.int64_user_counter("stage.examples", "example.in", 4, ptransform=step),
        monitoring_infos.int64_user_counter("stage.examples", "example.out", 28, ptransform="other"))
    assert read_stage_counts(_Result(beam_runners.SummedCounters(response))) == {
        "examples": {"example.in": 28, "example.out": 28}}


def test_counters_of_different_transforms_stay_apart_before_the_stage_sums_them():
    response = _response(
        monitoring_infos.int64_user_counter("stage.s", "row.in", 3, ptransform="a"),
        monitoring_infos.int64_user_counter("stage.s", "row.in", 5, ptransform="b"))
    counters = beam_runners.SummedCounters(response).query()["counters"]
    assert sorted((c.key.step, c.committed, c.attempted) for c in counters) == [
        ("a", 3, 3), ("b", 5, 5)]


class _FlinkRest(http.server.BaseHTTPRequestHandler):
    """A JobManager's REST API holding one running job named `build-1`, cancelled on
    request."""
    cancelled = []

    def do_GET(self):
        state = "CANCELED" if "/jobs/aaaa?mode=cancel" in self.cancelled else "RUNNING"
        body = json.dumps({"jobs": [
            {"jid": "aaaa", "name": "build-1", "state": state},
            {"jid": "bbbb", "name": "build-0", "state": "RUNNING"},
            {"jid": "cccc", "name": "build-1", "state": "FINISHED"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def do_PATCH(self):
        type(self).cancelled.append(self.path)
        self.send_response(202)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def flink_rest():
    _FlinkRest.cancelled = []
    server = http.server.HTTPServer(("localhost", 0), _FlinkRest)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"localhost:{server.server_address[1]}"
    server.shutdown()


def test_a_failed_flink_run_is_one_line_and_its_job_is_cancelled(flink_rest):
    options = PipelineOptions(["--runner=FlinkRunner", f"--flink_master={flink_rest}",
                               "--job_name=build-1"])
    error = RuntimeError("Pipeline build-1_x failed in state FAILED: java.lang.Exception: "
                         "lost TaskManager\n\tat org.apache.flink.Foo(Foo.java:1)\n...")
    failed = beam_runners.run_failed(error, options)
    assert isinstance(failed, RunFailed)
    assert "\n" not in str(failed)
    assert "nothing was published" in str(failed)
    assert "lost TaskManager" in str(failed)
    assert _FlinkRest.cancelled == ["/jobs/aaaa?mode=cancel"]  # only ours, only running


def test_a_flink_job_without_the_slots_it_needs_is_said_so(flink_rest):
    options = PipelineOptions(["--runner=FlinkRunner", f"--flink_master={flink_rest}",
                               "--job_name=build-1"])
    error = RuntimeError("Pipeline build-1_x failed in state FAILED: "
                         "java.util.concurrent.TimeoutException: Timeout has occurred: 60000 ms")
    failed = str(beam_runners.run_failed(error, options))
    assert "\n" not in failed and "Timeout has occurred" in failed
    assert "had not the task slots the job needs" in failed
    other = str(beam_runners.run_failed(RuntimeError("failed: java.lang.Exception: boom"), options))
    assert "task slots" not in other


def test_a_flink_master_that_cannot_be_reached_is_said_so(flink_rest):
    options = PipelineOptions(["--runner=FlinkRunner", "--flink_master=localhost:1",
                               "--job_name=build-1"])
    failed = beam_runners.run_failed(RuntimeError("job server gone"), options)
    assert "could not reach Flink" in str(failed) and "job server gone" in str(failed)


def test_a_flink_build_gets_a_job_name_it_can_find_again():
    options = PipelineOptions(["--runner=FlinkRunner", "--flink_master=localhost:8081"])
    assert beam_runners.runner_for(options) == "FlinkRunner"
    name = options.get_all_options()["job_name"]
    assert name.startswith("vl-bench-")
    named = PipelineOptions(["--runner=FlinkRunner", "--job_name=mine"])
    beam_runners.runner_for(named)
    assert named.get_all_options()["job_name"] == "mine"
