"""Topic clusters (elbow, k-means, review decisions; §3.2, A.3) and splits (§4.1, §7)."""
import collections

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from schemas.bd2bb import BD2BBTuple, Datapoint, Sample
from tests.beam_testing import local_test_pipeline
from transforms.bd2bb_splits import AssignSplits, assign_split
from transforms.clustering import cluster_actions, elbow, parse_review, review_rows


def test_elbow_is_the_point_farthest_below_the_chord():
    ks = [2, 3, 4, 5, 6, 7, 8]
    inertias = [100, 60, 25, 22, 20, 19, 18]     # bends at 4
    assert elbow(ks, inertias) == 4
    assert elbow([5, 10], [3.0, 2.0]) == 10
    with pytest.raises(ValueError):
        elbow([], [])


def blobs(n_per=30, centres=4, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, dim)) * 5
    items = []
    for j in range(centres):
        for i in range(n_per):
            v = c[j] + rng.normal(size=dim) * 0.3
            items.append((f"{j}-{i:03d}", v / np.linalg.norm(v)))
    return items


def test_kmeans_finds_the_blobs_by_elbow_and_ignores_input_order():
    items = blobs()
    result = cluster_actions(items, range(2, 11), seed=0)
    assert result.k == 4 and result.method == "elbow"
    assert sorted(result.sizes.values()) == [30, 30, 30, 30]
    for j in range(4):   # every blob is one cluster
        assert len({c for key, c in result.assignments.items() if key.startswith(f"{j}-")}) == 1
    best = max(result.curve, key=lambda c: c["silhouette"])
    assert best["k"] == 4 and len(result.curve) == 9
    again = cluster_actions(list(reversed(items)), range(2, 11), seed=0)
    assert again.assignments == result.assignments
    fixed = cluster_actions(items, range(2, 11), seed=0, fixed_k=6)
    assert fixed.k == 6 and fixed.method == "fixed"


def test_review_sheet_samples_per_cluster_by_seeded_hash():
    items = blobs(n_per=12, centres=2)
    result = cluster_actions(items, [2, 3], seed=0, fixed_k=2)
    texts = {k: f"action {k}" for k, _ in items}
    rows = review_rows(texts, result, per_cluster=5, seed=0)
    assert len(rows) == 10 and collections.Counter(r[0] for r in rows) == {0: 5, 1: 5}
    assert rows == review_rows(dict(reversed(list(texts.items()))), result, 5, 0)
    assert rows != review_rows(texts, result, 5, seed=1)


def test_review_decisions():
    review = parse_review("decision,cluster,action,to_cluster,label\n"
                          "label,0,,,tennis\nlabel,1,,,cake\ndrop,2,,,\n"
                          "move,,Hit THE ball,1,\nremove,,buy a dog,,\n")
    assert review.labels == {0: "tennis", 1: "cake"}
    assert review.decide("serve the ball", 0) == ("keep", 0)
    assert review.decide("hit  the ball", 0) == ("keep", 1)          # moved, text normalised
    assert review.decide("buy a dog", 0) == ("action_dropped", 0)
    assert review.decide("anything", 2) == ("cluster_dropped", 2)
    with pytest.raises(ValueError, match="line 2"):
        parse_review("decision,cluster,action,to_cluster,label\nsplit,1,,,\n")
    with pytest.raises(ValueError, match="move needs action"):
        parse_review("decision,cluster,action,to_cluster,label\nmove,1,,2,\n")
    with pytest.raises(ValueError, match="header"):
        parse_review("cluster,label\n1,x\n")


def test_split_shares_are_20_40_40_and_seeded():
    ratios = {"train": 0.2, "val": 0.4, "test": 0.4}
    splits = collections.Counter(assign_split(0, f"s{i}", ratios) for i in range(20000))
    assert abs(splits["train"] / 20000 - 0.2) < 0.01 and abs(splits["val"] / 20000 - 0.4) < 0.01
    assert assign_split(0, "s1", ratios) == assign_split(0, "s1", ratios)
    assert [assign_split(1, f"s{i}", ratios) for i in range(50)] != [assign_split(0, f"s{i}", ratios)
                                                                     for i in range(50)]


def sample(i, image, intention, action, endings=()):
    t = BD2BBTuple(f"id{i}", image, intention, action, "w")
    return Sample(f"id{i}", Datapoint(t), tuple(endings), (), 0)


def test_hard_test_excludes_what_train_has_seen():
    ratios = {"train": 0.2, "val": 0.4, "test": 0.4}
    ids = [f"id{i}" for i in range(200)]
    train_id = next(i for i in ids if assign_split(0, i, ratios) == "train")
    test_ids = [i for i in ids if assign_split(0, i, ratios) == "test"][:5]
    n = {i: int(i[2:]) for i in ids}
    samples = [sample(n[train_id], "img-T", "want to relax now", "hit the ball", ["ride a horse"])]
    samples += [
        sample(n[test_ids[0]], "img-T", "a new intention", "new action 0"),            # image seen
        sample(n[test_ids[1]], "img-1", "Want to  relax now", "new action 1"),         # intention seen
        sample(n[test_ids[2]], "img-2", "another one", "Hit the ball"),                # target seen as target
        sample(n[test_ids[3]], "img-3", "yet another", "ride a horse"),               # seen only as decoy: hard
        sample(n[test_ids[4]], "img-4", "fresh intention", "fresh action"),           # hard
    ]
    with local_test_pipeline() as p:
        out = p | beam.Create(samples) | AssignSplits(0, ratios)
        assert_that(out | beam.Map(lambda s: (s.sample_id, s.split, s.hard_test)),
                    equal_to([(train_id, "train", False)]
                             + [(i, "test", k >= 3) for k, i in enumerate(test_ids)]))
