"""Tallies of the stage counters as they grow, in every process that runs stages, for a
local build's progress lines (pipelines/progress.py sums them and prints the lines).

Beam counters are the release's source of truth, but a local runner shows them only when
the run ends, and the multi-process runner's workers are other processes. So while a
driver asks for progress (it sets PROGRESS_DIR_ENV to a local folder; worker processes
inherit it), every stage counter increment is also tallied in the process and the tally
written, at most once a second, to a small JSON file of the process's own in that
folder; the driver sums the files (pipelines/progress.py). With the variable unset (the
default, and on Dataflow, whose own console shows the counters live) nothing is tallied.

The variable is read once per process, not per increment (a lookup of a missing key in
os.environ raises and catches a KeyError: it cost 6% of a build's CPU with --quiet). A
worker process inherits it at start; the driver process, where builds come and go, says
where to tally with `use_folder` when it sets or removes the variable.
"""
from __future__ import annotations

import json
import os
import threading
import time
import uuid
from typing import Dict, Optional

PROGRESS_DIR_ENV = "PIPELINES_PROGRESS_DIR"
WRITE_EVERY_S = 1.0


class _Tally:
    """This process's counts for one progress folder, written as `<folder>/<id>.json`."""

    def __init__(self, folder: str):
        self.folder = folder
        self.path = os.path.join(folder, f"{os.getpid()}-{uuid.uuid4().hex}.json")
        self.counts: Dict[str, Dict[str, int]] = {}
        self.written_at = 0.0
        self.lock = threading.Lock()

    def add(self, stage: str, name: str, n: int) -> None:
        with self.lock:
            names = self.counts.setdefault(stage, {})
            names[name] = names.get(name, 0) + n
            if time.monotonic() - self.written_at >= WRITE_EVERY_S:
                self._write()

    def _write(self) -> None:
        self.written_at = time.monotonic()
        try:
            temp = f"{self.path}.tmp"
            with open(temp, "w", encoding="utf-8") as f:
                json.dump(self.counts, f)
            os.replace(temp, self.path)  # the driver never reads half a file
        except OSError:
            pass  # progress is a courtesy: a vanished folder never fails a stage


_tally: Optional[_Tally] = None
_tally_lock = threading.Lock()
_UNREAD = object()
_folder = _UNREAD   # this process's progress folder (None: no progress): the environment's, read once


def use_folder(folder: Optional[str]) -> None:
    """Tally into `folder` from now on in this process (None: stop tallying). The driver
    calls it beside setting PROGRESS_DIR_ENV, which its worker processes inherit."""
    global _folder
    _folder = folder or None


def _current() -> Optional[_Tally]:
    global _tally, _folder
    folder = _folder
    if folder is _UNREAD:
        folder = _folder = os.environ.get(PROGRESS_DIR_ENV) or None
    if folder is None:
        return None
    tally = _tally
    if tally is None or tally.folder != folder:  # a new build in this process
        with _tally_lock:
            if _tally is None or _tally.folder != folder:
                _tally = _Tally(folder)
            tally = _tally
    return tally


def record(stage: str, name: str, n: int = 1) -> None:
    """Tally `n` on counter `name` of `stage` when a driver asked for progress."""
    tally = _current()
    if tally is not None:
        tally.add(stage, name, n)

