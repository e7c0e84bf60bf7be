"""The precision of published values: what makes two CPUs publish the same bytes.

A value computed by floating-point kernels that a library picks at run time moves in its
last bits with the machine. Measured here (docs/rebuilding.md, "The same release"):
- BRISQUE's float64 SVR product runs in MKL (inside torch), whose code path follows the
  CPU (AVX2 or AVX-512); its reductions follow the batch a frame is scored in. Two CPUs,
  or one frame scored alone and in a batch, differ by up to ~2e-11 BRISQUE points.
- A float32 model's embedding (CLIP ViT-B/16, all-MiniLM-L6-v2) differs by up to ~2e-7
  per component between AVX2 and AVX-512 kernels (oneDNN, MKL), and so do the distances
  and figures computed from them.
(bench/kernel_noise.py; transforms/core/kernels.py holds the kernels to AVX2.)
Exactly rounded operations (+, -, *, /, sqrt) and sums in a fixed order are the same on
every IEEE machine; these kernels are not.

So every float a release publishes, or that a rule compares with a threshold, is rounded
where it is made, and the rule compares the rounded value (a reader can re-check every
keep or drop from the published numbers):
- `rounded`: scores, distances and similarities, to DECIMALS decimal places;
- `figure`: statistics of many model outputs (a clustering's inertia and silhouette), to
  FIGURE_DIGITS significant digits.
Rounding is itself exact arithmetic (a product, rint and a division; or Python's
correctly rounded formatting), so it gives the same result everywhere. Two machines then
publish different bytes only when a value lies within its kernel noise of a rounding
half-way point: odds of about 2 x noise / grid per value (about 4e-7 for a BRISQUE score,
2e-3 for a 4-digit figure of float32 embeddings, but ~0.07 for a 6-decimal distance
between two float32 model embeddings: that release is the same on one machine kind, or
with the kernels held: docs/rebuilding.md). The same machine kind always publishes the
same bytes.

Sums of published values are taken in integer units of the last decimal (`units`), so
they are exact and the same in any order: a combiner's total does not depend on the order
in which a runner merged its bundles.
"""
from __future__ import annotations

import math

import numpy as np

DECIMALS = 6          # scores, distances, similarities: 1e-6 (BRISQUE/100: 1e-4 points)
FIGURE_DIGITS = 4     # statistics of float32 model outputs (noise ~1e-7 relative)
_SCALE = 10 ** DECIMALS


def rounded(value: float) -> float:
    """`value` to DECIMALS places (NaN and infinities unchanged)."""
    return float(np.round(np.float64(value), DECIMALS))


def rounded_array(values) -> np.ndarray:
    """Every element of `values` to DECIMALS places, as float64."""
    return np.round(np.asarray(values, dtype=np.float64), DECIMALS)


def figure(value: float) -> float:
    """`value` to FIGURE_DIGITS significant digits (NaN and infinities unchanged)."""
    value = float(value)
    return value if not math.isfinite(value) else float(f"{value:.{FIGURE_DIGITS}g}")


def units(value: float) -> int:
    """A rounded value as an integer count of 10^-DECIMALS: sums of these are exact."""
    return int(round(float(value) * _SCALE))


def rounded_mean(values) -> float:
    """The rounded mean of rounded values, summed exactly (NaN for none)."""
    values = [float(v) for v in values]
    return mean_of_units(sum(units(v) for v in values), len(values)) if values else float("nan")


def mean_of_units(total: int, count: int) -> float:
    """The rounded mean of `count` values whose units add up to `total` (an integer
    division, correctly rounded by Python, then rounded: the same on every machine)."""
    return rounded(total / (count * _SCALE))
