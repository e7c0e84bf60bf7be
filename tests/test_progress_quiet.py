"""A default build's stderr holds its own lines only (transforms/core/quiet.py): Leptonica's
messages (from Tesseract's layout analysis, `Error in boxClipToRectangle: box outside
rectangle` on ImageCoDe's frames) go to the build's log, counted by kind; model loaders'
tqdm bars (`Loading weights`, BD2BB's sentence encoder) are off."""
import ctypes
import os
import subprocess
import sys

from tests.paths import ROOT
from transforms.core import quiet


def leptonica():
    library = ctypes.CDLL(quiet.leptonica_paths()[0])
    library.boxCreate.restype = ctypes.c_void_p
    library.boxCreate.argtypes = [ctypes.c_int] * 4
    library.boxClipToRectangle.restype = ctypes.c_void_p
    library.boxClipToRectangle.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    return library


def test_leptonica_messages_go_to_the_log_counted_not_to_stderr(capfd, monkeypatch):
    assert quiet.install()
    # a process that never loaded the OCR stage (an earlier test's build would have)
    monkeypatch.setattr(quiet, "_outside_builds", None)
    library = leptonica()
    box = library.boxCreate(100, 100, 5, 5)          # off a 10x10 page, as Tesseract asks
    logged = []
    with quiet.capture_into(logged.append) as captured:
        library.boxClipToRectangle(box, 10, 10)
        library.boxClipToRectangle(box, 20, 20)
        assert captured.counts() == {"Error in boxClipToRectangle: box outside rectangle": 2}
    assert capfd.readouterr().err == ""
    assert logged == ["leptonica: Error in boxClipToRectangle: box outside rectangle"] * 2
    library.boxClipToRectangle(box, 10, 10)           # no build listening: stderr, as before
    assert "box outside rectangle" in capfd.readouterr().err
    library.boxDestroy(ctypes.byref(ctypes.c_void_p(box)))


def test_the_leptonica_quietened_is_the_one_tesseract_uses():
    """The wheel's libtesseract links Leptonica by its SONAME: the copy `install` loaded
    is the one it gets, one mapping in the process."""
    quiet.install()
    import tesserocr  # noqa: F401
    with open("/proc/self/maps") as maps:
        mapped = {os.path.realpath(line.split()[-1]) for line in maps if "leptonica" in line}
    assert mapped == {os.path.realpath(quiet.leptonica_paths()[0])}


LOAD = """
import sys
from transforms.core import quiet
if sys.argv[1] == "quiet":
    quiet.quiet_environment()      # what the runner does before any benchmark is imported
from transformers.utils.logging import tqdm   # the bar of transformers' weight loading
for _ in tqdm(range(3), desc="Loading weights"):
    pass
"""


def test_model_loading_bars_are_off_in_a_build():
    env = {k: v for k, v in os.environ.items() if k not in quiet.QUIET_ENVIRONMENT}
    env["PYTHONPATH"] = str(ROOT)

    def stderr(mode):
        return subprocess.run([sys.executable, "-c", LOAD, mode], cwd=str(ROOT), env=env,
                              capture_output=True, text=True, check=True).stderr
    assert "Loading weights" in stderr("loud")    # what the issue saw
    assert "Loading weights" not in stderr("quiet")


def test_the_quiet_variables_last_only_as_long_as_the_build(monkeypatch):
    """Set for the build (its workers inherit them), gone after it; one the user set is kept."""
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")
    with quiet.quiet_environment_for_build() as set_now:
        assert set_now == {"TQDM_DISABLE": "1"}
        assert os.environ["TQDM_DISABLE"] == "1"
    assert "TQDM_DISABLE" not in os.environ
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "0"


TWO_BUILDS = """
from transforms.core import quiet
with quiet.quiet_environment_for_build():
    import transformers                   # a first build loads a model: huggingface_hub reads the variable
with quiet.quiet_environment_for_build():
    pass                                  # the second build's end switches the bars back on
"""


def test_a_second_build_in_one_process_ends_without_a_warning():
    """check portable, a notebook: huggingface_hub read HF_HUB_DISABLE_PROGRESS_BARS=1
    during the first build and warned, when the second build's end switched bars back on
    through transformers, that it could not."""
    env = {k: v for k, v in os.environ.items() if k not in quiet.QUIET_ENVIRONMENT}
    run = subprocess.run([sys.executable, "-W", "default", "-c", TWO_BUILDS], cwd=str(ROOT),
                         env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, check=True)
    assert "Cannot enable progress bars" not in run.stderr, run.stderr


WORKER = """
import ctypes, logging, sys
from transforms.core import quiet
from tests.test_progress_quiet import leptonica
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s %(levelname)s %(message)s")
assert quiet.install_for_workers()      # what the OCR stage does where it loads Tesseract
library = leptonica()
box = library.boxCreate(100, 100, 5, 5)
library.boxClipToRectangle(box, 10, 10)
"""


def test_a_worker_process_logs_leptonica_messages_instead_of_printing_them():
    """A multi-process runner's worker has no build log: its messages reached the terminal."""
    done = subprocess.run([sys.executable, "-c", WORKER], cwd=str(ROOT), capture_output=True,
                          text=True, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.stderr == ""
    assert done.stdout == "leptonica INFO Error in boxClipToRectangle: box outside rectangle\n"
