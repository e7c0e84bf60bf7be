"""Image encoders: CLIP through open_clip (weights from a local file only) and a
deterministic stand-in, behind one spec and one identity.

The paper's similarity is the Euclidean distance between CLIP encodings of a pre-trained
ViT-B/16 (OpenAI's weights, Radford et al. 2021). In open_clip that model is
``model_name="ViT-B-16", pretrained="openai"``; the tag only tells us how those weights
were trained (QuickGELU, OpenAI mean/std, bicubic shortest-side resize + centre crop); the
weights themselves come from the local file in ``embed.checkpoint``. Both formats work:
OpenAI's original TorchScript ``ViT-B-16.pt`` and open_clip's state dict
(``open_clip_pytorch_model.bin`` / ``.safetensors``). Nothing is ever downloaded.

  open_clip  the paper's model (any open_clip architecture, weights from a local file)
  thumbnail  a deterministic stand-in for offline runs and tests: a mean-centred,
             L2-normalised 16x16 RGB thumbnail. Not CLIP; a release built with it says so
             in its manifest (see `encoder_identity`).

Both return (n, d) float32 rows of unit L2 norm, so a Euclidean threshold reads the same
for either.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from transforms.core.devices import DEVICES, resolve_torch_device, strict_float32
from transforms.core.hashing import file_sha256
from transforms.image.weights import EncoderError, resolve_checkpoint

KINDS = ("open_clip", "thumbnail")
# auto: fp16 on a GPU, fp32 on a CPU; int8: the CPU only (OpenVINO, transforms/image/int8_clip.py)
PRECISIONS = ("auto", "fp32", "fp16", "bf16", "int8")   # the config keys' type: pipelines/config.py


@dataclass(frozen=True)
class EncoderSpec:
    """What to embed frames with; mirrors the `embed.*` config keys.

    kind          "open_clip" (the paper's CLIP) or "thumbnail" (offline stand-in)
    model_name    open_clip architecture, e.g. "ViT-B-16" (§5.3); free text for thumbnail
    pretrained    open_clip tag describing the weights, e.g. "openai"; sets QuickGELU and
                  the preprocessing; never used to download. ""/"none": config defaults.
    checkpoint    local weights file (or a folder holding one, or a Beam filesystem URL
                  such as gs://...); required for open_clip
    batch_size    frames per forward pass (an H200 runs a ViT-B/16 at full speed from 128;
                  64 gives 90% in fp32, 94% in fp16: docs/benchmarks.md)
    device        "auto" (CUDA when present), "cpu" or "cuda"; not in the identity: fp32 on
                  a CPU and on a GPU agree to float32 rounding (docs/models.md, measured)
    precision     the model's weights and activations: "auto" (fp16 on a GPU, fp32 on a
                  CPU), "fp32", "fp16", "bf16" or "int8" (the CPU only: OpenVINO, ~4.5x
                  cheaper than fp32); all but fp32 are an identity (and a cache entry) of
                  their own (resolve_precision)
    thumbnail_size  side of the thumbnail (kind "thumbnail")
    model_config  optional open_clip model-config JSON for an architecture open_clip does
                  not ship; registered on every worker before the model is built
    shots_per_batch  most shots in one RunInference batch (shots are big elements)
    config_prefix  where these keys sit in the benchmark's config, for the errors that name
                  them (NLVR2's local similar images: collection.search.local_similar)
    """
    kind: str = "open_clip"
    model_name: str = "ViT-B-16"
    pretrained: Optional[str] = "openai"
    checkpoint: Optional[str] = None
    batch_size: int = 64
    device: str = "auto"
    thumbnail_size: int = 16
    model_config: Optional[str] = None
    shots_per_batch: int = 4
    precision: str = "auto"
    config_prefix: str = "embed"

    def key(self, name: str) -> str:
        return f"{self.config_prefix}.{name}"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise EncoderError(f"{self.key('kind')}: {self.kind!r} is not one of {KINDS}")
        if self.device not in DEVICES:
            raise EncoderError(f"{self.key('device')}: {self.device!r} is not one of {DEVICES}")
        if self.precision not in PRECISIONS:
            raise EncoderError(f"{self.key('precision')}: {self.precision!r} is not one of {PRECISIONS}")
        if self.kind == "thumbnail" and self.precision not in ("auto", "fp32"):
            raise EncoderError(f"{self.key('precision')}: the thumbnail stand-in has no model; only 'fp32'")
        if self.precision == "int8" and self.device == "cuda":
            raise EncoderError(f"{self.key('precision')}: int8 runs on the CPU (OpenVINO); on a GPU "
                               f"use fp16 or bf16, or set {self.key('device')} to cpu")
        if self.batch_size < 1 or self.shots_per_batch < 1:
            raise EncoderError("embed.batch_size and shots_per_batch must be >= 1")
        if self.kind == "thumbnail" and self.thumbnail_size < 2:
            raise EncoderError("embed.thumbnail_size must be >= 2")


def encoder_identity(spec: EncoderSpec) -> Dict[str, Any]:
    """What the release manifest and data card record about the encoder.

    Built without loading the model (cheap on the driver), from the same settings the
    workers use. `fingerprint` hashes everything but the checkpoint's location, so it can
    key an embedding cache: the same weights at another path give the same fingerprint.
    """
    if spec.kind == "thumbnail":
        s = spec.thumbnail_size
        identity = {
            "kind": "thumbnail", "model_name": spec.model_name, "pretrained": None,
            "checkpoint": None, "weights_sha256": None, "embedding_dim": 3 * s * s,
            "preprocess": {"size": s, "interpolation": "area", "colour": "RGB",
                           "centring": "subtract the thumbnail's mean",
                           "flat_frame": "constant unit vector"},
        }
    else:
        import open_clip
        settings = _open_clip_settings(spec)
        weights = resolve_checkpoint(spec.checkpoint, spec.key("checkpoint"))
        identity = {
            "kind": "open_clip", "model_name": spec.model_name,
            "pretrained": _tag(spec), "checkpoint": spec.checkpoint,
            "weights_file": os.path.basename(weights), "weights_sha256": file_sha256(weights),
            "embedding_dim": settings["embed_dim"], "quick_gelu": settings["quick_gelu"],
            "preprocess": settings["preprocess"], "open_clip_version": open_clip.__version__,
        }
    precision = resolve_precision(spec)
    if precision != "fp32":
        # Half precision and int8 move embeddings by ~1e-3: their own fingerprint, so their
        # values never meet fp32 ones in a cache. fp32 identities stay as they were (their
        # caches stay valid).
        identity["precision"] = precision
    if precision == "int8":
        from transforms.image.int8_clip import int8_identity
        identity["int8"] = int8_identity()
    identity["normalisation"] = "l2"
    identity["distance"] = "euclidean"
    stable = {k: v for k, v in identity.items() if k not in ("checkpoint", "open_clip_version")}
    identity["fingerprint"] = hashlib.sha256(
        json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return identity


class ThumbnailEncoder:
    """Deterministic offline stand-in: frame -> 16x16 RGB thumbnail (area interpolation),
    flattened, mean-subtracted, L2-normalised.

    Centring makes it blind to uniform brightness shifts; a flat frame (nothing left after
    centring) maps to the constant unit vector, which is orthogonal to every centred
    thumbnail: flat frames are identical to each other and sqrt(2) from everything else.
    """

    def __init__(self, size: int = 16, batch_size: int = 64):
        self.size = size
        self.batch_size = batch_size
        self.dim = 3 * size * size

    def encode(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        import cv2
        out = np.empty((len(frames), self.dim), dtype=np.float32)
        for start in range(0, len(frames), self.batch_size):
            chunk = frames[start:start + self.batch_size]
            thumbs = np.stack([cv2.resize(_check_frame(f).astype(np.float32), (self.size, self.size),
                                          interpolation=cv2.INTER_AREA) for f in chunk])
            out[start:start + len(chunk)] = _centre_and_normalise(thumbs.reshape(len(chunk), -1))
        return out


def _centre_and_normalise(x: np.ndarray) -> np.ndarray:
    x = x - x.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    flat = norms[:, 0] < 1e-6
    x = x / np.where(flat[:, None], 1.0, norms)
    x[flat] = 1.0 / np.sqrt(x.shape[1])
    return x.astype(np.float32)


class OpenClipEncoder:
    """An open_clip image tower with its eval preprocessing, batched on tensors."""

    def __init__(self, model, preprocess: Dict[str, Any], dim: int, device: str, batch_size: int,
                 precision: str = "fp32"):
        self.model = model
        self.precision = precision   # fp32: no TF32 on a GPU either (transforms/core/devices.py)
        self.preprocess = preprocess
        self.dim = dim
        self.device = device
        self.batch_size = batch_size
        size = preprocess["size"]
        self._size = (size, size) if isinstance(size, int) else tuple(size)
        # Batched tensor path for the modes CLIP models use; anything else falls back
        # to open_clip's own PIL transform, frame by frame.
        self._batched = (preprocess["resize_mode"] == "squash"
                         or (preprocess["resize_mode"] == "shortest" and self._size[0] == self._size[1]))
        self._pil_transform = None

    def encode(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        """(n, d) float32 unit rows. While the model runs on one batch, a thread stacks the
        next batch's frames (pinned, for an asynchronous copy to a GPU), so the device does
        not wait for the host between batches; results stay on the device until the end."""
        import torch
        if len(frames) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = [frames[start:start + self.batch_size] for start in range(0, len(frames), self.batch_size)]
        outputs = []
        exact = strict_float32() if self.precision == "fp32" else contextlib.nullcontext()
        with exact, torch.inference_mode(), ThreadPoolExecutor(max_workers=1) as host:
            staged = host.submit(self._on_host, batches[0])
            for n in range(len(batches)):
                ready = staged.result()
                if n + 1 < len(batches):
                    staged = host.submit(self._on_host, batches[n + 1])
                features = self._features(self._on_device(ready))
                # Normalise in float32 so distances do not depend on the model's precision.
                outputs.append(torch.nn.functional.normalize(features, dim=-1))
        return torch.cat(outputs).cpu().numpy().astype(np.float32, copy=False)

    def _features(self, batch):
        """The image tower's (n, d) float32 features of a prepared batch."""
        return self.model.encode_image(batch).float()

    def prepare(self, frames: Sequence[np.ndarray]):
        """uint8 RGB frames -> the model's normalised input batch (N, 3, H, W)."""
        return self._on_device(self._on_host(frames))

    def _on_host(self, frames: Sequence[np.ndarray]):
        """The host's half of preparing a batch: uint8 stacks (one per frame size), pinned
        for a GPU; or, for preprocessing the batched path does not cover, PIL's tensors."""
        import torch
        frames = [_check_frame(f) for f in frames]
        if not self._batched:
            return ("pil", self._prepare_with_pil(frames))
        # Frames of one shot share a size: one stacked tensor; mixed sizes go one by one.
        groups = [frames] if len({f.shape for f in frames}) == 1 else [[f] for f in frames]
        stacks = [torch.from_numpy(np.stack(g)) for g in groups]
        if self.device != "cpu":
            stacks = [t.pin_memory() for t in stacks]
        return ("stacks", stacks)

    def _on_device(self, staged):
        kind, value = staged
        if kind == "pil":
            return value.to(self.device, dtype=next(self.model.parameters()).dtype)
        return _cat([self._prepare_stack(t) for t in value])

    def _prepare_stack(self, stack):
        # open_clip eval transform: Resize (shortest side, or squash), CenterCrop, /255,
        # Normalize; batched on the model's device. Resizing in float is faster than in
        # uint8 on CPU; rounding and clamping afterwards gives the uint8 pixels PIL makes.
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms import functional as F
        p = self.preprocess
        x = stack.to(self.device, non_blocking=True).permute(0, 3, 1, 2).float()
        mode = InterpolationMode.BILINEAR if p["interpolation"] == "bilinear" else InterpolationMode.BICUBIC
        if p["resize_mode"] == "squash":
            x = F.resize(x, list(self._size), interpolation=mode, antialias=True)
        else:
            x = F.resize(x, [self._size[0]], interpolation=mode, antialias=True)
            x = F.center_crop(x, list(self._size))
        x = x.round_().clamp_(0, 255).div_(255.0)
        x = F.normalize(x, mean=list(p["mean"]), std=list(p["std"]))
        return x.to(next(self.model.parameters()).dtype)

    def _prepare_with_pil(self, frames: List[np.ndarray]):
        import torch
        from open_clip.transform import PreprocessCfg, image_transform_v2
        from PIL import Image
        if self._pil_transform is None:
            self._pil_transform = image_transform_v2(PreprocessCfg(**self.preprocess), is_train=False)
        return torch.stack([self._pil_transform(Image.fromarray(f)) for f in frames])


class Int8ClipEncoder(OpenClipEncoder):
    """The image tower quantised to int8 and run by OpenVINO on the CPU
    (transforms/image/int8_clip.py); preprocessing and normalisation as for the others."""

    def __init__(self, model, preprocess: Dict[str, Any], dim: int, batch_size: int):
        import torch
        from transforms.image.int8_clip import quantised_tower
        super().__init__(model, preprocess, dim, "cpu", batch_size, "int8")
        self._tower = quantised_tower(model.visual, self.prepare, torch.get_num_threads())

    def _features(self, batch):
        import torch
        return torch.from_numpy(self._tower(batch.numpy())[0])


def _cat(tensors):
    import torch
    return tensors[0] if len(tensors) == 1 else torch.cat(tensors)


def _check_frame(frame: np.ndarray) -> np.ndarray:
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"expected an RGB uint8 HxWx3 frame, got {frame.dtype} {frame.shape}")
    return frame


def _forbid_downloads() -> None:
    """We only ever hand open_clip local files, but a model config with a Hugging Face
    tower would still ask the hub for its config: make that fail instead of download."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import huggingface_hub.constants
        huggingface_hub.constants.HF_HUB_OFFLINE = True  # read at import time otherwise
    except ImportError:
        pass


def _open_clip_settings(spec: EncoderSpec) -> Dict[str, Any]:
    """Architecture config, QuickGELU and preprocessing for a spec, without any weights.

    The preprocessing is open_clip's: its defaults (OpenAI mean/std, bicubic, shortest
    side) with the model's image size, overridden by what the `pretrained` tag declares.
    """
    _forbid_downloads()
    import open_clip
    from open_clip.transform import PreprocessCfg
    if spec.model_name.startswith(("hf-hub:", "local-dir:")):
        raise EncoderError(f"embed.model_name: {spec.model_name!r}: hub/dir schemas are not "
                           "supported; give an architecture name and embed.checkpoint")
    if spec.model_config:
        if not os.path.isfile(spec.model_config):
            raise EncoderError(f"embed.model_config: no such file: {spec.model_config}")
        if spec.model_name not in open_clip.list_models():
            open_clip.add_model_config(spec.model_config)
    model_cfg = open_clip.get_model_config(spec.model_name)
    if model_cfg is None:
        raise EncoderError(f"embed.model_name: unknown open_clip architecture {spec.model_name!r}")
    tag_cfg: Dict[str, Any] = {}
    if _tag(spec):
        tag_cfg = open_clip.get_pretrained_cfg(spec.model_name, spec.pretrained)
        if not tag_cfg:
            raise EncoderError(
                f"embed.pretrained: {spec.pretrained!r} is not an open_clip tag of {spec.model_name} "
                f"(known: {open_clip.list_pretrained_tags_by_model(spec.model_name)}); "
                "use 'none' for the architecture's defaults")
    preprocess = dataclasses.asdict(PreprocessCfg())
    preprocess["size"] = model_cfg["vision_cfg"].get("image_size", preprocess["size"])
    preprocess.update({k: v for k, v in tag_cfg.items() if k in preprocess})
    for key in ("mean", "std", "size"):
        if isinstance(preprocess[key], tuple):
            preprocess[key] = list(preprocess[key])   # JSON-friendly for the manifest
    return {
        "embed_dim": int(model_cfg["embed_dim"]),
        "quick_gelu": bool(model_cfg.get("quick_gelu", False) or tag_cfg.get("quick_gelu", False)),
        "preprocess": preprocess,
    }


def _tag(spec: EncoderSpec) -> Optional[str]:
    """The pretrained tag, or None for ""/"none" (use the architecture's defaults)."""
    return None if not spec.pretrained or spec.pretrained.lower() == "none" else spec.pretrained


def _is_torchscript(path: str) -> bool:
    # OpenAI's original release is a TorchScript zip (it holds a constants.pkl).
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        return any(n.endswith("/constants.pkl") for n in z.namelist())


def resolve_device(device: str, key: str = "embed.device") -> str:
    return resolve_torch_device(device, key)


def resolve_precision(spec: EncoderSpec) -> str:
    """The precision a spec runs in on this machine: `auto` is fp16 where its device is a
    GPU, fp32 on a CPU (and for the stand-in, which has no model)."""
    if spec.kind == "thumbnail":
        return "fp32"
    if spec.precision != "auto":
        return spec.precision
    return "fp16" if resolve_device(spec.device, spec.key("device")) == "cuda" else "fp32"


def encoder_device(spec: EncoderSpec) -> str:
    """Where a spec's model runs on this machine: int8 always on the CPU."""
    if resolve_precision(spec) == "int8":
        return "cpu"
    return resolve_device(spec.device, spec.key("device"))


def torch_dtype(precision: str):
    """The torch model's dtype (int8's torch model is the fp32 one it is quantised from)."""
    import torch
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
            "int8": torch.float32}[precision]


def load_open_clip(spec: EncoderSpec) -> OpenClipEncoder:
    """Build the model from its architecture config and load the local weights into it."""
    settings = _open_clip_settings(spec)
    weights = resolve_checkpoint(spec.checkpoint, spec.key("checkpoint"))
    import open_clip
    import torch
    common = dict(force_quick_gelu=settings["quick_gelu"], force_preprocess_cfg=settings["preprocess"],
                  pretrained_image=False, pretrained_text=False, device="cpu")
    try:
        if _is_torchscript(weights):
            model = open_clip.create_model(spec.model_name, pretrained=None, **common)
            state = torch.jit.load(weights, map_location="cpu").state_dict()
            expected = model.state_dict().keys()
            # The archive also keeps constants (input_resolution, attn_mask, ...): drop
            # them; strict loading still fails on any missing weight.
            model.load_state_dict({k: v for k, v in state.items() if k in expected}, strict=True)
        else:
            # An absolute path is never mistaken for a tag, so open_clip just loads it.
            model = open_clip.create_model(spec.model_name, pretrained=weights, **common)
    except Exception as e:  # noqa: BLE001 - shape mismatch, bad pickle, open_clip asserts ...
        raise EncoderError(f"{spec.key('checkpoint')}: {spec.checkpoint} does not hold {spec.model_name} "
                           f"weights: {str(e)[:500]}") from e
    precision, device = resolve_precision(spec), encoder_device(spec)
    model = model.to(device=device, dtype=torch_dtype(precision)).eval()
    if precision == "int8":
        return Int8ClipEncoder(model, settings["preprocess"], settings["embed_dim"], spec.batch_size)
    return OpenClipEncoder(model, settings["preprocess"], settings["embed_dim"], device, spec.batch_size,
                           precision)


def build_encoder(spec: EncoderSpec):
    """The encoder for a spec: an object with `encode(frames) -> (n, d) float32`."""
    if spec.kind == "thumbnail":
        return ThumbnailEncoder(spec.thumbnail_size, spec.batch_size)
    return load_open_clip(spec)
