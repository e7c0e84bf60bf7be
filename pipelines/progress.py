"""Progress lines of a local build, on stderr, from its first second to its last (quiet
with `--quiet`): what the build is doing, and per main stage the items done of the
total, the rate and the time left.

    progress: loading the benchmark  5s
    progress: loading models and tools  9s
    progress: running the pipeline  41s
    progress: videos 3/5 (60%)  1,204 frames  38 frames/s  ~3s left
    progress: images 74/74 (100%)  12.1/s  done
    progress: writing the release  1m02s
    progress: built in 1m09s (log: releases/.logs/imagecode-1.0.0.log)

Phases. Once the command's own arguments, config and inputs are checked (a second, and
a mistake there is the one line a command prints), the runner names each phase as it
starts (`Reporter.phase`): loading the benchmark (Beam and the stages: imports), preparing
the sample, loading models and tools (the benchmark's preflight), running the pipeline,
writing the release (files, data card, explorer). The first line comes at the first look,
EVERY_S after the reporter starts (a user error found sooner is printed alone); from then
on a phase line comes when the phase starts, and again while nothing else is said: no
build is silent for more than HEARTBEAT_S + EVERY_S (the promise to the user is 30 s).

Main stages. A benchmark names them (`Benchmark.progress`): the level its items are
counted at (video, image, annotation, tuple), the stage whose `<level>.out` finishes an
item and where the total comes from - a number known at preflight, or the counter of
the stage that reads the items (it grows while they are read). An item is done when
that last stage passed it, a stage rejected it (`<level>.rejected.*`; any stage, or only
those named in `rejected_in`), or a cache it names (`cached`) had its result: a hit of
the read-through cache skips the computing stage, and counts in `cache.<stage>`'s `hit`
(transforms/cache/store.py). So done reaches the total exactly, on a cold build and on a
warm rebuild alike.

Rate and time left. The rate is the items done since the stage's first line over the
time since then: not since the build began (model loading is no stage's work), and not
counting what was done when the first line came (a rebuild's cached items arrive in one
burst, then the computed ones at the computing pace). Beam finishes items in bundles, so
the time left so computed still swings; a line's estimate is kept within a factor
MAX_SWING of the previous line's, and the next lines close in on the rate's.

While the pipeline runs, workers tally their stage counters into small files of a local
folder (transforms/core/tallies.py; worker processes of the multi-process runner
inherit the folder through the environment) and a driver thread sums them every
EVERY_S. When the run ends, the last line of each stage is printed from Beam's own
counters, the release's source of truth. On Dataflow the same counters are Beam metrics,
live in its console. Every line also goes to the build's log (pipelines/build_log.py).
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, Optional, Sequence, TextIO, Tuple

from pipelines import stops
from transforms.core.tallies import PROGRESS_DIR_ENV, use_folder

EVERY_S = 5.0        # how often the driver thread looks at the tallies
HEARTBEAT_S = 20.0   # the longest silence: a line is due after it (promised: 30 s)
MAX_SWING = 2.0      # a line's time left is within this factor of the previous line's

Stages = Dict[str, Dict[str, int]]


@dataclass(frozen=True)
class Progress:
    """One main stage's progress: `label` ("videos"), the `level` its items are counted
    at ("video"), the stage whose `<level>.out` finishes an item, and the total: `total`
    when preflight knows it, else the counter `total_counter` = (stage, name).
    `cached`: read-through cache stages whose hits finish an item without the last stage
    (ImageCoDe's "image_embedding"); `rejected_in`: the stages whose rejects finish an
    item (empty: any stage's; name them when items rejected at this level still go on,
    as FG's coarse-text check passes its rejects to the release)."""
    label: str
    level: str
    last_stage: str
    total: Optional[int] = None
    total_counter: Optional[Tuple[str, str]] = None
    cached: Tuple[str, ...] = ()
    rejected_in: Tuple[str, ...] = ()
    # (stage, counter, unit): the work inside the items, whose rate the line shows instead
    # of the items' own (a video is minutes of work: ImageCoDe's "frames" embedded)
    work: Optional[Tuple[str, str, str]] = None

    def work_done(self, stages: Stages) -> int:
        if self.work is None:
            return 0
        stage, counter, _ = self.work
        return stages.get(stage, {}).get(counter, 0)

    def done(self, stages: Stages) -> int:
        prefix = f"{self.level}.rejected."
        rejected = sum(n for stage, names in stages.items()
                       if not self.rejected_in or stage in self.rejected_in
                       for name, n in names.items() if name.startswith(prefix))
        cached = sum(stages.get(f"cache.{stage}", {}).get("hit", 0) for stage in self.cached)
        return rejected + cached + stages.get(self.last_stage, {}).get(f"{self.level}.out", 0)

    def total_of(self, stages: Stages) -> Optional[int]:
        if self.total is not None:
            return self.total
        if self.total_counter is not None:
            stage, name = self.total_counter
            return stages.get(stage, {}).get(name)
        return None


class Estimate:
    """One main stage's rate and time left, line after line (see the module docstring)."""

    def __init__(self):
        self.first: Optional[Tuple[float, int]] = None   # (time, done) of the first line
        self.rate: Optional[float] = None
        self.left: Optional[float] = None                 # what the last line said

    def update(self, done: int, total: Optional[int], now: float) -> None:
        if self.first is None:
            if done > 0:   # waiting for its first item is not the stage's pace
                self.first = (now, done)
            return
        since, done_then = self.first
        if now <= since or done <= done_then:
            return   # nothing finished since the first line: no rate yet, keep the last
        self.rate = (done - done_then) / (now - since)
        if total is None:
            return
        left = max(total - done, 0) / self.rate
        if self.left is not None:
            left = min(max(left, self.left / MAX_SWING), self.left * MAX_SWING)
        self.left = left


def progress_line(item: Progress, done: int, total: Optional[int],
                  estimate: Optional[Estimate] = None, final: bool = False,
                  work: Optional[Tuple[int, Optional[float]]] = None) -> str:
    """`progress: images 40/74 (54%)  3.1/s  ~11s left` (rate and time left once known);
    with `work` (count, rate) of the item's work: `videos 3/8 (37%)  1,204 frames  2.3
    frames/s  ~6m left`, the work's rate instead of the items'."""
    if total is not None:
        done = min(done, total)
    text = f"progress: {item.label} {done}"
    if total:
        text += f"/{total} ({100 * done // total}%)"
    rate = estimate.rate if estimate is not None else None
    if work is not None and work[0]:
        unit = item.work[2]
        text += f"  {work[0]:,} {unit}"
        if work[1] is not None:
            text += f"  {rate_text(work[1])} {unit}/s"
    elif rate is not None:
        text += f"  {rate_text(rate)}/s"
    if final or (total is not None and done >= total):
        text += "  done"
    elif estimate is not None and estimate.left is not None:
        text += f"  ~{duration(estimate.left)} left"
    return text


def rate_text(rate: float) -> str:
    """A rate that moves at every scale: 12, 3.4, 0.21, 0.0052 (never a flat 0.0)."""
    if rate >= 10:
        return f"{rate:.0f}"
    if rate >= 1:
        return f"{rate:.1f}"
    if rate <= 0:
        return "0"
    return f"{rate:.{1 - math.floor(math.log10(rate))}f}"   # two significant digits


def duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def read_tallies(folder: str) -> Stages:
    """The workers' tallies summed: {stage: {counter: n}}."""
    stages: Stages = {}
    for name in os.listdir(folder):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                tally = json.load(f)
        except (OSError, ValueError):
            continue  # replaced while we read it: the next round has it
        for stage, names in tally.items():
            into = stages.setdefault(stage, {})
            for counter, n in names.items():
                into[counter] = into.get(counter, 0) + n
    return stages


class Reporter:
    """Says what a build is doing (see the module docstring): `phase` as each phase
    starts, `watch` the main stages while the pipeline runs, `tick` every EVERY_S (the
    driver thread's, or a test's with its own clock), `run_finished` with Beam's counters,
    `close` at the end. Lines go to `stream` (None: the log only, for --quiet) and `log`."""

    def __init__(self, stream: Optional[TextIO], log: Callable[[str], None] = lambda line: None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream, self.log, self.clock = stream, log, clock
        self.started = clock()
        self.items: Tuple[Progress, ...] = ()
        self.folder: Optional[str] = None
        self._phase = ""
        self._last_line_at = self.started
        self._spoken = stream is None   # --quiet: the log has every line at once
        self._shown: Dict[str, tuple] = {}
        self._estimates: Dict[str, Estimate] = {}
        self._finished: set = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # --- what the runner says -----------------------------------------------------------

    def phase(self, name: str) -> None:
        """`name` starts. Said at once, unless the build has said nothing yet: its first
        line waits for the first tick (EVERY_S), so a command stopped at once by a user
        error prints that error alone (the log has it at once). A stop that came and
        was lost on its way (pipelines/stops.py raise_if_lost) ends the build here."""
        stops.raise_if_lost()
        with self._lock:
            self._phase = name
            if self._spoken:
                self._say(self._phase_line())
            else:
                self.log(self._phase_line())

    def watch(self, items: Sequence[Progress]) -> None:
        """The pipeline starts: report `items`. Workers tally into a folder of this
        reporter's, which the driver thread reads (--quiet: no tally, no thread)."""
        self.items = tuple(items)
        self.phase("running the pipeline")
        if self.stream is None or not self.items:
            return
        self.folder = tempfile.mkdtemp(prefix="pipelines-progress-")
        os.environ[PROGRESS_DIR_ENV] = self.folder   # for worker processes
        use_folder(self.folder)                      # for this one (it read the variable once)

    def run_finished(self, stages: Optional[Stages]) -> None:
        """Stop tallying; print each started stage's last line from Beam's counters (None:
        the run failed, nothing more is said of its stages)."""
        self._stop_tallying()
        if stages is not None:
            with self._lock:
                self._print_stages(stages, final=True, repeat=False)

    def close(self, summary: Optional[str] = None) -> None:
        """Stop the thread; a last line, `summary` (None: none, the build failed)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._stop_tallying()
        if summary is not None:
            with self._lock:
                self._say(f"progress: {summary}")

    # --- the driver thread --------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(EVERY_S):
            folder = self.folder
            try:
                stages = read_tallies(folder) if folder else {}
            except OSError:
                stages = {}   # the run ended and removed the folder meanwhile
            self.tick(stages)

    def tick(self, stages: Stages) -> None:
        """One look: a line per main stage with news; at the first look, and after
        HEARTBEAT_S of silence, the unfinished stages' lines again (their rate and time
        left move on), or the phase's."""
        with self._lock:
            if self._stop.is_set() and self._thread is not None:
                return
            if self._print_stages(stages, final=False, repeat=False):
                return
            if self._spoken and self.clock() - self._last_line_at < HEARTBEAT_S:
                return
            if not self._print_stages(stages, final=False, repeat=True):
                self._say(self._phase_line())

    # --- lines --------------------------------------------------------------------------

    def _print_stages(self, stages: Stages, final: bool, repeat: bool) -> bool:
        said = False
        now = self.clock()
        for item in self.items:
            if item.label in self._finished:
                continue
            done, total = item.done(stages), item.total_of(stages)
            work_done = item.work_done(stages)
            news = (done, total, work_done) != self._shown.get(item.label)
            if not (done or total or work_done) or not (news or repeat or final):
                continue   # not started, or nothing new to say
            estimate = self._estimates.setdefault(item.label, Estimate())
            estimate.update(done, total, now)
            work = None
            if item.work is not None:
                work_estimate = self._estimates.setdefault(item.label + "/work", Estimate())
                work_estimate.update(work_done, None, now)
                work = (work_done, work_estimate.rate)
            self._shown[item.label] = (done, total, work_done)
            if final or (total is not None and done >= total):
                self._finished.add(item.label)
            self._say(progress_line(item, done, total, estimate, final, work))
            said = True
        return said

    def elapsed(self) -> float:
        return self.clock() - self.started

    def _phase_line(self) -> str:
        return f"progress: {self._phase}  {duration(self.elapsed())}"

    def _say(self, line: str) -> None:
        self._spoken = True
        self._last_line_at = self.clock()
        if self.stream is not None:
            print(line, file=self.stream, flush=True)
        self.log(line)

    def _stop_tallying(self) -> None:
        folder, self.folder = self.folder, None
        if folder is None:
            return
        if os.environ.get(PROGRESS_DIR_ENV) == folder:
            os.environ.pop(PROGRESS_DIR_ENV, None)
        use_folder(None)
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def reporting(enabled: bool = True, stream: Optional[TextIO] = None,
              log: Callable[[str], None] = lambda line: None) -> Iterator[Reporter]:
    """A reporter for one build, its thread running while inside (disabled: lines go to
    the log only, and nothing is tallied). Leaving stops it and removes its tally folder."""
    reporter = Reporter((stream or sys.stderr) if enabled else None, log)
    if enabled:
        reporter.start()
    try:
        yield reporter
    finally:
        reporter.close()
