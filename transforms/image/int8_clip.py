"""CLIP's image tower in int8 on the CPU (`embed.precision: int8`): OpenVINO's runtime,
the tower quantised by NNCF's post-training quantisation.

Why this path: on a CPU the paper's ViT-B/16 costs ~0.5 CPU s a frame in fp32 (torch).
int8 matrix products on VNNI cut that about 4.5x (bf16 in torch: about 2x; torch's own
dynamic int8: 1.4x; ONNX Runtime int8: 2.6x; docs/benchmarks.md, "The paper's model on
the CPU"). The price is precision: embeddings move by ~5e-3 an element from fp32 (bf16:
~2e-3), so int8 is an encoder identity and a cache entry of its own, and its distances
and mining decisions are measured against fp32 (bench/real_model.py).

How the tower is made, the same way on every worker (nothing is downloaded or cached on
disk): the fp32 torch tower is converted by OpenVINO's PyTorch front end, then quantised
with NNCF's transformer preset, calibrated on CALIBRATION_FRAMES fixed crops of the photos
scikit-image ships, prepared by the encoder's own preprocessing. That is deterministic
(the same quantised model for the same weights and library versions, which the identity
records), and each frame's embedding does not depend on the batch it runs in (tested).
What runs outside the int8 products (attention, layer norms) is bf16 where the CPU has
it natively, else f32: the identity records which, so the two never share a cache entry,
and an int8 release is the same on one machine kind (docs/rebuilding.md). Quantising
costs ~30-50 CPU s once per worker.

OpenVINO's and NNCF's telemetry package (openvino_telemetry) is masked before either is
imported: on import it writes ~/intel and tries to reach Google Analytics. Both fall back
to their own stubs without it.
"""
from __future__ import annotations

import contextlib
import functools
import io
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Callable, Dict, List, Sequence

import numpy as np

from transforms.image.weights import EncoderError

CALIBRATION_FRAMES = 32
# scikit-image's bundled colour photos (no download: they ship in its wheel)
_PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field",
           "immunohistochemistry", "retina", "stereo_motorcycle")


def int8_identity() -> Dict[str, str]:
    """What an int8 encoder's identity adds: the libraries, the calibration, and the
    precision of the rest of the tower on this CPU (its own cache entry per kind)."""
    try:
        libraries = {"runtime": f"openvino {version('openvino')}", "quantiser": f"nncf {version('nncf')}"}
    except PackageNotFoundError as e:
        raise EncoderError(f"embed.precision int8 needs OpenVINO and NNCF (requirements.txt): {e}") from None
    return {**libraries, "calibration": f"{CALIBRATION_FRAMES} crops of scikit-image's photos "
                                        f"({', '.join(_PHOTOS)}), NNCF transformer preset",
            "rest": rest_precision()}


@functools.lru_cache(maxsize=1)
def rest_precision() -> str:
    """What runs outside the int8 products: bf16 where this CPU computes it natively
    (AVX512_BF16 or AMX: ~1.3x cheaper again), else f32."""
    openvino, _ = openvino_modules()
    capabilities = openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return "bf16" if "BF16" in capabilities else "f32"


def openvino_modules():
    """(openvino, nncf), imported with their telemetry package masked (see above)."""
    if "openvino" not in sys.modules:
        sys.modules.setdefault("openvino_telemetry", None)   # `import openvino_telemetry` now fails
    import nncf
    import openvino
    return openvino, nncf


def calibration_frames() -> List[np.ndarray]:
    """CALIBRATION_FRAMES uint8 RGB frames of 240x320: the whole photo, then crops at fixed
    places, photo after photo."""
    import cv2
    from skimage import data
    frames = []
    places = ((0.0, 0.0, 1.0), (0.0, 0.0, 0.6), (0.4, 0.4, 0.6), (0.2, 0.1, 0.5))   # (top, left, side)
    for place in places:
        for name in _PHOTOS:
            photo = getattr(data, name)()
            photo = photo[0] if isinstance(photo, tuple) else photo   # the stereo pair's left view
            h, w = photo.shape[:2]
            top, left, side = int(place[0] * h), int(place[1] * w), place[2]
            crop = photo[top:top + int(side * h), left:left + int(side * w), :3]
            frames.append(cv2.resize(np.ascontiguousarray(crop), (320, 240), interpolation=cv2.INTER_AREA))
            if len(frames) == CALIBRATION_FRAMES:
                return frames
    return frames


def quantised_tower(visual, prepare: Callable[[Sequence[np.ndarray]], "object"], threads: int):
    """The compiled int8 OpenVINO model of an fp32 torch image tower; `prepare` turns
    frames into the tower's input batch (the encoder's preprocessing)."""
    import logging

    import torch
    openvino, nncf = openvino_modules()
    from openvino.frontend import FrontEndManager
    from openvino.frontend.pytorch.ts_decoder import TorchScriptPythonDecoder
    nncf.set_log_level(logging.ERROR)
    inputs = [prepare([frame]).numpy() for frame in calibration_frames()]
    with torch.no_grad():
        decoder = TorchScriptPythonDecoder(visual, example_input=(torch.from_numpy(inputs[0]),))
    front_end = FrontEndManager().load_by_framework("pytorch")
    model = front_end.convert(front_end.load(decoder))
    # NNCF draws its progress bars with rich on stdout: off, as every library's are during
    # a build (transforms/core/quiet.py); its warnings are logged, at ERROR only
    with contextlib.redirect_stdout(io.StringIO()):
        quantised = nncf.quantize(model, nncf.Dataset(inputs), model_type=nncf.ModelType.TRANSFORMER,
                                  subset_size=len(inputs))
    return openvino.Core().compile_model(quantised, "CPU", {"INFERENCE_PRECISION_HINT": rest_precision(),
                                                            "INFERENCE_NUM_THREADS": threads})
