"""Which device a model stage runs on, and what a manifest records about it.

Every model stage has a `device` key: "auto" (CUDA when torch sees a GPU), "cpu" or
"cuda" (an error where there is none, rather than a silent CPU run). torch is imported
only when a device is resolved, so configs and drivers that never run a model stay light.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Dict

from transforms.core.errors import UserError

DEVICES = ("auto", "cpu", "cuda")


class DeviceError(UserError, ValueError):
    """A device setting that cannot be honoured here; the message names the config key."""


def check_device(setting: str, key: str) -> str:
    if setting not in DEVICES:
        raise DeviceError(f"{key}: {setting!r} is not one of {DEVICES}")
    return setting


def torch_threads_within_openmp_limit() -> None:
    """At most as many torch threads as OpenMP may start (`OMP_THREAD_LIMIT`).

    torch asks its OpenMP runtime for `torch.get_num_threads()` threads and oneDNN splits
    the work by that number; under a lower `OMP_THREAD_LIMIT` the team is smaller and the
    parts of the missing threads are never computed: bf16 embeddings came out 0.4 off, or
    NaN, on 2 cores with the limit at 1. With the counts equal, nothing is skipped and no
    thread is lost (OpenMP would not have started it). resolve_torch_device calls this, so
    every stage that resolves its device there does, on every worker (the kNN, whose
    device also depends on FAISS, calls it itself)."""
    limit = os.environ.get("OMP_THREAD_LIMIT", "").strip()
    if not (limit.isascii() and limit.isdigit()) or int(limit) < 1:   # as OpenMP reads it
        return
    import torch
    if torch.get_num_threads() > int(limit):
        torch.set_num_threads(int(limit))


def resolve_torch_device(setting: str, key: str) -> str:
    """"cpu" or "cuda" for a device setting, as torch sees this machine."""
    import torch
    check_device(setting, key)
    torch_threads_within_openmp_limit()
    if setting == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if setting == "cuda" and not torch.cuda.is_available():
        raise DeviceError(f"{key} is 'cuda' but no CUDA device is visible; use 'auto' or 'cpu'")
    return setting


def cuda_versions() -> Dict[str, Any]:
    """The CUDA runtime torch was built with and the GPU it sees (call where CUDA is)."""
    import torch
    return {"cuda_runtime": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "gpu": torch.cuda.get_device_name(0)}


def torch_device_record(setting: str, key: str, **extra: Any) -> Dict[str, Any]:
    """A stage's entry under the manifest's `devices`: the setting, what it resolves to
    on the machine that builds the release, torch's version and, on CUDA, its versions.
    A worker resolves `auto` the same way on its own machine."""
    import torch
    device = resolve_torch_device(setting, key)
    out: Dict[str, Any] = {"device_setting": setting, "device": device, **extra,
                           "torch_version": torch.__version__}
    if device == "cuda":
        out.update(cuda_versions())
    return out


@contextlib.contextmanager
def strict_float32():
    """float32 work in IEEE float32 for the duration, on a GPU too: no TF32 (a 10-bit
    mantissa) in matrix products or cuDNN convolutions. A kNN's float32 error bound and an
    "fp32" encoder's agreement with the CPU rest on it. The settings are the process's:
    they are put back afterwards (threads that enter together set the same values)."""
    import torch
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        with torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled, allow_tf32=False):
            yield
    finally:
        torch.set_float32_matmul_precision(saved)
