"""PNG plots for the data card (DATACARD.md), from plain lists of numbers.

Each writer takes the values and an output path (local or gs://, written through Beam's
FileSystems) and returns the file's base name, for linking from the card. Output is
byte-for-byte reproducible: fixed size and dpi, fixed bins, no "Software" entry or
timestamp in the PNG metadata, and a fresh Agg figure each time (no pyplot state, no
display needed).
"""
from __future__ import annotations

import io
import posixpath
from typing import Dict, Sequence

import numpy as np
from apache_beam.io.filesystems import FileSystems
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

FIGSIZE = (6.4, 4.0)   # inches
DPI = 100
BINS = 30
# No "Software: matplotlib x.y" key: the same inputs give the same bytes on any version.
PNG_METADATA = {"Software": None}


def _figure():
    figure = Figure(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _save(figure, path: str) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata=PNG_METADATA)
    with FileSystems.create(path, mime_type="image/png") as out:
        out.write(buffer.getvalue())
    return posixpath.basename(path)


def _shared_edges(groups: Sequence[np.ndarray], extra: Sequence[float] = ()) -> np.ndarray:
    """One set of bin edges for all groups (and the threshold), so bars line up."""
    values = np.concatenate([np.ravel(g) for g in groups] + [np.asarray(extra, float)])
    if values.size == 0:
        return np.linspace(0.0, 1.0, BINS + 1)
    return np.histogram_bin_edges(values, bins=BINS)


def _no_data(axes) -> None:
    axes.text(0.5, 0.5, "no data", ha="center", va="center", transform=axes.transAxes)


def distance_histogram(values_by_source: Dict[str, Sequence[float]], threshold: float,
                       path: str) -> str:
    """Each set's mean pairwise embedding distance, per source; the mining threshold
    (the least distance between two frames of a video set) marked."""
    figure, axes = _figure()
    groups = {source: np.asarray(values, float)
              for source, values in sorted(values_by_source.items())}
    edges = _shared_edges(list(groups.values()), [threshold])
    for source, values in groups.items():
        axes.hist(values, bins=edges, histtype="step", label=f"{source} (n={values.size})")
    axes.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold:g}")
    if not any(values.size for values in groups.values()):
        _no_data(axes)
    axes.set_xlabel("mean pairwise Euclidean distance within a set")
    axes.set_ylabel("sets")
    axes.legend(fontsize="small")
    return _save(figure, path)


def brisque_histogram(histogram: dict, threshold: float, path: str) -> str:
    """BRISQUE/100 of every evaluated frame, from transforms.core.histograms.HistogramFn's
    output (bin counts, so the scores never gather in one place); frames above the
    threshold are rejected."""
    figure, axes = _figure()
    edges = np.asarray(histogram["edges"], float)
    counts = np.asarray(histogram["counts"], float)
    axes.stairs(counts, edges, fill=True, color="tab:blue")
    axes.axvline(threshold, color="black", linestyle="--",
                 label=f"threshold {threshold:g} (above: rejected)")
    outside = histogram["below"] + histogram["above"] + histogram["non_finite"]
    if not histogram["n"]:
        _no_data(axes)
    axes.set_xlabel("BRISQUE / 100 (higher = lower quality)")
    axes.set_ylabel(f"frames (n={histogram['n']}, {outside} outside the axis)")
    axes.legend(fontsize="small")
    return _save(figure, path)


def lengths_by_split(lengths: Dict[str, Sequence[int]], path: str) -> str:
    """Description length in tokens per split, as shares so split sizes compare."""
    figure, axes = _figure()
    groups = {split: np.asarray(values, float) for split, values in sorted(lengths.items())}
    longest = max((values.max() for values in groups.values() if values.size), default=1.0)
    edges = np.arange(0, longest + 2) - 0.5      # one bin per token count
    for split, values in groups.items():
        if values.size:
            axes.hist(values, bins=edges, histtype="step", density=True,
                      label=f"{split} (n={values.size}, mean {values.mean():.1f})")
    if not any(values.size for values in groups.values()):
        _no_data(axes)
    else:
        axes.legend(fontsize="small")
    axes.set_xlabel("description length (tokens)")
    axes.set_ylabel("share of descriptions")
    return _save(figure, path)


def frequency_bars(counts: Dict[str, int], path: str, xlabel: str, ylabel: str,
                   top: int = 0) -> str:
    """Counts as bars, most frequent first (ties by name); `top` > 0 keeps that many."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if top:
        items = items[:top]
    width = max(FIGSIZE[0], 0.16 * len(items) + 1.5)
    figure = Figure(figsize=(width, FIGSIZE[1] + 1.2), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    if items:
        axes.bar(range(len(items)), [n for _, n in items], color="tab:blue")
        axes.set_xticks(range(len(items)))
        axes.set_xticklabels([name for name, _ in items], rotation=90, fontsize="x-small")
        axes.set_xlim(-0.6, len(items) - 0.4)
    else:
        _no_data(axes)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    figure.tight_layout()
    return _save(figure, path)
