import numpy as np
import pytest

from pipelines.imagecode import reasons
from pipelines.imagecode.video.mining import mine_sets
from transforms.vectors.distances import pairwise_distances


def unit(vectors):
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def always_ok(_):
    return None


def test_greedy_rule_by_hand():
    # 1-D-like points on a circle: angle steps make known chord distances.
    angles = np.array([0.0, 0.1, 0.5, 0.55, 1.0, 1.6, 1.62, 2.2])
    emb = unit(np.stack([np.cos(angles), np.sin(angles)], axis=1))
    result = mine_sets(emb, threshold=0.35, set_size=3, accept=always_ok)
    # chord(0.1) ~ 0.1, chord(0.5) ~ 0.49: frame 0 in; 1 too close; 2 in; 3 close to 2; 4 in -> set.
    assert result.sets == [[0, 2, 4], ]
    # new set starts at the next acceptable frame (5), 6 too close, 7 in -> unfinished.
    assert result.unfinished == [5, 7]
    assert result.rejected == {1: reasons.TOO_SIMILAR, 3: reasons.TOO_SIMILAR, 6: reasons.TOO_SIMILAR}
    # each too_similar frame names the selected frame it was closest to, and the distance
    assert {p: near for p, (near, _) in result.nearest.items()} == {1: 0, 3: 2, 6: 5}
    # ... as published: rounded to 6 decimals (transforms/core/precision.py)
    chord = lambda a, b: float(np.linalg.norm(emb[a].astype(np.float64) - emb[b]))
    assert all(d == round(chord(p, near), 6) for p, (near, d) in result.nearest.items())


def test_first_acceptable_frame_starts_the_set_and_quality_rejects_are_skipped():
    emb = unit(np.eye(6) + 0.0)  # all pairwise distances sqrt(2) > threshold
    bad = {0: reasons.BLURRY, 3: reasons.TEXT}
    result = mine_sets(emb, 0.35, 2, accept=lambda p: bad.get(p))
    assert result.sets == [[1, 2], [4, 5]]
    assert result.rejected == bad
    assert result.unfinished == []


def test_sets_are_disjoint_and_in_temporal_order():
    rng = np.random.default_rng(0)
    emb = unit(rng.normal(size=(300, 8)))
    result = mine_sets(emb, 0.9, 10, accept=always_ok)
    flat = [p for s in result.sets for p in s]
    assert len(flat) == len(set(flat))
    assert flat == sorted(flat)
    assert all(len(s) == 10 for s in result.sets)
    # every frame is accounted for exactly once
    assert len(flat) + len(result.unfinished) + len(result.rejected) == 300


def test_every_pair_in_a_set_is_above_the_threshold():
    rng = np.random.default_rng(1)
    emb = unit(rng.normal(size=(500, 4)))
    result = mine_sets(emb, 1.0, 5, accept=always_ok)
    assert result.sets
    for s in result.sets:
        assert pairwise_distances(emb[s]).min() > 1.0


@pytest.mark.parametrize("seed", range(5))
def test_lazy_filtering_selects_exactly_what_eager_filtering_selects(seed):
    rng = np.random.default_rng(seed)
    n = 400
    # a slowly drifting walk, as frames of a shot are
    emb = unit(np.cumsum(rng.normal(scale=0.15, size=(n, 16)), axis=0) + rng.normal(size=16))
    verdicts = {p: rng.choice([reasons.BLURRY, reasons.TEXT]) for p in range(n) if rng.random() < 0.3}

    eager_checked = list(range(n))  # the naive way: every frame evaluated first
    acceptable = [p for p in eager_checked if p not in verdicts]
    eager = mine_sets(emb[acceptable], 0.35, 10, accept=always_ok)
    eager_sets = [[acceptable[p] for p in s] for s in eager.sets]

    lazy_checked = []

    def lazy_accept(p):
        lazy_checked.append(p)
        return verdicts.get(p)

    lazy = mine_sets(emb, 0.35, 10, accept=lazy_accept)
    assert lazy.sets == eager_sets
    assert len(lazy.sets) > 0
    assert len(lazy_checked) == len(set(lazy_checked))  # each frame asked at most once
    assert len(lazy_checked) < n / 2


def test_pairwise_distances_counts_pairs():
    emb = unit(np.eye(4))
    d = pairwise_distances(emb)
    assert d.shape == (6,)
    np.testing.assert_allclose(d, np.sqrt(2), rtol=1e-6)
