"""A build's log file: what the build said, with the time, and what it kept off the
terminal (transforms/core/quiet.py: Leptonica's messages, the environment that turns
model loaders' bars off).

    <output>/.logs/<benchmark>-<version>.log

Beam's own log records (its workers' tracebacks, logged at ERROR before the build's one
line says what went wrong; its warnings about options) go to this file only, unless the
build runs with --verbose: `beam_records_into`.

Beside the releases, not in one (a release holds only what it publishes), one file per
benchmark and version; a second try of the same version appends to it. An output that
is not on a local disk (gs://...) logs into the system's temp folder; so does one where
the folder cannot be made (the build then stops at its output check, which says why).
"""
from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import tempfile
import threading
import time
from typing import Callable, List, Optional, TextIO

LOGS_DIR = ".logs"
BEAM_LOGGER = "apache_beam"


def log_path(output: str, benchmark: str, version: str) -> str:
    name = f"{benchmark}-{version}.log"
    if "://" not in output:
        folder = os.path.join(output, LOGS_DIR)
        try:
            os.makedirs(folder, exist_ok=True)
            return os.path.join(folder, name)
        except OSError:
            pass
    folder = os.path.join(tempfile.gettempdir(), "pipelines-logs")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, name)


class BuildLog:
    """Lines, each with its UTC time, safe from any thread: held until `open` names the
    file (once the output is known to be writable: a build stopped by a user error before
    that writes nothing), appended to it from then on. A log that cannot be written is
    given up silently: it never fails a build."""

    def __init__(self):
        self.path: Optional[str] = None
        self._lock = threading.Lock()
        self._held: Optional[List[str]] = []   # None once `open` was called
        self._file: Optional[TextIO] = None

    def open(self, path: str) -> None:
        with self._lock:
            try:
                self._file = open(path, "a", encoding="utf-8")
                self.path = path
                self._file.writelines(self._held)
                self._file.flush()
            except OSError:
                self._file = None
            self._held = None

    def write(self, line: str) -> None:
        stamped = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {line}\n"
        with self._lock:
            if self._held is not None:
                self._held.append(stamped)
                return
            if self._file is None:
                return
            try:
                self._file.write(stamped)
                self._file.flush()
            except (OSError, ValueError):
                self._file = None

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class _IntoLog(logging.Handler):
    def __init__(self, write: Callable[[str], None]):
        super().__init__()
        self._write = write
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._write(self.format(record))   # BuildLog.write gives up a file it cannot write
        except Exception:   # a record that cannot be formatted: logging's own report of it
            self.handleError(record)


class _FromBeamCode(logging.Filter):
    """On the root logger: a record that Beam's code logs there directly (its job-server
    start-up's `Waiting for grpc channel to be ready`, logging.log without a logger of its
    own) goes to `write`, not on to the terminal."""

    def __init__(self, write: Callable[[str], None], folder: str):
        super().__init__()
        self._into, self._folder = _IntoLog(write), folder + os.sep

    def filter(self, record: logging.LogRecord) -> bool:
        if record.pathname.startswith(self._folder):
            self._into.handle(record)
            return False
        return True


def _beam_folder() -> Optional[str]:
    spec = importlib.util.find_spec(BEAM_LOGGER)   # where Beam is, without importing it
    return spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None


@contextlib.contextmanager
def beam_records_into(write: Callable[[str], None]):
    """While the block runs, Beam's log records reach `write` (the build's log) and not
    the terminal: those of Beam's loggers, and those Beam's code logs on the root logger;
    afterwards logging is as it was."""
    beam_logger, root = logging.getLogger(BEAM_LOGGER), logging.getLogger()
    handler, propagated = _IntoLog(write), beam_logger.propagate
    folder = _beam_folder()
    from_beam_code = _FromBeamCode(write, folder) if folder else None
    beam_logger.addHandler(handler)
    beam_logger.propagate = False
    if from_beam_code is not None:
        root.addFilter(from_beam_code)
    try:
        yield
    finally:
        beam_logger.removeHandler(handler)
        beam_logger.propagate = propagated
        if from_beam_code is not None:
            root.removeFilter(from_beam_code)
