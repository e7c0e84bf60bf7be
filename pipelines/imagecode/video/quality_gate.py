"""The frame quality gate of §3.1: a frame is too blurry (BRISQUE/100 above the
threshold) or shows too much text (more confidently read letters than the threshold).

The paper removes frames "with a BRISQUE score larger than 0.65" and frames with text;
the models live in transforms/image/brisque.py and transforms/image/ocr.py, this module
is the rule. BRISQUE runs first (cheaper); OCR only on a sharp frame.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional

import numpy as np

from pipelines.imagecode import reasons
from transforms.cache.store import fingerprint
from transforms.image.brisque import BrisqueScorer, brisque_identity
from transforms.image.ocr import TextDetector, ocr_identity


GPU_FRAMES_PER_CALL = 256   # BRISQUE on a GPU: 652 frames/s at 512 a call on an H200 (docs/benchmarks.md)


@dataclass(frozen=True)
class QualityVerdict:
    ok: bool
    reason: Optional[str]              # reasons.BLURRY / reasons.TEXT, None when ok
    brisque: Optional[float] = None    # normalised (BRISQUE/100); None = not evaluated
    text_chars: Optional[int] = None   # None = OCR not run (disabled, or already blurry)


class QualityGate:
    """Per-frame verdict for the greedy miner: BRISQUE first (cheaper), OCR only if sharp.

    `evaluations` counts how often each filter ran, so a benchmark can report filter
    calls per selected frame."""

    def __init__(self, brisque: Optional[BrisqueScorer], max_brisque: float,
                 text: Optional[TextDetector], max_text_chars: int, brisque_frames_per_call: int = 1):
        self.brisque = brisque
        self.max_brisque = max_brisque     # normalised, e.g. 0.65
        self.text = text
        self.max_text_chars = max_text_chars
        # frames the miner scores in one BRISQUE call (1: each as the rule asks about it)
        self.brisque_frames_per_call = brisque_frames_per_call
        self.evaluations = {"brisque": 0, "text": 0}

    def is_blurry(self, score: float) -> bool:
        """The BRISQUE rule alone (the paper: "larger than 0.65" is removed); a blurry
        frame is not read by OCR."""
        return score > self.max_brisque

    def check(self, frame: np.ndarray) -> QualityVerdict:
        return self.judge(lambda: float(self.brisque.score_normalised([frame])[0]),
                          lambda: self.text.text_chars(frame))

    def judge(self, brisque_score: Callable[[], float],
              text_chars: Callable[[], int]) -> QualityVerdict:
        """The verdict from values supplied on demand: BRISQUE first, OCR only if sharp.

        Only the filters that are on are asked, so a caller can serve the values from a
        cache and compute (decode, score) just the ones it lacks."""
        score = None
        if self.brisque is not None:
            self.evaluations["brisque"] += 1
            score = brisque_score()
            if self.is_blurry(score):
                return QualityVerdict(False, reasons.BLURRY, brisque=score)
        chars = None
        if self.text is not None:
            self.evaluations["text"] += 1
            chars = text_chars()
            if chars > self.max_text_chars:
                return QualityVerdict(False, reasons.TEXT, brisque=score, text_chars=chars)
        return QualityVerdict(True, None, brisque=score, text_chars=chars)


def build_quality_gate(brisque_enabled: bool = True, max_brisque: float = 0.65,
                       brisque_model_dir: Optional[str] = None, ocr_enabled: bool = True,
                       max_text_chars: int = 10, min_confidence: float = 60,
                       lang: str = "eng", device: Optional[str] = None,
                       brisque_features: str = "package",
                       tesseract_cmd: Optional[str] = None, ocr_backend: str = "tesserocr",
                       tessdata: Optional[str] = None, brisque_frames_per_call: int = 0) -> Optional[QualityGate]:
    """The gate from config values (quality.*); None when both filters are off.

    Called on the worker; the BRISQUE model is still loaded lazily on the first frame.
    `brisque_frames_per_call` 0 means GPU_FRAMES_PER_CALL where BRISQUE runs on a GPU (a
    call of one frame runs there at the rate of its ~1,600 small kernel launches), one
    frame at a time on the CPU (where the rule's laziness saves work)."""
    if not brisque_enabled and not ocr_enabled:
        return None
    brisque = (BrisqueScorer(brisque_model_dir, device=device, features=brisque_features)
               if brisque_enabled else None)
    per_call = brisque_frames_per_call or (
        GPU_FRAMES_PER_CALL if brisque is not None and brisque.device_type() == "cuda" else 1)
    return QualityGate(
        brisque=brisque, max_brisque=max_brisque,
        text=(TextDetector(min_confidence, lang, tesseract_cmd, backend=ocr_backend,
                           tessdata=tessdata) if ocr_enabled else None),
        max_text_chars=max_text_chars, brisque_frames_per_call=per_call)


@dataclass(frozen=True)
class QualityRule:
    """The gate's settings (quality.*), built once from the config and handed whole to
    the miner. Called (on the worker, once per DoFn instance), it builds the gate, so no
    model is loaded or pickled on the driver."""
    brisque_enabled: bool = True
    max_brisque: float = 0.65          # BRISQUE/100 above this: blurry
    brisque_model_dir: Optional[str] = None
    brisque_features: str = "package"
    brisque_device: str = "auto"       # auto|cpu|cuda (quality.brisque.device)
    brisque_frames_per_call: int = 0   # 0: GPU_FRAMES_PER_CALL on a GPU, 1 on the CPU
    ocr_enabled: bool = True
    max_text_chars: int = 10           # more confidently read letters/digits: text
    min_confidence: float = 60
    lang: str = "eng"
    ocr_backend: str = "tesserocr"     # "tesserocr" (in process) or "pytesseract" (the program)
    tessdata: Optional[str] = None     # tesserocr's language data folder
    tesseract_cmd: Optional[str] = None

    def __call__(self) -> Optional[QualityGate]:
        return build_quality_gate(
            brisque_enabled=self.brisque_enabled, max_brisque=self.max_brisque,
            brisque_model_dir=self.brisque_model_dir, brisque_features=self.brisque_features,
            device=self.brisque_device, brisque_frames_per_call=self.brisque_frames_per_call,
            ocr_enabled=self.ocr_enabled, max_text_chars=self.max_text_chars,
            min_confidence=self.min_confidence, lang=self.lang, tesseract_cmd=self.tesseract_cmd,
            ocr_backend=self.ocr_backend, tessdata=self.tessdata)

    def thresholds(self) -> Dict[str, float]:
        """The thresholds of the filters that are on: "brisque" (BRISQUE/100 above which a
        frame is blurry), "ocr" (letters above which it has text); what `calibrate`
        varies."""
        out = {}
        if self.brisque_enabled:
            out["brisque"] = self.max_brisque
        if self.ocr_enabled:
            out["ocr"] = self.max_text_chars
        return out

    def identities(self) -> Dict[str, dict]:
        """Identities of the filters that are on, each with its fingerprint (the manifest
        records them; cached scores are keyed by them). Reading Tesseract's version
        starts a process (or loads the library): build them once per run."""
        out = {}
        if self.brisque_enabled:
            out["brisque"] = brisque_identity(self.brisque_model_dir, self.brisque_features)
        if self.ocr_enabled:
            out["ocr"] = ocr_identity(self.min_confidence, self.lang, self.tesseract_cmd,
                                      self.ocr_backend, self.tessdata)
        return {name: dict(identity, fingerprint=fingerprint(identity))
                for name, identity in out.items()}
