"""Stopping a command at any instant: Ctrl-C (SIGINT) and `kill` (SIGTERM).

Whatever instant a stop falls on, the command ends with exit 128 + signal (130 for
Ctrl-C, 143 for SIGTERM), one line on stderr saying what it left, and no traceback:

    stopped by Ctrl-C (SIGINT): nothing was published; version 1.0.0 of vsr is still unused
    stopped by Ctrl-C (SIGINT) after publishing: releases/vsr/1.0.0 is there, complete and read-only

How:
- `install()` is the first thing `python -m pipelines` does, before any other import
  (pipelines/__main__.py), so a stop while Beam or torch load (the first seconds) is the
  same one line, never Python's KeyboardInterrupt traceback. A build run in process
  (a test, a script) gets the same handlers for its duration from `stop_signals_as_exit`
  (pipelines/release/write/assemble.py).
- The handler raises `Stopped` (a SystemExit: `except Exception` on the way does not
  swallow it, as a KeyboardInterrupt could be), so the build's cleanup runs as on any
  failure: its staging folder, locks and half-written cache files go. Beam re-raises
  what its stage code raised as a RuntimeError; whatever comes out of a stopped command
  still leaves as the stop (`stop_signals_as_exit`).
- A second stop while the first one's cleanup runs is noted and not acted on: cutting
  the cleanup short would leave what it removes (and a traceback).
- A stop whose exception C code dropped on its way (`raise_if_lost`) is raised again when
  the command passes to its next phase; one dropped in the last phase lets the command
  finish, as a stop that came too late would.
- A signal the process was started with ignored (`cmd &` in a script: the shell ignores
  SIGINT for background jobs) stays ignored: the build runs on and publishes.
- Once the cleanup is done and the line printed, the process ends with os._exit: a
  stopped Beam run can leave threads that never end (its state sampler, its executors),
  and the interpreter would wait for them at exit for minutes. Nothing is left to
  flush by then: stdout and stderr are flushed first, and the build's log is closed.
- Publishing a version is one rename of a folder already read-only
  (pipelines/release/write/manifest.py finalise): a stop falls before it (nothing published)
  or after it (the version is there, complete and read-only), and the line says which
  (the build looks on disk; before it has, the line is what the command last said a
  stop would leave: `leaves`).
- Once the command has returned, stops are ignored: its work is done, and during the
  interpreter's exit Python puts the default handlers back, so a stop there would kill
  the process by the signal, with no line.

Standard library only: this is imported before anything else.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from typing import Callable, Iterator, List

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
NAMES = {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM"}

_received: List[int] = []   # the stop signals this process got, in order
_stopping = False           # a Stopped was raised and its cleanup runs
_said = False               # its line was printed
_leaves = ""                # what a stop would leave now, as the command last said


def leaves(outcome: str) -> None:
    """Say what a stop from now on would leave ("nothing was published; ...", "after
    publishing: ..."), for the line of a stop that falls before anyone looks."""
    global _leaves
    _leaves = outcome


class Stopped(SystemExit):
    """The command was stopped by `signum`; `outcome` says what it left (set by the build
    once it has looked; else what the command last said it would leave: `leaves`)."""

    def __init__(self, signum: int, outcome: str = ""):
        super().__init__(128 + signum)
        self.signum, self.outcome = signum, outcome

    def line(self) -> str:
        """The one line the command ends with."""
        outcome = self.outcome or _leaves or "nothing was written"
        joiner = " " if outcome.startswith("after ") else ": "
        return f"stopped by {NAMES.get(self.signum, f'signal {self.signum}')}{joiner}{outcome}"


def _on_stop(signum, frame):
    global _stopping
    _received.append(signum)
    if not _stopping:
        _stopping = True
        raise Stopped(signum)
    # a later stop: the first one's cleanup is running; it is not cut short


def raise_if_lost() -> None:
    """Raise again a stop whose Stopped was lost. A signal handler's exception surfaces
    wherever the main thread is, and C code that clears every error it meets (an
    extension module's import, one time in ~40 for a Ctrl-C 1.4 s into a build: Beam
    importing pandas) drops it: the command would run on, and with `_stopping` set it
    would take no later stop either. Called where a command passes from one phase to the
    next (pipelines/progress.py), never during a stop's cleanup, in the main thread only."""
    if _stopping and _received and not _said and threading.current_thread() is threading.main_thread():
        raise Stopped(_received[0])


def install() -> None:
    """Stop signals end this process through Stopped from now on (main thread only).
    A signal inherited as ignored stays ignored. A stop that ends the process before
    `run_process` runs (while the command's own modules are imported) still gets its
    line, at exit."""
    if threading.current_thread() is not threading.main_thread():
        return
    atexit.register(_say_unsaid)
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _on_stop)


def _say_unsaid() -> None:
    if _received and not _said:
        print(Stopped(_received[0]).line(), file=sys.stderr, flush=True)


@contextlib.contextmanager
def stop_signals_as_exit() -> Iterator[None]:
    """Within: stop signals raise Stopped (installed here unless `install()` did it for
    the whole process; an ignored signal stays ignored), and whatever comes out of a
    stopped block (Beam wraps what its stages raised) leaves as that Stopped."""
    global _stopping
    installed = {}
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            current = signal.getsignal(signum)
            if current is not signal.SIG_IGN and current is not _on_stop:
                installed[signum] = signal.signal(signum, _on_stop)
    already = len(_received)
    try:
        yield
    except Stopped:
        raise
    except BaseException:
        if len(_received) > already:
            raise Stopped(_received[already]) from None
        raise
    finally:
        if installed:   # a build run in process: the next one may be stopped again
            _stopping = False
            for signum, handler in installed.items():
                signal.signal(signum, handler)


def run_process(main: Callable[[], int]) -> int:
    """Run a command as the process's whole life: its exit code; a stop anywhere ends
    it with its one line, and then the process itself, whatever threads are left."""
    global _said
    try:
        code = main()
        # done: a stop now changes nothing, and during the interpreter's exit (Python puts
        # the default handlers back) it would kill the process with no line
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
    except Stopped as stop:
        print(stop.line(), file=sys.stderr)
        code = stop.code
    except BrokenPipeError:
        # the reader went away (`... --help | head`): end quietly, as `cat` does, with
        # the exit status of a process SIGPIPE ended; stdout goes to /dev/null so the
        # interpreter's own last flush cannot raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 128 + signal.SIGPIPE
    if _received:
        _said = True   # by run_main, or just above
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    return code
