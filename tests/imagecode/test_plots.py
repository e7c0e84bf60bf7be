"""Data-card plots: valid PNGs, same inputs -> same bytes, no version/time metadata."""
import numpy as np
import pytest
from PIL import Image

from pipelines.release.cards import plots
from transforms.core.histograms import HistogramFn


def histogram(values):
    """What the pipeline hands the BRISQUE plot: HistogramFn's output, computed here
    without Beam through the CombineFn's own methods."""
    fn = HistogramFn(0.0, 1.3, 65)
    accumulator = fn.create_accumulator()
    for value in values:
        accumulator = fn.add_input(accumulator, value)
    return fn.extract_output(accumulator)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _inputs():
    rng = np.random.default_rng(0)
    return {
        "distance_histogram": ({"open-images": rng.uniform(0.4, 1.2, 450).tolist(),
                                "msr-vtt": rng.uniform(0.35, 1.0, 450).tolist()}, 0.35),
        "brisque_histogram": (histogram(rng.uniform(0.0, 1.0, 300).tolist()), 0.65),
        "lengths_by_split": ({"train": rng.integers(3, 60, 200).tolist(),
                              "valid": rng.integers(3, 50, 40).tolist()},),
    }


@pytest.mark.parametrize("name", ["distance_histogram", "brisque_histogram",
                                  "lengths_by_split"])
def test_writes_a_png_and_returns_its_name(tmp_path, name):
    path = tmp_path / "plots" / f"{name}.png"
    assert getattr(plots, name)(*_inputs()[name], str(path)) == f"{name}.png"
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    with Image.open(path) as image:
        assert image.size == (640, 400)
        assert "Software" not in image.info  # no matplotlib version in the file


@pytest.mark.parametrize("name", ["distance_histogram", "brisque_histogram",
                                  "lengths_by_split"])
def test_same_inputs_give_the_same_bytes(tmp_path, name):
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    getattr(plots, name)(*_inputs()[name], str(first))
    getattr(plots, name)(*_inputs()[name], str(second))
    assert first.read_bytes() == second.read_bytes()


def test_different_inputs_give_different_bytes(tmp_path):
    plots.brisque_histogram(histogram([0.1, 0.2, 0.3]), 0.65, str(tmp_path / "a.png"))
    plots.brisque_histogram(histogram([0.1, 0.2, 0.9]), 0.65, str(tmp_path / "b.png"))
    assert (tmp_path / "a.png").read_bytes() != (tmp_path / "b.png").read_bytes()


def test_empty_inputs_still_draw(tmp_path):
    plots.distance_histogram({}, 0.35, str(tmp_path / "d.png"))
    plots.brisque_histogram(histogram([]), 0.65, str(tmp_path / "b.png"))
    plots.lengths_by_split({"test": []}, str(tmp_path / "l.png"))
    for name in ("d.png", "b.png", "l.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG_SIGNATURE)
