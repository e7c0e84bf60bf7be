"""An environment that holds every library which picks its kernels by the CPU at run time
to AVX2: what any x86-64 CPU of the last decade runs.

ATen, oneDNN and MKL inside torch, OpenBLAS inside numpy and numpy's own loops each choose
AVX-512 code where the CPU has it, and their float results then differ in the last bits
from an AVX2 machine's. A release rounds what it publishes (transforms/core/precision.py),
which keeps float64 values (BRISQUE) and the samples' bytes the same on both; a float32
model's outputs (the paper's CLIP) move by ~1e-7, and a few percent of their 6-decimal
distances with them. This environment is for comparing the two on one machine
(tests/release/check/test_reproducible.py, bench/kernel_noise.py), and for a user who wants a
float32 model's release the same on every x86-64 CPU, at the cost of AVX-512's speed
(docs/rebuilding.md, "The same release on another machine"):

    eval "$(.venv/bin/python -m transforms.core.kernels)"; make build-imagecode ...

It must be set before the process starts: the libraries read it once, when they load.
"""
from __future__ import annotations

from typing import Dict


def avx2_kernels() -> Dict[str, str]:
    """The variables, by the names this numpy gives its AVX-512 groups."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__ as dispatched
    except ImportError:   # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__ as dispatched
    wide = [f for f in dispatched if f.startswith("AVX512") or f == "X86_V4"]
    return {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2",
            "OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": " ".join(wide)}


if __name__ == "__main__":   # eval "$(.venv/bin/python -m transforms.core.kernels)"
    import shlex
    print("\n".join(f"export {name}={shlex.quote(value)}" for name, value in avx2_kernels().items()))
