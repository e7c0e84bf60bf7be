"""Topic clusters (elbow, k-means, review decisions; §3.2, A.3) and splits (§4.1, §7)."""
import collections

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.bd2bb.clustering import check_review, cluster_actions, parse_review, review_rows
from pipelines.bd2bb.records import BD2BBTuple, Datapoint, Sample
from pipelines.bd2bb.splits import AssignSplits, split_of
from tests.beam_testing import local_test_pipeline
from transforms.core.precision import figure
from transforms.vectors.kmeans import elbow, kmeans_at


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


@pytest.mark.parametrize("rows, sample", [(400, 150), (120, 5000), (3_000, 3_000)])   # the last: distances in two blocks
def test_a_fit_in_place_equals_the_copying_fit_and_sklearns_silhouette(rows, sample):
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score
    matrix = np.random.default_rng(3).normal(size=(rows, 16))
    copied_row, copied_labels = kmeans_at(matrix, 5, 11, 2, sample)
    owned = matrix.copy()
    row, labels = kmeans_at(owned, 5, 11, 2, sample, in_place=True)
    assert row == copied_row and (labels == copied_labels).all()
    km = KMeans(n_clusters=5, n_init=2, random_state=11).fit(matrix)
    expected = silhouette_score(matrix, km.labels_, metric="cosine", sample_size=min(sample, rows), random_state=11)
    assert row["silhouette"] == figure(expected) and (km.labels_ == labels).all()   # 4 digits: precision.py


def test_review_sheet_samples_per_cluster_by_seeded_hash():
    items = blobs(n_per=12, centres=2)
    result = cluster_actions(items, [2, 3], seed=0, fixed_k=2)
    texts = {k: f"action {k}" for k, _ in items}
    rows = review_rows(texts, result, per_cluster=5, seed=0)
    assert len(rows) == 10 and collections.Counter(r[0] for r in rows) == {0: 5, 1: 5}
    assert rows == review_rows(dict(reversed(list(texts.items()))), result, 5, 0)
    assert rows != review_rows(texts, result, 5, seed=1)


@pytest.mark.parametrize("n_per, centres, ks, fixed_k, method", [
    (30, 4, range(2, 11), None, "elbow"),
    (30, 4, range(2, 11), 6, "fixed"),
    (2, 2, range(5, 7), None, "single"),      # fewer actions than any k
    (0, 0, range(2, 11), None, "none"),
], ids=["elbow", "fixed", "single", "none"])
def test_cluster_actions_in_beam_fits_each_k_apart_and_chooses_as_in_process(tmp_path, n_per, centres, ks,
                                                                            fixed_k, method):
    """Each k is its own element, fitted on the matrix read back from its file: the curve,
    the chosen clustering and the review sheet are those of cluster_actions in process
    (on the encoder's float32 vectors), and the vector files are gone afterwards."""
    from pipelines.bd2bb.clustering import ClusteringParams
    from pipelines.bd2bb.topic_clusters import ClusterActions
    items = [(key, v.astype(np.float32)) for key, v in blobs(n_per, centres)] if centres else []
    texts = {key: f"action {key}" for key, _ in items}
    params = ClusteringParams(tuple(ks), seed=3, fixed_k=fixed_k, review_per_cluster=4)
    expected = cluster_actions(items, params.ks, params.seed, fixed_k, params.n_init, params.silhouette_sample)
    assert expected.method == method

    def seen(c):
        r = c["result"]
        return r.k, r.method, r.curve, r.assignments, r.sizes, c["sheet"], c["actions"]

    scratch = tmp_path / "scratch"
    p = local_test_pipeline()
    clustered = (p | beam.Create([(key, texts[key], v) for key, v in items])
                 | ClusterActions(params, str(scratch)))
    assert_that(clustered | beam.Map(seen), equal_to([(
        expected.k, expected.method, expected.curve, expected.assignments, expected.sizes,
        review_rows(texts, expected, 4, params.seed), sorted(texts.values()))]))
    p.run()
    assert not scratch.exists()


def test_review_decisions():
    review = parse_review("decision,cluster,action,to_cluster,label\nclustering,,,,abc\n"
                          "label,0,,,tennis\nlabel,1,,,cake\ndrop,2,,,\n"
                          "move,,Hit THE ball,1,\nremove,,buy a dog,,\n")
    assert review.labels == {0: "tennis", 1: "cake"} and review.clustering == "abc"
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


def test_review_decisions_saved_by_excel_with_its_byte_order_mark_load(tmp_path):
    from pipelines.bd2bb.pipeline import load_review
    path = tmp_path / "review.csv"
    path.write_bytes(b"\xef\xbb\xbf" + b"decision,cluster,action,to_cluster,label\r\nlabel,0,,,tennis\r\n")
    assert load_review(str(path)).labels == {0: "tennis"}


def test_split_shares_are_exactly_20_40_40_and_seeded():
    ratios = {"train": 0.2, "val": 0.4, "test": 0.4}
    for n in (200, 1000, 20000):
        splits = collections.Counter(split_of(0, [f"s{i}" for i in range(n)], ratios).values())
        assert splits == {"train": n // 5, "val": 2 * n // 5, "test": n - n // 5 - 2 * n // 5}
    odd = collections.Counter(split_of(0, [f"s{i}" for i in range(7)], ratios).values())
    assert odd == {"train": 1, "val": 3, "test": 3}            # floor(7 x .2) = 1, floor(7 x .6) = 4
    ids = [f"s{i}" for i in range(50)]
    assert split_of(0, ids, ratios) == split_of(0, list(reversed(ids)), ratios)
    assert split_of(1, ids, ratios) != split_of(0, ids, ratios)


def test_beam_splits_are_exact_and_match_the_in_memory_ranking():
    ratios = {"train": 0.2, "val": 0.4, "test": 0.4}
    samples = [sample(i, f"COCO_{i}.jpg", f"intention {i}", f"action {i}") for i in range(500)]
    expected = split_of(3, [s.sample_id for s in samples], ratios)
    with local_test_pipeline() as p:
        out = p | beam.Create(samples) | AssignSplits(3, ratios)
        assert_that(out | beam.Map(lambda s: (s.sample_id, s.split)), equal_to(sorted(expected.items())))
    assert collections.Counter(expected.values()) == {"train": 100, "val": 200, "test": 200}


def sample(i, image, intention, action, endings=()):
    t = BD2BBTuple(f"id{i}", image, intention, action, "w")
    return Sample(f"id{i}", Datapoint(t), tuple(endings), (), 0)


def test_hard_test_excludes_what_train_has_seen():
    """§7, with images compared by COCO image id ("7" and COCO_..._000000000007.jpg are
    one image)."""
    ratios = {"train": 0.2, "val": 0.4, "test": 0.4}
    ids = [f"id{i}" for i in range(10)]
    _hard_test_case(ratios, ids, {i: int(i[2:]) for i in ids})


def _hard_test_case(ratios, ids, n):
    # Ten samples split exactly 2 / 4 / 4. Two train samples fix what train has seen; the
    # four test samples are chosen among id pairs until the wanted roles fit.
    pool = ids[:10]
    split = split_of(0, pool, ratios)
    train_ids = [i for i in pool if split[i] == "train"]
    test_ids = [i for i in pool if split[i] == "test"]
    val_ids = [i for i in pool if split[i] == "val"]
    assert (len(train_ids), len(val_ids), len(test_ids)) == (2, 4, 4)
    samples = [sample(n[train_ids[0]], "COCO_train2014_000000000007.jpg", "want to relax now", "hit the ball",
                      ["ride a horse"]),
               sample(n[train_ids[1]], "COCO_train2014_000000000008.jpg", "train two", "train action")]
    samples += [sample(n[i], f"COCO_{100 + k}.jpg", f"val {k}", f"val action {k}") for k, i in enumerate(val_ids)]
    samples += [
        sample(n[test_ids[0]], "7", "a new intention", "new action 0"),                # image seen (COCO id 7)
        sample(n[test_ids[1]], "COCO_1.jpg", "Want to  relax now", "new action 1"),    # intention seen
        sample(n[test_ids[2]], "COCO_2.jpg", "another one", "Hit the ball"),           # target seen as target
        sample(n[test_ids[3]], "COCO_3.jpg", "yet another", "ride a horse"),           # seen only as decoy: hard
    ]
    with local_test_pipeline() as p:
        out = p | beam.Create(samples) | AssignSplits(0, ratios)
        assert_that(out | beam.Filter(lambda s: s.split != "val")
                    | beam.Map(lambda s: (s.sample_id, s.split, s.hard_test)),
                    equal_to([(i, "train", False) for i in train_ids]
                             + [(i, "test", k == 3) for k, i in enumerate(test_ids)]))


def test_review_decisions_must_name_this_clustering_and_its_clusters():
    items = blobs(n_per=12, centres=2)
    result = cluster_actions(items, [2, 3], seed=0, fixed_k=2)
    other = cluster_actions(items, [2, 3], seed=0, fixed_k=3)
    assert result.fingerprint != other.fingerprint
    assert result.fingerprint == cluster_actions(list(reversed(items)), [2, 3], seed=0, fixed_k=2).fingerprint
    rows = review_rows({k: k for k, _ in items}, result, 3, 0)
    assert {r[-1] for r in rows} == {result.fingerprint}          # the sheet carries it
    header = "decision,cluster,action,to_cluster,label\n"
    check_review(parse_review(header), result)                    # no decisions: nothing to check
    good = parse_review(header + f"clustering,,,,{result.fingerprint}\nlabel,1,,,tennis\ndrop,0,,,\n")
    check_review(good, result)
    with pytest.raises(ValueError, match="clusters.review: the decisions have no `clustering"):
        check_review(parse_review(header + "label,1,,,tennis\n"), result)
    with pytest.raises(ValueError, match="clusters.review: the decisions were written for clustering"):
        check_review(good, other)
    with pytest.raises(ValueError, match=r"clusters.review: the decisions name clusters \[5, 7\]"):
        check_review(parse_review(header + f"clustering,,,,{result.fingerprint}\nlabel,7,,,x\n"
                                  "move,,some action,5,\n"), result)
    moves = parse_review(header + f"clustering,,,,{result.fingerprint}\nmove,,Hit  the Ball,1,\n"
                         "remove,,buy a dog,,\n")
    check_review(moves, result, actions=["hit the ball", "buy a dog"])  # spelling is normalised
    with pytest.raises(ValueError, match=r"move or remove actions that no tuple of this build has: "
                                         r"\['buy a dog'\]"):
        check_review(moves, result, actions=["hit the ball"])
