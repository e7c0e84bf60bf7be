"""The published precision (transforms/core/precision.py): values rounded where they are
made, so the kernel noise of another CPU (measured: ~2e-13 on a BRISQUE/100 score, ~2e-7
on a float32 embedding's figures) does not reach the release, and sums of published values
exact, so a combiner's total follows the values and not the order of its bundles."""
import math
import random

import numpy as np

from transforms.core.precision import (DECIMALS, figure, mean_of_units, rounded, rounded_array,
                                       rounded_mean, units)


def test_a_rounded_value_lies_on_the_published_grid_and_absorbs_kernel_noise():
    rng = np.random.default_rng(0)
    values = rng.uniform(0, 2, 10_000)
    out = rounded_array(values)
    assert np.all(np.abs(out - values) <= 0.5 * 10 ** -DECIMALS + 1e-15)
    assert all(rounded(v) == o for v, o in zip(values[:100], out[:100]))
    assert np.array_equal(rounded_array(out), out)                     # idempotent
    # BRISQUE's measured noise (2e-11 points = 2e-13 on the /100 scale) leaves the value
    # where it was unless it sits within the noise of a half-way point: here never.
    noisy = values + rng.uniform(-2e-13, 2e-13, len(values))
    assert np.array_equal(rounded_array(noisy), out)


def test_nan_and_infinities_pass_through():
    assert math.isnan(rounded(float("nan"))) and rounded(float("inf")) == float("inf")
    assert math.isnan(figure(float("nan"))) and figure(-float("inf")) == -float("inf")
    assert np.isinf(rounded_array([np.inf])[0])


def test_a_figure_keeps_four_significant_digits():
    assert figure(0.32972049) == 0.3297 and figure(0.3297206) == 0.3297
    assert figure(122.9512) == 123.0 and figure(98.91594) == 98.92
    # the two CPUs' silhouettes of the BD2BB sample, 6 digits apart (0.329721 / 0.32972)
    assert figure(0.3297205 + 1e-7) == figure(0.3297205 - 1e-7)


def test_sums_of_published_values_are_the_same_in_any_order():
    rng = random.Random(1)
    values = [rounded(rng.uniform(0, 2)) for _ in range(5_000)]
    orders = [values, sorted(values), sorted(values, reverse=True)]
    float_sums = {sum(order) for order in orders}
    assert len(float_sums) > 1, "float addition is not associative: the test would prove nothing"
    assert len({rounded_mean(order) for order in orders}) == 1
    total = sum(units(v) for v in values)
    assert rounded_mean(values) == mean_of_units(total, len(values))
    assert abs(rounded_mean(values) - float(np.mean(values))) <= 0.5e-6
    assert all(units(v) / 10 ** DECIMALS == v for v in values[:100])
    assert math.isnan(rounded_mean([]))
