"""Reading text in video frames with Tesseract: how many letters and digits a frame
shows (a frame with a caption or a title card reads many, a clean photo none).

The count, not the text, is what a quality filter needs; `ocr_identity` names what a
count depends on (Tesseract's version, its language data, our settings), so a cache of
counts is keyed by it.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
from typing import List, Optional

import numpy as np

from transforms.core.errors import UserError
from transforms.core.hashing import file_sha256

TESSERACT_CMD_KEY = "quality.ocr.tesseract_cmd"


class TesseractNotFoundError(UserError, RuntimeError):
    """The tesseract binary is not installed or not where the config says (the message
    names the config key)."""


# White rows between the two views on the page Tesseract reads. With 128 rows its layout
# analysis keeps them apart: on 17 photos x 5 caption styles it found exactly what two
# separate runs found (32 rows lost 1-2 captions per style).
STACK_BAND = 128


class TextDetector:
    """Counts the letters/digits Tesseract reads with confidence >= min_confidence.

    Tesseract is made for dark text on a light page; given a plain video frame it misses
    most overlaid text. So it reads two binarised views and keeps the larger count:
    bright pixels drawn black on white (white/yellow captions, subtitles) and dark
    pixels drawn black on white (dark text on light boxes, title cards). On our test
    frames (17 photos at 320x240) this found 11-17/17 of each kind of caption against
    0-9/17 with the plain grey frame, and read no character on any clean photo."""

    def __init__(self, min_confidence: float = 60, lang: str = "eng",
                 tesseract_cmd: Optional[str] = None, bright_threshold: int = 200,
                 dark_threshold: int = 60):
        self.min_confidence = min_confidence
        self.lang = lang
        self.tesseract_cmd = tesseract_cmd
        self.bright_threshold = bright_threshold   # grey above: may be light text
        self.dark_threshold = dark_threshold       # grey below: may be dark text
        self._checked = False

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_checked"] = False                  # look for the binary again on the worker
        return state

    def _check_binary(self) -> None:
        import pytesseract
        cmd = self.tesseract_cmd or "tesseract"
        if shutil.which(cmd) is None:
            raise TesseractNotFoundError(
                f"{TESSERACT_CMD_KEY}: the Tesseract OCR binary `{cmd}` was not found; install "
                f"it (Debian: `apt-get install tesseract-ocr`, or `make setup`), set "
                f"{TESSERACT_CMD_KEY} to where it is, or turn the text filter off with "
                f"quality.ocr.enabled=false")
        # Tesseract's OpenMP threads oversubscribe small workers (Beam already runs one
        # DoFn per core); one thread per call measured ~30% faster on 2 cores.
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")
        if self.tesseract_cmd:
            # pytesseract only takes the binary as a module-level setting.
            pytesseract.pytesseract.tesseract_cmd = self.tesseract_cmd
        self._checked = True

    def views(self, frame: np.ndarray) -> List[np.ndarray]:
        """The images Tesseract reads: light, then dark pixels as black on white."""
        from PIL import Image
        grey = np.asarray(Image.fromarray(np.asarray(frame)).convert("L"))
        bright = np.where(grey > self.bright_threshold, 0, 255).astype(np.uint8)
        dark = np.where(grey < self.dark_threshold, 0, 255).astype(np.uint8)
        return [bright, dark]

    def _read_words(self, image: np.ndarray) -> dict:
        import pytesseract
        from PIL import Image
        return pytesseract.image_to_data(Image.fromarray(image), lang=self.lang,
                                         output_type=pytesseract.Output.DICT)

    def _count(self, data: dict, keep=lambda top: True) -> int:
        return sum(sum(ch.isalnum() for ch in word)
                   for word, conf, top in zip(data["text"], data["conf"], data["top"])
                   if float(conf) >= self.min_confidence and keep(top))

    def text_chars(self, frame: np.ndarray) -> int:
        """The larger of the two views' counts, from ONE Tesseract run.

        Each run is a process start plus a model load (~100 ms), so the two views are
        stacked on one page with a white band between them and each word is assigned
        to a view by its position."""
        if not self._checked:
            self._check_binary()
        bright, dark = self.views(frame)
        height = bright.shape[0]
        band = np.full((STACK_BAND, bright.shape[1]), 255, np.uint8)
        data = self._read_words(np.vstack([bright, band, dark]))
        return max(self._count(data, lambda top: top < height),
                   self._count(data, lambda top: top >= height + STACK_BAND // 2))


OCR_CODE_VERSION = "ocr-stacked-views/v1"


def ocr_identity(min_confidence: float = 60, lang: str = "eng",
                 tesseract_cmd: Optional[str] = None) -> dict:
    """Tesseract's version and language data checksums, plus what we count and how."""
    cmd = tesseract_cmd or "tesseract"
    if shutil.which(cmd) is None:
        TextDetector(min_confidence, lang, tesseract_cmd)._check_binary()  # raises clearly
    version = subprocess.run([cmd, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.splitlines()[:1]
    listing = subprocess.run([cmd, "--list-langs"], capture_output=True, text=True,
                             timeout=30).stdout
    found = re.search(r'"([^"]+)"', listing)
    data = {}
    for name in lang.split("+"):
        path = pathlib.Path(found.group(1) if found else ".") / f"{name}.traineddata"
        data[name] = file_sha256(str(path)) if path.is_file() else None
    detector = TextDetector(min_confidence, lang)
    return {"code": OCR_CODE_VERSION, "tesseract": version[0] if version else None,
            "traineddata_sha256": data, "min_confidence": min_confidence,
            "bright_threshold": detector.bright_threshold,
            "dark_threshold": detector.dark_threshold, "stack_band": STACK_BAND}
