"""Reading text in video frames with Tesseract: how many letters and digits a frame
shows (a frame with a caption or a title card reads many, a clean photo none).

Two backends read the same page with the same settings:
  - "tesserocr" (default): libtesseract in this process through the `tesserocr` wheel (it
    bundles its own libtesseract, 5.5.4) and Debian's language data; one engine per
    detector, loaded once, so a frame costs its recognition only (~10 ms at 320x240);
  - "pytesseract": the `tesseract` program, one process and model load per frame
    (~100 ms); kept to reproduce releases read by the Debian program.
Both engines read the page at 70 dpi (what the program assumes of a PNG without a
resolution); they still differ by a few characters on some frames, being different
Tesseract versions (docs/quality.md counts the effect on decisions: none on our videos).

The count, not the text, is what a quality filter needs; `ocr_identity` names what a
count depends on (backend, Tesseract's version, its language data, our settings), so a
cache of counts is keyed by it.
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
TESSDATA_KEY = "quality.ocr.tessdata"
BACKENDS = ("tesserocr", "pytesseract")
# Where Debian's tesseract-ocr-<lang> packages put the language data (bookworm: 5/).
DEBIAN_TESSDATA = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                   "/usr/share/tessdata")
# The program reads our PNG pages, which carry no resolution, as 70 dpi. Handed bare
# pixels, the library would estimate one and read captions differently (4-9 characters
# apart on captioned frames): both backends read at 70 dpi.
SOURCE_DPI = 70


class TesseractNotFoundError(UserError, RuntimeError):
    """Tesseract (the program, or the library's language data) is not installed or not
    where the config says (the message names the config key)."""


# White rows between the two views on the page Tesseract reads. With 128 rows its layout
# analysis keeps them apart: on 17 photos x 5 caption styles it found exactly what two
# separate runs found (32 rows lost 1-2 captions per style).
STACK_BAND = 128


def tessdata_dir(configured: Optional[str] = None, lang: str = "eng") -> str:
    """The folder holding `<lang>.traineddata` for the library backend: the configured
    one, else $TESSDATA_PREFIX, else Debian's."""
    candidates = ([configured] if configured else
                  [os.environ["TESSDATA_PREFIX"]] if os.environ.get("TESSDATA_PREFIX") else
                  list(DEBIAN_TESSDATA))
    for folder in candidates:
        if all(os.path.isfile(os.path.join(folder, f"{name}.traineddata"))
               for name in lang.split("+")):
            return folder
    raise TesseractNotFoundError(
        f"{TESSDATA_KEY}: no Tesseract language data for `{lang}` in {', '.join(candidates)}; "
        f"install it (Debian: `apt-get install tesseract-ocr-{lang.split('+')[0]}`, or "
        f"`make setup`), set {TESSDATA_KEY} (or TESSDATA_PREFIX) to the folder holding "
        f"{lang.split('+')[0]}.traineddata, or turn the text filter off with "
        f"quality.ocr.enabled=false")


class TextDetector:
    """Counts the letters/digits Tesseract reads with confidence >= min_confidence.

    Tesseract is made for dark text on a light page; given a plain video frame it misses
    most overlaid text. So it reads two binarised views and keeps the larger count:
    bright pixels drawn black on white (white/yellow captions, subtitles) and dark
    pixels drawn black on white (dark text on light boxes, title cards). On our test
    frames (17 photos at 320x240) this found 11-17/17 of each kind of caption against
    0-9/17 with the plain grey frame, and read no character on any clean photo.

    `backend` "tesserocr" loads one engine on first use and keeps it (one per detector,
    i.e. per DoFn instance: an engine is not shared between threads); "pytesseract"
    runs the program `tesseract_cmd` per frame."""

    def __init__(self, min_confidence: float = 60, lang: str = "eng",
                 tesseract_cmd: Optional[str] = None, bright_threshold: int = 200,
                 dark_threshold: int = 60, backend: str = "tesserocr",
                 tessdata: Optional[str] = None):
        if backend not in BACKENDS:
            raise ValueError(f"unknown OCR backend {backend!r}; one of {BACKENDS}")
        self.min_confidence = min_confidence
        self.lang = lang
        self.tesseract_cmd = tesseract_cmd
        self.bright_threshold = bright_threshold   # grey above: may be light text
        self.dark_threshold = dark_threshold       # grey below: may be dark text
        self.backend = backend
        self.tessdata = tessdata
        self._checked = False
        self._engine = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_checked"] = False                  # look for Tesseract again on the worker
        state["_engine"] = None                    # an engine is native state: loaded there
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
        # No OMP_THREAD_LIMIT for the program (one thread per call was ~30% faster on 2
        # cores): pytesseract passes the program this process's environment, and there the
        # limit also reaches PyTorch, whose oneDNN kernels then skip work (docs/quality.md).
        if self.tesseract_cmd:
            # pytesseract only takes the binary as a module-level setting.
            pytesseract.pytesseract.tesseract_cmd = self.tesseract_cmd
        self._checked = True

    def _load_engine(self):
        # The wheel's libtesseract is built without OpenMP: no thread limit to set.
        from transforms.core import quiet
        quiet.install_for_workers()   # Leptonica's messages off a worker's terminal
        import tesserocr
        self._engine = tesserocr.PyTessBaseAPI(path=tessdata_dir(self.tessdata, self.lang),
                                               lang=self.lang, psm=tesserocr.PSM.AUTO)
        self._checked = True

    def views(self, frame: np.ndarray) -> List[np.ndarray]:
        """The images Tesseract reads: light, then dark pixels as black on white."""
        from PIL import Image
        grey = np.asarray(Image.fromarray(np.asarray(frame)).convert("L"))
        bright = np.where(grey > self.bright_threshold, 0, 255).astype(np.uint8)
        dark = np.where(grey < self.dark_threshold, 0, 255).astype(np.uint8)
        return [bright, dark]

    def _read_words(self, image: np.ndarray) -> dict:
        """Tesseract's words on `image`: {"text": [...], "conf": [...], "top": [...]}, one
        entry per row of its TSV output (pages, blocks and lines have empty text)."""
        from PIL import Image
        if self.backend == "pytesseract":
            import pytesseract
            return pytesseract.image_to_data(Image.fromarray(image), lang=self.lang,
                                             output_type=pytesseract.Output.DICT)
        engine = self._engine
        engine.SetImage(Image.fromarray(image))
        engine.SetSourceResolution(SOURCE_DPI)
        engine.Recognize()
        return parse_tsv(engine.GetTSVText(0))

    def _count(self, data: dict, keep=lambda top: True) -> int:
        return sum(sum(ch.isalnum() for ch in word)
                   for word, conf, top in zip(data["text"], data["conf"], data["top"])
                   if float(conf) >= self.min_confidence and keep(top))

    def text_chars(self, frame: np.ndarray) -> int:
        """The larger of the two views' counts, from ONE Tesseract run.

        A run has a fixed cost (the program: a process start and a model load, ~100 ms;
        the library: page set-up), so the two views are stacked on one page with a white
        band between them and each word is assigned to a view by its position."""
        if not self._checked:
            if self.backend == "pytesseract":
                self._check_binary()
            else:
                self._load_engine()
        bright, dark = self.views(frame)
        height = bright.shape[0]
        band = np.full((STACK_BAND, bright.shape[1]), 255, np.uint8)
        data = self._read_words(np.vstack([bright, band, dark]))
        return max(self._count(data, lambda top: top < height),
                   self._count(data, lambda top: top >= height + STACK_BAND // 2))


def parse_tsv(tsv: str) -> dict:
    """Tesseract's TSV (level, page, block, par, line, word, left, top, width, height,
    conf, text) as the columns `TextDetector` counts from."""
    data = {"text": [], "conf": [], "top": []}
    for row in tsv.splitlines():
        columns = row.split("\t")
        if len(columns) < 12 or not columns[7].lstrip("-").isdigit():  # short row, header
            continue
        data["top"].append(int(columns[7]))
        data["conf"].append(float(columns[10]))
        data["text"].append(columns[11])
    return data


OCR_CODE_VERSION = "ocr-stacked-views/v1"


def ocr_identity(min_confidence: float = 60, lang: str = "eng",
                 tesseract_cmd: Optional[str] = None, backend: str = "tesserocr",
                 tessdata: Optional[str] = None) -> dict:
    """The backend, Tesseract's version and language data checksums, plus what we count
    and how. The program's identity is what it was before the library backend existed
    (caches of its counts stay valid); the library's adds the backend, the wheel's
    version and the resolution it reads at."""
    detector = TextDetector(min_confidence, lang)
    ours = {"min_confidence": min_confidence, "bright_threshold": detector.bright_threshold,
            "dark_threshold": detector.dark_threshold, "stack_band": STACK_BAND}
    if backend == "tesserocr":
        import tesserocr
        folder = tessdata_dir(tessdata, lang)
        data = {name: file_sha256(os.path.join(folder, f"{name}.traineddata"))
                for name in lang.split("+")}
        return {"code": OCR_CODE_VERSION, "backend": "tesserocr",
                "tesseract": tesserocr.tesseract_version().splitlines()[0],
                "tesserocr": tesserocr.__version__, "source_dpi": SOURCE_DPI,
                "traineddata_sha256": data, **ours}
    cmd = tesseract_cmd or "tesseract"
    if shutil.which(cmd) is None:
        TextDetector(min_confidence, lang, tesseract_cmd, backend=backend)._check_binary()  # raises clearly
    version = subprocess.run([cmd, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.splitlines()[:1]
    listing = subprocess.run([cmd, "--list-langs"], capture_output=True, text=True,
                             timeout=30).stdout
    found = re.search(r'"([^"]+)"', listing)
    data = {}
    for name in lang.split("+"):
        path = pathlib.Path(found.group(1) if found else ".") / f"{name}.traineddata"
        data[name] = file_sha256(str(path)) if path.is_file() else None
    return {"code": OCR_CODE_VERSION, "tesseract": version[0] if version else None,
            "traineddata_sha256": data, **ours}
