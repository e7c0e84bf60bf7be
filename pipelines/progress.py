"""Progress lines of a local build, on stderr: items done of the total per main stage,
the rate and the time left (quiet with `--quiet`).

    progress: videos 3/5 (60%)  0.8/s  ~3s left
    progress: images 74/74 (100%)  12.1/s  done

A benchmark names its main stages (`Benchmark.progress`): the level its items are
counted at (video, image, annotation, tuple), the stage whose `<level>.out` finishes an
item and where the total comes from - a number known at preflight, or the counter of
the stage that reads the items (it grows while they are read). An item is done when
that last stage passed it or any stage rejected it (`<level>.rejected.*`), so done
reaches the total exactly.

While the pipeline runs, workers tally their stage counters into small files of a local
folder (transforms/core/progress.py; worker processes of the multi-process runner
inherit the folder through the environment) and a driver thread sums them every few
seconds. When the run ends, the last line of each stage is printed from Beam's own
counters, the release's source of truth. On Dataflow the same counters are Beam metrics,
live in its console.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Sequence, TextIO, Tuple

from transforms.core.progress import PROGRESS_DIR_ENV, use_folder

EVERY_S = 5.0


@dataclass(frozen=True)
class Progress:
    """One main stage's progress: `label` ("videos"), the `level` its items are counted
    at ("video"), the stage whose `<level>.out` finishes an item, and the total: `total`
    when preflight knows it, else the counter `total_counter` = (stage, name)."""
    label: str
    level: str
    last_stage: str
    total: Optional[int] = None
    total_counter: Optional[Tuple[str, str]] = None

    def done(self, stages: Dict[str, Dict[str, int]]) -> int:
        rejected = sum(n for names in stages.values() for name, n in names.items()
                       if name.startswith(f"{self.level}.rejected."))
        return rejected + stages.get(self.last_stage, {}).get(f"{self.level}.out", 0)

    def total_of(self, stages: Dict[str, Dict[str, int]]) -> Optional[int]:
        if self.total is not None:
            return self.total
        if self.total_counter is not None:
            stage, name = self.total_counter
            return stages.get(stage, {}).get(name)
        return None


def progress_line(item: Progress, stages: dict, elapsed: float, final: bool = False) -> str:
    done, total = item.done(stages), item.total_of(stages)
    text = f"progress: {item.label} {done}"
    if total:
        text += f"/{total} ({100 * done // total}%)"
    rate = done / elapsed if elapsed > 0 else 0.0
    text += f"  {rate:.1f}/s"
    if final or (total and done >= total):
        text += "  done"
    elif total and rate > 0:
        text += f"  ~{_duration((total - done) / rate)} left"
    return text


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def read_tallies(folder: str) -> Dict[str, Dict[str, int]]:
    """The workers' tallies summed: {stage: {counter: n}}."""
    stages: Dict[str, Dict[str, int]] = {}
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
    """Prints progress lines while a run is going (see the module docstring)."""

    def __init__(self, items: Sequence[Progress], stream: TextIO,
                 every_s: Optional[float] = None):
        self.items, self.stream = tuple(items), stream
        self.every_s = EVERY_S if every_s is None else every_s
        self.started = time.monotonic()
        self.folder: Optional[str] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._shown: Dict[str, tuple] = {}

    def start(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="pipelines-progress-")
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self._print(read_tallies(self.folder), final=False)

    def _print(self, stages: dict, final: bool) -> None:
        elapsed = time.monotonic() - self.started
        for item in self.items:
            now = (item.done(stages), item.total_of(stages))
            if not any(now) or (not final and self._shown.get(item.label) == now):
                continue  # not started, or no news since the last line
            self._shown[item.label] = now
            print(progress_line(item, stages, elapsed, final), file=self.stream, flush=True)

    def finish(self, stages: Optional[dict]) -> None:
        """Stop the thread; print the last lines from Beam's counters (None: the run
        failed, nothing more is printed)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        if stages is not None:
            self._print(stages, final=True)


@contextlib.contextmanager
def reporting(items: Sequence[Progress], enabled: bool = True,
              stream: Optional[TextIO] = None) -> Iterator[Optional[Reporter]]:
    """While inside, workers tally and a thread prints; call `reporter.finish(stages)`
    with the run's counters to print the last lines. Yields None when disabled."""
    if not enabled or not items:
        yield None
        return
    reporter = Reporter(items, stream or sys.stderr)
    reporter.start()
    previous = os.environ.get(PROGRESS_DIR_ENV)
    os.environ[PROGRESS_DIR_ENV] = reporter.folder   # for worker processes
    use_folder(reporter.folder)                      # for this one (it read the variable once)
    try:
        yield reporter
    finally:
        if previous is None:
            os.environ.pop(PROGRESS_DIR_ENV, None)
        else:
            os.environ[PROGRESS_DIR_ENV] = previous
        use_folder(previous)
        reporter.finish(None)  # a no-op after the run's own finish
