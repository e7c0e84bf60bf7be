import math

import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that, equal_to

from tests.beam_testing import local_test_pipeline
from transforms.core.histograms import HistogramFn


def test_counts_match_numpy_and_nothing_is_dropped():
    values = [0.05, 0.1, 0.1, 0.64, 0.66, 1.29, 1.3, 2.0, -0.1, math.inf, math.nan]
    fn = HistogramFn(0.0, 1.3, 13)
    acc = fn.create_accumulator()
    for v in values:
        acc = fn.add_input(acc, v)
    out = fn.extract_output(acc)
    inside = [v for v in values if math.isfinite(v) and 0.0 <= v < 1.3]
    expected, _ = np.histogram(inside, bins=np.linspace(0.0, 1.3, 14))
    assert out["counts"] == expected.tolist()
    assert (out["below"], out["above"], out["non_finite"], out["n"]) == (1, 2, 2, len(values))


def test_the_beam_combiner_merges_partial_counts():
    values = list(np.linspace(0, 1, 101))
    with local_test_pipeline() as p:
        result = (p | beam.Create(values) | beam.CombineGlobally(HistogramFn(0.0, 1.0, 4))
                  | beam.Map(lambda h: (h["counts"], h["above"], h["n"])))
        assert_that(result, equal_to([([25, 25, 25, 25], 1, 101)]))
