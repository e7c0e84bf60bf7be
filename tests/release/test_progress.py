"""Progress lines of a local build (pipelines/progress.py, transforms/core/progress.py):
per main stage, items done of the total, on stderr; none with --quiet; the multi-process
runner's workers tally into files the driver sums."""
import io
import json
import os
import re
import subprocess
import sys

import pytest

from pipelines import runner
from pipelines.progress import Progress, Reporter, progress_line, read_tallies, reporting
from tests.paths import ROOT
from pipelines.vsr.sample import make_vsr_sample
from tests.release.test_failures import vsr_args
from transforms.core.progress import PROGRESS_DIR_ENV

LINE = re.compile(r"^progress: (\w+) (\d+)/(\d+) \((\d+)%\)  [\d.]+/s  (done|~\S+ left)$")

MULTI_PROCESS = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]


@pytest.fixture(scope="module")
def vsr_sample(tmp_path_factory):
    return make_vsr_sample(str(tmp_path_factory.mktemp("vsr_sample")))


def test_a_multi_process_build_reports_each_main_stage_done_of_total(vsr_sample, tmp_path, capsys):
    final = runner.build("vsr", vsr_args(vsr_sample, tmp_path / "out") + MULTI_PROCESS)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("progress:")]
    assert lines and all(LINE.match(line) for line in lines), lines
    stages = json.load(open(os.path.join(final, "MANIFEST.json")))["stages"]
    last = {LINE.match(line).group(1): LINE.match(line) for line in lines}
    assert set(last) == {"images", "annotations"}
    for label, level in (("images", "image"), ("annotations", "annotation")):
        done, total = int(last[label].group(2)), int(last[label].group(3))
        assert done == total == stages["coco"][f"{level}.in"] > 0
        assert last[label].group(5) == "done"


def test_quiet_prints_no_progress(vsr_sample, tmp_path, capsys):
    runner.build("vsr", vsr_args(vsr_sample, tmp_path / "out") + ["--quiet"])
    assert "progress:" not in capsys.readouterr().err
    assert PROGRESS_DIR_ENV not in os.environ


def test_tallies_of_several_processes_are_summed(tmp_path):
    record = "from transforms.core import progress; progress.record('coco', 'image.in', {n})"
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
    assert progress_line(item, stages, elapsed=7.0) == "progress: tuples 7/10 (70%)  1.0/s  ~3s left"
    assert progress_line(item, stages, elapsed=7.0, final=True).endswith("  done")
    assert progress_line(Progress("videos", "video", "shots", total=None), {"shots": {"video.out": 3}},
                         elapsed=1.0) == "progress: videos 3  3.0/s"


def test_the_reporter_prints_only_news_and_always_the_last_lines(tmp_path):
    stream = io.StringIO()
    reporter = Reporter([Progress("images", "image", "embed", total=4),
                         Progress("videos", "video", "shots", total_counter=("manifest", "line.out"))],
                        stream)
    reporter._print({"embed": {"image.out": 1}}, final=False)
    reporter._print({"embed": {"image.out": 1}}, final=False)   # no news: no line
    reporter._print({"embed": {"image.out": 4}}, final=True)
    lines = stream.getvalue().splitlines()
    assert [line.split("  ")[0] for line in lines] == ["progress: images 1/4 (25%)",
                                                       "progress: images 4/4 (100%)"]
    assert "videos" not in stream.getvalue()   # a stage with nothing to do says nothing


def test_a_process_reads_the_progress_folder_once_and_the_driver_sets_its_own(tmp_path, monkeypatch):
    """A counter increment does not look the variable up (it did, at 6% of a --quiet
    build's CPU): a process reads it once; the driver tells its own process where to
    tally while it reports, and to stop after."""
    from transforms.core import progress as tally
    monkeypatch.setattr(tally, "_folder", tally._UNREAD)
    monkeypatch.delenv(PROGRESS_DIR_ENV, raising=False)
    tally.record("coco", "image.in")                     # nobody asked: read once, nothing tallied
    monkeypatch.setenv(PROGRESS_DIR_ENV, str(tmp_path))
    tally.record("coco", "image.in")                     # not read again
    assert os.listdir(tmp_path) == []
    monkeypatch.delenv(PROGRESS_DIR_ENV)
    with reporting([Progress("images", "image", "coco", total=3)], stream=io.StringIO()) as reporter:
        tally.record("coco", "image.in", 2)
        assert read_tallies(reporter.folder) == {"coco": {"image.in": 2}}
    assert tally._current() is None and PROGRESS_DIR_ENV not in os.environ
