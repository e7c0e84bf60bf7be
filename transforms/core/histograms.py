"""Fixed-bin histograms as a Beam combiner: a distribution for a data card without
gathering the values anywhere (the accumulator is the bin counts)."""
from __future__ import annotations

import math

import apache_beam as beam
import numpy as np


class HistogramFn(beam.CombineFn):
    """Floats -> {"edges", "counts", "below", "above", "non_finite", "n"}.

    `bins` equal bins over [low, high); values outside are counted in below/above, so
    nothing is dropped from `n`."""

    def __init__(self, low: float, high: float, bins: int):
        if not high > low or bins < 1:
            raise ValueError("a histogram needs high > low and at least one bin")
        self._low, self._high, self._bins = float(low), float(high), int(bins)

    def create_accumulator(self):
        return np.zeros(self._bins + 3, dtype=np.int64)  # bins, below, above, non-finite

    def add_input(self, counts, value):
        value = float(value)
        if not math.isfinite(value):
            counts[-1] += 1
        elif value < self._low:
            counts[-3] += 1
        elif value >= self._high:
            counts[-2] += 1
        else:
            counts[int((value - self._low) / (self._high - self._low) * self._bins)] += 1
        return counts

    def merge_accumulators(self, accumulators):
        return np.sum(list(accumulators), axis=0)

    def extract_output(self, counts):
        edges = np.linspace(self._low, self._high, self._bins + 1)
        return {"edges": [round(float(e), 10) for e in edges],
                "counts": [int(c) for c in counts[:self._bins]],
                "below": int(counts[-3]), "above": int(counts[-2]),
                "non_finite": int(counts[-1]), "n": int(counts.sum())}
