"""The greedy mining rule per shot (ImageCoDe §3.1 "Video Frames").

Per shot, in temporal order: take the first acceptable frame; take each following
frame whose Euclidean distance to every frame already in the current set is above the
threshold (and that is acceptable); close the set at `set_size` frames and start a new
one; discard the set still open when the shot ends.

"Acceptable" is the quality gate (BRISQUE, OCR; quality_gate.py), which the rule asks
through `accept`. It is asked lazily: only about frames the distance rule would pick, so
its cost follows the number of selected frames, not of decoded frames. Verdicts are per
frame and deterministic, so the sets are identical to filtering every frame first
(tests/imagecode/video/test_mining.py proves it).

This module is the rule alone: embeddings and a verdict function in, positions out.
The Beam stage that runs it over videos (decoding frames on demand, scoring them ahead
on threads, the cache of scores and frame images, the staged JPEGs) is scoring.py
(MineFrameSets); `calibrate` runs it on cached scores (pipelines/imagecode/calibrate.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from pipelines.imagecode import reasons
from transforms.vectors.distances import distances_to

# accept(position) -> None when the frame is acceptable, else a reason code.
AcceptFn = Callable[[int], Optional[str]]
# foresee(position, the positions asked next if it is rejected): see mine_sets.
ForeseeFn = Callable[[int, Iterator[int]], None]


@dataclass
class MiningResult:
    sets: List[List[int]] = field(default_factory=list)           # positions, per complete set
    unfinished: List[int] = field(default_factory=list)           # positions of the discarded set
    rejected: Dict[int, str] = field(default_factory=dict)        # position -> reason code
    # a too_similar position -> (the selected position it was closest to, their distance)
    nearest: Dict[int, Tuple[int, float]] = field(default_factory=dict)


def mine_sets(embeddings: np.ndarray, threshold: float, set_size: int,
              accept: AcceptFn, foresee: Optional[ForeseeFn] = None) -> MiningResult:
    """Run the greedy miner over one shot's (n, d) L2-normalised embeddings.

    `foresee`, when given, is told before each verdict which positions the miner would
    ask about next should this one be rejected (lazily: an iterator), so a caller can
    score them ahead; it changes nothing the miner decides."""
    result = MiningResult()
    current: List[int] = []
    for position in range(len(embeddings)):
        if current:
            distances = distances_to(embeddings[current], embeddings[position])
            if not np.all(distances > threshold):
                closest = int(np.argmin(distances))
                result.rejected[position] = reasons.TOO_SIMILAR
                result.nearest[position] = (current[closest], float(distances[closest]))
                continue
        if foresee is not None:
            foresee(position, _asked_after(embeddings, threshold, list(current), position))
        verdict = accept(position)
        if verdict is not None:
            result.rejected[position] = verdict
            continue
        current.append(position)
        if len(current) == set_size:
            result.sets.append(current)
            current = []
    result.unfinished = current
    return result


def _asked_after(embeddings: np.ndarray, threshold: float, current: List[int],
                 position: int) -> Iterator[int]:
    """The positions after `position` the miner asks about, in order, while the set stays
    `current` (i.e. while every verdict is a rejection): the distance rule of mine_sets."""
    for later in range(position + 1, len(embeddings)):
        if current:
            distances = distances_to(embeddings[current], embeddings[later])
            if not np.all(distances > threshold):
                continue
        yield later
