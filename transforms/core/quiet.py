"""Third-party output kept off a build's terminal and in its log file instead.

What a default build prints on stderr is its own: progress lines, warnings, errors. Two
libraries we call print more, and would bury those lines:

  - Leptonica, under Tesseract (in-process OCR, transforms/image/ocr.py), writes messages
    such as `Error in boxClipToRectangle: box outside rectangle` from C straight to fd 2:
    Tesseract's layout analysis asks about boxes off the page and carries on; the count
    it reads is unaffected. Leptonica hands every message to one replaceable handler
    (`leptSetStderrHandler`, Leptonica 1.76+): ours writes it to the build's log and
    counts it by kind. Redirecting fd 2 around the call instead would also swallow what
    other threads of the process print meanwhile (the progress lines themselves).
  - Model loaders' tqdm bars (transformers' `Loading weights`, huggingface_hub's): off
    through TQDM_DISABLE and HF_HUB_DISABLE_PROGRESS_BARS, which tqdm and huggingface_hub
    read when imported, so they are set before any model library is (`quiet_environment`);
    worker processes inherit them. A variable the user set is left as it is, and those
    set for a build are taken away when it ends (a notebook's next tqdm bar shows; a
    library imported during the build keeps what it read then).

The handler is installed once per process and writes to the log of the build running
now (`capture_into`). The runner installs it in its own process (the local runner runs
its stages there); the OCR stage installs it in every process that loads Tesseract
(`install_for_workers`), so a worker process of the multi-process runner or of a
cluster, which has no build log, logs each message at INFO on the `leptonica` logger
instead of printing it (the runner forwards a worker's records: a build shows them
with --verbose; a cluster keeps them in its workers' logs). A process
that never called either (a script of the user's calling Tesseract) prints them as
Leptonica would.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import ctypes.util
import glob
import importlib
import importlib.util
import logging
import os
import re
import sys
import threading
import warnings
from typing import Callable, Dict, List, Optional

QUIET_ENVIRONMENT = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}

_Handler = ctypes.CFUNCTYPE(None, ctypes.c_char_p)
_lock = threading.Lock()
_handler: Optional[_Handler] = None   # kept alive: Leptonica holds a pointer to it
_sink: Optional[Callable[[str], None]] = None
_outside_builds: Optional[Callable[[str], None]] = None   # where a message goes between builds
_counts: Dict[str, int] = collections.Counter()


@contextlib.contextmanager
def quiet_environment_for_build():
    """`quiet_environment` for the block: yields what it set; afterwards those variables
    are gone again and a library told directly is told to show its bars again."""
    told = [name for name in ("huggingface_hub", "transformers") if name in sys.modules]
    set_now = quiet_environment()
    try:
        yield set_now
    finally:
        for name in set_now:
            os.environ.pop(name, None)
        # huggingface_hub keeps what it read when a build imported it, and warns that it
        # cannot show its bars; transformers' switch calls huggingface_hub's, so it warns too
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if "HF_HUB_DISABLE_PROGRESS_BARS" in set_now and "huggingface_hub" in told:
                _hub_utils().enable_progress_bars()
            if "TQDM_DISABLE" in set_now and "transformers" in told:
                _transformers_logging().enable_progress_bar()


# Imported by name, not reached as attributes: huggingface_hub loads its submodules
# lazily, and `huggingface_hub.utils` is not one its package attribute lookup offers.
def _hub_utils():
    return importlib.import_module("huggingface_hub.utils")


def _transformers_logging():
    return importlib.import_module("transformers.utils.logging")


def quiet_environment() -> Dict[str, str]:
    """Set the variables that turn model loaders' progress bars off (those the user has
    not set); returns what it set, for the build's log. A loader this process imported
    already (a second build in one process) read them then: it is told directly."""
    set_now = {}
    for name, value in QUIET_ENVIRONMENT.items():
        if name not in os.environ:
            os.environ[name] = set_now[name] = value
    if "huggingface_hub" in sys.modules and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1":
        _hub_utils().disable_progress_bars()
    if "transformers" in sys.modules and os.environ["TQDM_DISABLE"] == "1":
        _transformers_logging().disable_progress_bar()
    return set_now


def leptonica_paths() -> List[str]:
    """The Leptonica libraries this process may load: the one the tesserocr wheel bundles
    (its .so names it by SONAME, so the copy loaded here is the one it links to), else the
    system's."""
    paths = []
    spec = importlib.util.find_spec("tesserocr")
    if spec is not None and spec.origin:
        package = os.path.dirname(spec.origin)
        for libs in (os.path.join(os.path.dirname(package), "tesserocr.libs"),
                     os.path.join(package, "tesserocr.libs")):
            paths += sorted(glob.glob(os.path.join(libs, "libleptonica*.so*")))
    if not paths:
        system = ctypes.util.find_library("leptonica") or ctypes.util.find_library("lept")
        if system:
            paths.append(system)
    return paths


def install() -> bool:
    """Route Leptonica's messages in this process through `_on_message`. False when no
    Leptonica is installed (nothing to quieten) or it has no replaceable handler."""
    global _handler
    with _lock:
        if _handler is not None:
            return True
        handler = _Handler(_on_message)
        installed = False
        for path in leptonica_paths():
            try:
                library = ctypes.CDLL(path)
                library.leptSetStderrHandler.argtypes = [_Handler]
                library.leptSetStderrHandler(handler)
                installed = True
            except (OSError, AttributeError):
                continue   # not loadable, or older than 1.76: its messages stay on stderr
        if installed:
            _handler = handler
        return installed


def install_for_workers() -> bool:
    """`install`, and outside a build (a worker process has none) each message logged at
    INFO on the `leptonica` logger instead of printed."""
    global _outside_builds
    installed = install()
    if installed:
        with _lock:
            _outside_builds = logging.getLogger("leptonica").info
    return installed


def _on_message(text: bytes) -> None:
    message = text.decode("utf-8", "replace").rstrip("\n")
    with _lock:
        sink, elsewhere = _sink, _outside_builds
        if sink is not None:
            _counts[_kind(message)] += 1
    if sink is not None:
        sink(f"leptonica: {message}")
    elif elsewhere is not None:
        elsewhere(message)
    else:
        sys.stderr.write(message + "\n")


def _kind(message: str) -> str:
    """A message without its numbers: `Error in boxClipToRectangle: box outside rectangle`."""
    return re.sub(r"\s+", " ", re.sub(r"-?\d+(\.\d+)?", "N", message)).strip()


class capture_into:
    """While inside, Leptonica's messages go to `write` (a build log's line writer) and are
    counted by kind: `counts()` ({kind: n}), inside or after the block."""

    def __init__(self, write: Callable[[str], None]):
        self.write = write
        self._counts: Optional[Dict[str, int]] = None   # what was counted, once the block ended

    def counts(self) -> Dict[str, int]:
        with _lock:
            return dict(_counts if self._counts is None else self._counts)

    def __enter__(self) -> "capture_into":
        global _sink
        with _lock:
            _sink = self.write
            _counts.clear()
        return self

    def __exit__(self, *exc) -> None:
        global _sink
        with _lock:
            _sink = None
            self._counts = dict(_counts)
            _counts.clear()
