"""Where a model's weights are: a local file, a folder holding one weight file, or a
remote object (gs://) copied once to a local cache. Nothing is ever downloaded from a
model hub; a missing path is an error naming the config key.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Optional

from apache_beam.io.filesystems import FileSystems

from transforms.core.errors import UserError

# In a checkpoint folder (e.g. a Hugging Face snapshot) these names are taken first.
_WEIGHT_FILE_NAMES = ("open_clip_model.safetensors", "open_clip_pytorch_model.safetensors",
                      "open_clip_pytorch_model.bin", "model.safetensors", "pytorch_model.bin")


_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def resolve_checkpoint(checkpoint: Optional[str], key: str = "embed.checkpoint") -> str:
    """The local weights file for the config key `key`, or a clear EncoderError naming it."""
    if not checkpoint:
        raise EncoderError(
            f"{key} is not set: give the local path of the CLIP weights "
            "(e.g. OpenAI's ViT-B-16.pt); nothing is downloaded")
    if "://" in checkpoint:
        return _local_copy(checkpoint, key)
    path = os.path.abspath(os.path.expanduser(checkpoint))
    if os.path.isdir(path):
        found = _weights_in_dir(path)
        if found is None:
            raise EncoderError(f"{key}: no weights file ({', '.join(_WEIGHT_SUFFIXES)}) "
                               f"in folder {checkpoint}")
        return found
    if not os.path.isfile(path):
        raise EncoderError(f"{key}: no such file: {checkpoint} "
                           "(weights are never downloaded; put the file there or fix the path)")
    check_weights_format(path, checkpoint, key)
    return path


# What a weights file starts with, by the formats the encoders load: torch.save's zip
# archive (also TorchScript, OpenAI's ViT-B-16.pt), torch.save's older pickle, and
# safetensors (an 8-byte little-endian header length, then the JSON header).
_ZIP, _PICKLE = b"PK\x03\x04", b"\x80"
_SAFETENSORS_MAX_HEADER = 100 << 20   # safetensors' own bound on its header


def check_weights_format(path: str, checkpoint: str, key: str = "embed.checkpoint") -> None:
    """EncoderError naming `key` unless `path` starts as a weights file does,
    read from its first bytes on the driver, before any work: a checkpoint of random
    bytes was first opened by a worker, and failed late inside Beam's traceback. (A file
    of the right format holding the wrong model still fails when loaded, saying so.)"""
    with open(path, "rb") as f:
        head = f.read(9)
    if not head:
        raise EncoderError(f"{key}: {checkpoint} is empty (0 bytes): not a weights file")
    if head.startswith(_ZIP) or (head.startswith(_PICKLE) and len(head) > 1 and 2 <= head[1] <= 5):
        return
    header = int.from_bytes(head[:8], "little")
    if len(head) == 9 and 2 <= header <= _SAFETENSORS_MAX_HEADER and head[8:9] == b"{":
        return
    raise EncoderError(f"{key}: {checkpoint} is not a weights file: it starts with bytes "
                       f"{head.hex(' ')}, neither a PyTorch checkpoint (a zip archive or a pickle) "
                       "nor safetensors")


def _weights_in_dir(folder: str) -> Optional[str]:
    """The weights file in a local cache folder: open_clip's names first, then any."""
    names = sorted(os.listdir(folder))
    for name in _WEIGHT_FILE_NAMES + tuple(n for n in names if n.endswith(_WEIGHT_SUFFIXES)):
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return None


def _local_copy(url: str, key: str) -> str:
    """Copy weights from a Beam filesystem (gs://, s3://) to local disk once per machine."""
    cache = os.path.join(tempfile.gettempdir(), "embed-weights")
    os.makedirs(cache, exist_ok=True)
    local = os.path.join(cache, hashlib.sha256(url.encode()).hexdigest()[:16] + "-"
                         + os.path.basename(url))
    if not os.path.isfile(local):
        if not FileSystems.exists(url):
            raise EncoderError(f"{key}: no such file: {url}")
        partial = f"{local}.{os.getpid()}.part"
        with FileSystems.open(url) as src, open(partial, "wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                dst.write(block)
        os.replace(partial, local)  # atomic: a concurrent reader never sees half a file
    return local


class EncoderError(UserError, RuntimeError):
    """The encoder cannot be built as configured; the message names the config key."""
