"""Progress lines of a local build (pipelines/progress.py, transforms/core/tallies.py):
its phases, and per main stage items done of the total, on stderr and in its log; none
on stderr with --quiet; the multi-process runner's workers tally into files the driver
sums. tests/test_progress_all.py holds every benchmark's lines, on a fake clock."""
import io
import json
import os
import re
import subprocess
import sys

import pytest

from pipelines import build
from pipelines.progress import Estimate, Progress, Reporter, progress_line, read_tallies
from tests.paths import ROOT
from pipelines.vsr.sample import make_vsr_sample
from tests.release.write.test_failures import vsr_args
from transforms.core.tallies import PROGRESS_DIR_ENV

LINE = re.compile(r"^progress: (\w+) (\d+)/(\d+) \((\d+)%\)(?:  [\d.]+/s)?(?:  (done|~\S+ left))?$")
PHASES = ["loading the benchmark", "preparing the sample", "loading models and tools",
          "running the pipeline", "writing the release"]

MULTI_PROCESS = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]


@pytest.fixture(scope="module")
def vsr_sample(tmp_path_factory):
    return make_vsr_sample(str(tmp_path_factory.mktemp("vsr_sample")))


def test_a_multi_process_build_reports_each_main_stage_done_of_total(vsr_sample, tmp_path, capsys):
    final = build.build("vsr", vsr_args(vsr_sample, tmp_path / "out") + MULTI_PROCESS)
    err = capsys.readouterr().err.splitlines()
    lines = [line for line in err if LINE.match(line)]
    stages = json.load(open(os.path.join(final, "MANIFEST.json")))["stages"]
    last = {LINE.match(line).group(1): LINE.match(line) for line in lines}
    assert set(last) == {"images", "annotations"}, err
    for label, level in (("images", "image"), ("annotations", "annotation")):
        done, total = int(last[label].group(2)), int(last[label].group(3))
        assert done == total == stages["coco"][f"{level}.in"] > 0
        assert last[label].group(5) == "done"
    # the phases, in order (a phase over before the first look is not said), then the end
    said = [p for line in err for p in PHASES if line.startswith(f"progress: {p}  ")]
    assert said == sorted(said, key=PHASES.index) and "writing the release" in said, err
    assert err[-1].startswith("progress: built in ") and f"(log: {tmp_path}/out/.logs/vsr-1.0.0.log)" in err[-1]
    log = open(tmp_path / "out" / ".logs" / "vsr-1.0.0.log").read()
    assert all(line in log for line in err if line.startswith("progress:"))
    assert "build vsr 1.0.0: config" in log and "loading the benchmark" in log   # said or not: logged


def test_beam_records_go_to_the_build_log_not_the_terminal(caplog):
    """Beam logs a failing worker's traceback at ERROR before the build's one-line error:
    during a build it is written to the log only; after it, Beam's logger is as before."""
    import logging
    from pipelines.build_log import beam_records_into
    written = []
    beam_logger = logging.getLogger("apache_beam.runners.common")
    with caplog.at_level(logging.WARNING):
        with beam_records_into(written.append):
            beam_logger.error("OSError: [Errno 28] No space left on device")
        assert written == ["ERROR apache_beam.runners.common: OSError: [Errno 28] No space left on device"]
        assert caplog.records == []
        beam_logger.error("after the build")
    assert [r.getMessage() for r in caplog.records] == ["after the build"]
    assert len(written) == 1


def test_what_beams_code_logs_on_the_root_logger_goes_to_the_build_log(caplog):
    """Beam's job-server start-up logs `Waiting for grpc channel` on the root logger
    (logging.log, no logger of its own): a Flink build printed it a dozen times."""
    import logging
    import apache_beam.utils.subprocess_server as beam_module
    from pipelines.build_log import beam_records_into
    written = []
    beam_code = compile('import logging\nlogging.log(logging.WARNING, "Waiting for grpc channel")',
                        beam_module.__file__, "exec")   # a record whose pathname is Beam's
    with caplog.at_level(logging.WARNING):
        with beam_records_into(written.append):
            exec(beam_code, {})
            logging.warning("our own warning")
        exec(beam_code, {})
    assert written == ["WARNING root: Waiting for grpc channel"]
    assert [r.getMessage() for r in caplog.records] == ["our own warning", "Waiting for grpc channel"]


def test_quiet_prints_no_progress(vsr_sample, tmp_path, capsys):
    build.build("vsr", vsr_args(vsr_sample, tmp_path / "out") + ["--quiet"])
    assert "progress:" not in capsys.readouterr().err
    assert PROGRESS_DIR_ENV not in os.environ


def test_tallies_of_several_processes_are_summed(tmp_path):
    record = "from transforms.core import tallies; tallies.record('coco', 'image.in', {n})"
    for n in (3, 4):
        subprocess.run([sys.executable, "-c", record.format(n=n)], check=True, cwd=str(ROOT),
                       env={**os.environ, PROGRESS_DIR_ENV: str(tmp_path)})
    assert len(os.listdir(tmp_path)) == 2   # one file per process
    assert read_tallies(str(tmp_path)) == {"coco": {"image.in": 7}}


def test_done_counts_rejects_anywhere_and_the_last_stage_out():
    item = Progress("tuples", "tuple", "clusters", total_counter=("read", "line.out"))
    stages = {"read": {"line.out": 10}, "dedupe": {"tuple.rejected.duplicate": 2},
              "language": {"tuple.rejected.not_english": 1, "sentence.rejected.x": 5},
              "clusters": {"tuple.out": 4}}
    assert (item.done(stages), item.total_of(stages)) == (7, 10)
    only = Progress("tuples", "tuple", "clusters", total_counter=("read", "line.out"),
                    rejected_in=("language",))
    assert only.done(stages) == 5
    estimate = Estimate()
    estimate.update(1, 10, now=0.0)
    assert progress_line(item, 1, 10, estimate) == "progress: tuples 1/10 (10%)"   # no rate yet
    estimate.update(7, 10, now=6.0)
    assert progress_line(item, 7, 10, estimate) == "progress: tuples 7/10 (70%)  1.0/s  ~3s left"
    assert progress_line(item, 7, 10, estimate, final=True).endswith("  done")
    assert progress_line(Progress("videos", "video", "shots"), 3, None) == "progress: videos 3"


def test_cache_hits_finish_items_and_done_never_passes_the_total():
    item = Progress("images", "image", "embed", total_counter=("images", "entry.out"),
                    cached=("image_embedding",))
    warm = {"images": {"entry.out": 74}, "embed": {"image.out": 0, "image.rejected.unreadable_image": 1},
            "images.x": {}, "cache.image_embedding": {"hit": 72, "miss": 1},
            "image_content": {"image.rejected.duplicate_image": 1}}
    assert item.done(warm) == 74
    assert progress_line(item, 80, 74).startswith("progress: images 74/74 (100%)")


def test_the_reporter_waits_for_its_first_look_then_says_only_news_and_always_the_last_lines():
    now = [0.0]
    stream = io.StringIO()
    reporter = Reporter(stream, clock=lambda: now[0])
    reporter.phase("loading the benchmark")
    assert stream.getvalue() == ""            # a user error now would be the only line
    now[0] = 5.0
    reporter.tick({})
    reporter.watch([Progress("images", "image", "embed", total=4),
                    Progress("videos", "video", "shots", total_counter=("manifest", "line.out"))])
    now[0] = 7.0
    reporter.tick({})
    now[0] = 10.0
    reporter.tick({"embed": {"image.out": 1}})
    now[0] = 15.0
    reporter.tick({"embed": {"image.out": 1}})   # no news, not yet a heartbeat: no line
    reporter.run_finished({"embed": {"image.out": 4}})
    lines = stream.getvalue().splitlines()
    assert lines == ["progress: loading the benchmark  5s", "progress: running the pipeline  5s",
                     "progress: images 0/4 (0%)",   # its total known: listed from the start
                     "progress: images 1/4 (25%)", "progress: images 4/4 (100%)  0.60/s  done"]
    assert "videos" not in stream.getvalue()   # a stage with nothing to do says nothing


def test_a_process_reads_the_progress_folder_once_and_the_driver_sets_its_own(tmp_path, monkeypatch):
    """A counter increment does not look the variable up (it did, at 6% of a --quiet
    build's CPU): a process reads it once; the driver tells its own process where to
    tally while the pipeline runs, and to stop after."""
    from transforms.core import tallies as tally
    monkeypatch.setattr(tally, "_folder", tally._UNREAD)
    monkeypatch.delenv(PROGRESS_DIR_ENV, raising=False)
    tally.record("coco", "image.in")                     # nobody asked: read once, nothing tallied
    monkeypatch.setenv(PROGRESS_DIR_ENV, str(tmp_path))
    tally.record("coco", "image.in")                     # not read again
    assert os.listdir(tmp_path) == []
    monkeypatch.delenv(PROGRESS_DIR_ENV)
    reporter = Reporter(io.StringIO())
    reporter.watch([Progress("images", "image", "coco", total=3)])
    tally.record("coco", "image.in", 2)
    assert read_tallies(reporter.folder) == {"coco": {"image.in": 2}}
    reporter.run_finished({"coco": {"image.out": 3}})
    assert tally._current() is None and PROGRESS_DIR_ENV not in os.environ
    quiet = Reporter(None)                               # --quiet: nothing tallied
    quiet.watch([Progress("images", "image", "coco", total=3)])
    assert quiet.folder is None and tally._current() is None


def test_a_line_shows_the_rate_of_the_work_inside_slow_items_and_never_a_flat_zero():
    """Issue 43: a video is minutes of the paper's CLIP on a CPU, so `videos 3/4 (75%)
    0.0/s` said nothing for minutes; ImageCoDe's line counts the frames embedded and
    their rate, and any rate keeps two significant digits."""
    from pipelines.progress import rate_text
    assert [rate_text(r) for r in (123.4, 3.44, 0.213, 0.00517, 0.0)] == ["123", "3.4", "0.21", "0.0052", "0"]
    item = Progress("videos", "video", "shots", work=("embed", "frame.embedded", "frames"))
    stages = {"shots": {"video.out": 3}, "embed": {"frame.embedded": 1204}}
    assert item.work_done(stages) == 1204
    estimate = Estimate()
    estimate.update(1, 8, now=0.0)
    estimate.update(3, 8, now=600.0)
    assert progress_line(item, 3, 8, estimate, work=(1204, 1.8)) == \
        "progress: videos 3/8 (37%)  1,204 frames  1.8 frames/s  ~25m00s left"
    assert progress_line(item, 3, 8, estimate, work=(0, None)) == "progress: videos 3/8 (37%)  0.0033/s  ~25m00s left"
