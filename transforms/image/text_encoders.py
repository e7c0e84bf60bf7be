"""Text encoders that share a space with an image encoder of transforms/image/encoders.py.

  open_clip  CLIP's text tower, from the same spec and local weights as the image tower
             (open_clip's tokenizer for the architecture; nothing is downloaded)
  thumbnail  the text side of the thumbnail stand-in: the colour words of a text,
             painted as a flat thumbnail and centred and normalised exactly as
             `ThumbnailEncoder` treats an image. A text naming the colours an image is
             made of scores high against it; a text without colour words maps to the
             constant unit vector, orthogonal to every centred thumbnail (cosine 0).
             Deterministic and offline; NOT CLIP, and a release built with it says so.

Both return (n, d) float32 rows of unit L2 norm. CLIP's vector of a text can differ in
its last bits with the batch it was encoded in (the matrix kernels block by batch), so a
caller comparing scores treats differences within float32 rounding as ties.
"""
from __future__ import annotations

import re
from typing import Sequence, Tuple

import numpy as np

from transforms.image.encoders import EncoderSpec, load_open_clip, resolve_device

# Basic colour terms and sRGB values (the CSS colour keywords of the same names).
PALETTE = {
    "black": (0, 0, 0), "white": (255, 255, 255), "grey": (128, 128, 128),
    "gray": (128, 128, 128), "red": (220, 20, 60), "orange": (255, 140, 0),
    "yellow": (255, 215, 0), "green": (34, 139, 34), "blue": (30, 80, 200),
    "purple": (128, 0, 128), "pink": (255, 105, 180), "brown": (139, 69, 19),
}
_WORD = re.compile(r"[a-z]+")


def nearest_colour(rgb: Sequence[float]) -> str:
    """The palette name nearest (Euclidean, sRGB) to a colour; ties by name."""
    rgb = np.asarray(rgb, dtype=np.float64)
    return min(sorted(PALETTE), key=lambda name: float(np.sum((np.asarray(PALETTE[name]) - rgb) ** 2)))


def colour_words(text: str) -> Tuple[str, ...]:
    return tuple(w for w in _WORD.findall(text.lower()) if w in PALETTE)


class ThumbnailTextEncoder:
    """The thumbnail stand-in's text side (see the module docstring)."""

    def __init__(self, size: int = 16):
        self.size = size
        self.dim = 3 * size * size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = colour_words(text)
            if not words:
                out[row] = 1.0 / np.sqrt(self.dim)   # as a flat frame: cosine 0 to any image
                continue
            rgb = np.mean([PALETTE[w] for w in words], axis=0)
            flat = np.tile(rgb, self.size * self.size)
            flat = flat - flat.mean()
            norm = np.linalg.norm(flat)
            out[row] = 1.0 / np.sqrt(self.dim) if norm < 1e-6 else flat / norm
        return out


class OpenClipTextEncoder:
    """CLIP's text tower, batched; features L2-normalised in float32."""

    def __init__(self, spec: EncoderSpec):
        import open_clip
        image_side = load_open_clip(spec)   # the whole CLIP model, weights from the local file
        self.model = image_side.model
        self.dim = image_side.dim
        self.device = resolve_device(spec.device, spec.key("device"))
        self.batch_size = spec.batch_size
        self.tokenizer = open_clip.get_tokenizer(spec.model_name)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch
        chunks = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                tokens = self.tokenizer(list(texts[start:start + self.batch_size])).to(self.device)
                features = self.model.encode_text(tokens).float()
                chunks.append(torch.nn.functional.normalize(features, dim=-1).cpu().numpy())
        if not chunks:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate(chunks).astype(np.float32, copy=False)


def build_text_encoder(spec: EncoderSpec):
    """The text side of `spec`'s encoder: an object with `encode(texts) -> (n, d)`."""
    if spec.kind == "thumbnail":
        return ThumbnailTextEncoder(spec.thumbnail_size)
    return OpenClipTextEncoder(spec)
