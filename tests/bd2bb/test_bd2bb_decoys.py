"""Decoy rules (BD2BB §4) on hand-built pools, the seeded order and its uniformity."""
import numpy as np

from pipelines.bd2bb.decoys import (build_pool, draws, position_uniformity, select_for_cluster,
                                    shuffle, target_seed)
from pipelines.bd2bb.records import LANGUAGE, TARGET, VISION, Codes


def unit(*xs):
    v = np.asarray(xs, np.float32)
    return v / np.linalg.norm(v)


def pool_of(rows):
    return build_pool([(key, text, cluster, codes, unit(*vec)) for key, text, cluster, codes, vec in rows])


# Cluster 0 holds the target "ride a horse"; cluster 1 is another topic.
ROWS = [
    ("t", "ride a horse", 0, Codes("ride", ("horse",)), (1, 0, 0)),
    # same cluster: vision candidates
    ("v_same_verb", "ride the pony", 0, Codes("ride", ("pony",)), (0, 1, 0)),      # shares ride: out
    ("v_far", "brush the horse", 0, Codes("brush", ("horse",)), (-1, 0.1, 0)),     # lowest cosine
    ("v_far2", "feed the horse", 0, Codes("feed", ("horse",)), (-1, 0.5, 0)),      # 2nd lowest
    ("v_near", "groom a horse", 0, Codes("groom", ("horse",)), (1, 0.2, 0)),       # high cosine
    ("v_code3", "watch and ride along", 0, Codes("watch", (), "ride", ()), (-1, 0, 0)),  # code3 = ride: out
    # other cluster: language candidates
    ("l_close", "ride a bike", 1, Codes("ride", ("bike",)), (1, 0.05, 0)),          # highest cosine
    ("l_noun", "sell my horse", 1, Codes("sell", ("horse",)), (1, 0.01, 0)),        # shares horse: out
    ("l_close2", "ride a wave", 1, Codes("ride", ("wave",)), (1, 0.3, 0)),         # 2nd highest
    ("l_far", "cut a cake", 1, Codes("cut", ("cake",)), (0, 0, 1)),
]


def select(pool, key="t", pool_size=50, seed=0):
    rows = np.array([pool.row_of[key]])
    seeds = np.array([target_seed(seed, key)], np.uint64)
    lan, vis = select_for_cluster(pool, int(pool.clusters[rows[0]]), rows, seeds, pool_size)
    return ([pool.keys[r] if r >= 0 else None for r in lan[0]],
            [pool.keys[r] if r >= 0 else None for r in vis[0]])


def test_language_decoys_are_the_most_similar_other_topic_actions_without_shared_nouns():
    lan, _ = select(pool_of(ROWS))
    assert lan == ["l_close", "l_close2"]


def test_vision_decoys_are_the_least_similar_same_topic_actions_without_shared_verbs():
    _, vis = select(pool_of(ROWS))
    assert vis == ["v_far", "v_far2"]


def test_a_compound_noun_counts_word_by_word():
    rows = ROWS + [("l_compound", "ride the horse carriage", 1, Codes("ride", ("horse carriage",)),
                    (1, 0, 0.001))]
    lan, _ = select(pool_of(rows))
    assert "l_compound" not in lan


def test_missing_decoys_are_reported_not_invented():
    rows = [r for r in ROWS if not r[0].startswith("v_far")]        # leaves v_near only
    lan, vis = select(pool_of(rows))
    assert vis == ["v_near", None]
    only_target_cluster = pool_of([r for r in ROWS if r[2] == 0])
    lan, _ = select(only_target_cluster)
    assert lan == [None, None]


def test_draws_are_seeded_per_target_and_independent_of_batch():
    pool = pool_of(ROWS)
    a = draws(np.array([target_seed(0, "x"), target_seed(0, "y")], np.uint64), 7, 5)
    b = draws(np.array([target_seed(0, "y")], np.uint64), 7, 5)
    assert (a[1] == b[0]).all() and a.min() >= 0 and a.max() < 5
    assert not (draws(np.array([target_seed(1, "y")], np.uint64), 7, 5) == b).all()
    # a small pool: language candidates still come from other clusters only
    rows = np.array([pool.row_of["t"]] * 3)
    lan, _ = select_for_cluster(pool, 0, rows, np.array([1, 2, 3], np.uint64), pool_size=3)
    assert all(pool.clusters[r] == 1 for r in lan.ravel() if r >= 0)


def test_pool_rows_are_grouped_by_cluster_regardless_of_input_order():
    shuffled = list(reversed(ROWS))
    a, b = pool_of(ROWS), pool_of(shuffled)
    assert a.keys == b.keys
    assert a.start == {0: 0, 1: 6} and a.size == {0: 6, 1: 4}


def test_shuffle_puts_the_target_at_the_label_and_positions_are_uniform():
    endings, types, label = shuffle(0, "s1", "T", ["L1", "L2"], ["V1", "V2"])
    assert endings[label] == "T" and types[label] == TARGET
    assert sorted(types) == sorted([TARGET, LANGUAGE, LANGUAGE, VISION, VISION])
    assert shuffle(0, "s1", "T", ["L1", "L2"], ["V1", "V2"]) == (endings, types, label)
    labels = [shuffle(0, f"s{i}", "T", ["L1", "L2"], ["V1", "V2"])[2] for i in range(5000)]
    report = position_uniformity(labels)
    assert report["n"] == 5000 and min(report["counts"]) > 900
    assert report["chi2_p"] > 0.001
    skewed = position_uniformity([0] * 100 + [1] * 10)
    assert skewed["chi2_p"] < 1e-6


def test_vectorised_selection_matches_a_brute_force_reference():
    rng = np.random.default_rng(3)
    n, dim = 300, 8
    rows = []
    for i in range(n):
        codes = Codes(f"v{rng.integers(6)}", (f"n{rng.integers(10)}",), f"v{rng.integers(6)}",
                      (f"n{rng.integers(10)}",))
        rows.append((f"a{i:03d}", f"text {i}", int(rng.integers(3)), codes, rng.normal(size=dim)))
    pool = pool_of(rows)
    cluster = 1
    targets = np.flatnonzero(pool.clusters == cluster)
    seeds = np.array([target_seed(0, pool.keys[t]) for t in targets], np.uint64)
    lan, vis = select_for_cluster(pool, cluster, targets, seeds, pool_size=120)
    from pipelines.bd2bb.argument_codes import nouns_of, verbs_of
    codes_of = {r[0]: r[3] for r in rows}
    n_rows, start, size = len(pool), pool.start[cluster], pool.size[cluster]
    for b, t in enumerate(targets):   # a slow reference, one target at a time
        emb = pool.embeddings
        cand = draws(seeds[b:b + 1], 120, n_rows - size)[0]
        cand = cand + (cand >= start) * size
        ok = [c for c in dict.fromkeys(cand.tolist())
              if not nouns_of(codes_of[pool.keys[c]]) & nouns_of(codes_of[pool.keys[t]])]
        ok.sort(key=lambda c: -float(emb[t] @ emb[c]))
        assert lan[b].tolist() == (ok[:2] + [-1, -1])[:2]
        same = [c for c in range(start, start + size) if c != t
                and not verbs_of(codes_of[pool.keys[c]]) & verbs_of(codes_of[pool.keys[t]])]
        assert size - 1 <= 120, "the whole cluster is the vision pool here"
        same.sort(key=lambda c: float(emb[t] @ emb[c]))
        assert vis[b].tolist() == (same[:2] + [-1, -1])[:2]


def test_vision_draws_stay_in_the_cluster_when_it_is_larger_than_the_pool():
    rng = np.random.default_rng(5)
    rows = [(f"a{i:03d}", f"text {i}", i % 2, Codes(f"v{i % 7}", (f"n{i}",)), rng.normal(size=4))
            for i in range(200)]
    pool = pool_of(rows)
    targets = np.flatnonzero(pool.clusters == 0)
    seeds = np.array([target_seed(0, pool.keys[t]) for t in targets], np.uint64)
    _, vis = select_for_cluster(pool, 0, targets, seeds, pool_size=10)
    assert (vis >= 0).all()
    assert (pool.clusters[vis] == 0).all() and (vis != targets[:, None]).all()
    for t, decoys in zip(targets, vis):        # every verb id of target and decoy, not only the first
        target_verbs = set(pool.verbs[t].tolist()) - {-1}
        for d in decoys:
            assert not target_verbs & (set(pool.verbs[d].tolist()) - {-1})


# --- through Beam: the canonical spelling, no_decoys and the stage counters -----------------

def _datapoint(tuple_id, action, cluster, codes):
    from pipelines.bd2bb.records import BD2BBTuple, Datapoint
    return Datapoint(tuple=BD2BBTuple(tuple_id, "COCO_train2014_000000000001.jpg", "want to have fun",
                                      action, "w"), codes=codes, cluster=cluster)


def _beam_pool(datapoints, vectors):
    """The pipeline's pool entries: one per action key, in normalise_text spelling."""
    from transforms.text.tokens import normalise_text
    entries = {}
    for d in datapoints:
        entries.setdefault(d.tuple.action_key, (d.tuple.action_key, normalise_text(d.tuple.action),
                                                d.cluster, d.codes, unit(*vectors[d.tuple.action_key])))
    return list(entries.values())


def test_the_pool_file_holds_the_pool(tmp_path):
    from pipelines.bd2bb.decoys import read_pool, write_pool
    pool = pool_of(ROWS)
    write_pool(pool, str(tmp_path / "pool.npz"))
    again = read_pool(str(tmp_path / "pool.npz"))
    for name in ("keys", "texts", "row_of", "start", "size"):
        assert getattr(again, name) == getattr(pool, name), name
    for name in ("clusters", "embeddings", "verbs", "nouns"):
        assert np.array_equal(getattr(again, name), getattr(pool, name)) and \
            getattr(again, name).dtype == getattr(pool, name).dtype, name


def test_select_decoys_in_beam_rejects_no_decoys_and_counters_reconcile(tmp_path):
    """Cluster 0's actions all share the verb ride: no vision decoy exists, every target of
    it is a no_decoys reject. Cluster 1 gets its decoys; its targets are typed with
    capitals and double spaces, and the written endings must not show it."""
    import apache_beam as beam
    from apache_beam.testing.util import assert_that, equal_to

    from pipelines.bd2bb import reasons
    from pipelines.bd2bb.decoys import SelectDecoys
    from tests.beam_testing import local_test_pipeline
    from transforms.core.stage import MAIN, REJECTS, read_stage_counts
    riders = [_datapoint(f"r{i}", a, 0, Codes("ride", (n,))) for i, (a, n) in
              enumerate([("ride a horse", "horse"), ("ride the pony", "pony"), ("ride a camel", "camel")])]
    others = [_datapoint("c0", "Cut  The CAKE", 1, Codes("cut", ("cake",))),
              _datapoint("c1", "eat the pie", 1, Codes("eat", ("pie",))),
              _datapoint("c2", "Bake  bread", 1, Codes("bake", ("bread",))),
              _datapoint("c3", "serve the soup", 1, Codes("serve", ("soup",)))]
    points = riders + others
    vectors = {d.tuple.action_key: (1.0, 0.1 * i, 0.2 if d.cluster else 0.0) for i, d in enumerate(points)}
    pool = _beam_pool(points, vectors)
    p = local_test_pipeline()
    selected = ({"datapoints": p | "points" >> beam.Create(points), "pool": p | "pool" >> beam.Create(pool)}
                | SelectDecoys(seed=0, pool_size=40, scratch_dir=str(tmp_path / "scratch")))
    assert_that(selected[REJECTS] | "rejects" >> beam.Map(lambda r: (r.item_id, r.reason, r.stage, r.level)),
                equal_to([(d.tuple.tuple_id, reasons.NO_DECOYS, "decoys", "sample") for d in riders]),
                label="no_decoys rejects")

    def spelling(sample):
        target = sample.endings[sample.label]
        return (sample.sample_id, target, all(e == " ".join(e.lower().split()) for e in sample.endings))

    assert_that(selected[MAIN] | "spelling" >> beam.Map(spelling),
                equal_to([("c0", "cut the cake", True), ("c1", "eat the pie", True),
                          ("c2", "bake bread", True), ("c3", "serve the soup", True)]),
                label="one canonical spelling")
    result = p.run()
    result.wait_until_finish()
    counts = read_stage_counts(result)["decoys"]
    assert counts["sample.in"] == 7 and counts["sample.out"] == 4
    assert counts["sample.rejected.no_decoys"] == 3
    assert counts["sample.in"] == counts["sample.out"] + counts["sample.rejected.no_decoys"]
    assert not (tmp_path / "scratch").exists()   # the pool's files are gone once the decoys are chosen


def test_decoys_do_not_depend_on_how_targets_are_batched(tmp_path):
    """Targets of several clusters in one batch, or one at a time: the same samples."""
    from pipelines.bd2bb.decoys import _DecoysForBatch, write_pool
    rng = np.random.default_rng(4)
    verbs, nouns = ["ride", "cut", "eat", "bake", "serve", "wash"], ["horse", "cake", "pie", "bread", "soup", "car"]
    points = [_datapoint(f"t{n:02d}", f"{verbs[n % 6]} the {nouns[n // 6 % 6]} {n}", n % 3,
                         Codes(verbs[n % 6], (nouns[n // 6 % 6],))) for n in range(36)]
    pool = pool_of([(d.tuple.action_key, d.tuple.action, d.cluster, d.codes, tuple(rng.normal(size=3)))
                    for d in points])
    write_pool(pool, str(tmp_path / "pool.npz"))
    path = str(tmp_path / "pool.npz")

    def outcome(items):
        items = [getattr(x, "value", x) for x in items]     # a reject comes as a TaggedOutput
        return sorted((x.sample_id, x.endings, x.label) if hasattr(x, "endings") else (x.item_id, x.reason, "")
                      for x in items)
    together = outcome(_DecoysForBatch(0, 5).process(points, path))
    one_by_one = outcome(x for d in points for x in _DecoysForBatch(0, 5).process([d], path))
    assert together == one_by_one and len(together) == 36


def test_target_spelling_carries_no_signal(tmp_path):
    """The same target typed "Ride A  Horse" or "ride a horse" gives the same endings."""
    from pipelines.bd2bb.decoys import _DecoysForBatch, write_pool
    typed = [_datapoint("t", "Ride A  Horse", 0, Codes("ride", ("horse",)))]
    plain = [_datapoint("t", "ride a horse", 0, Codes("ride", ("horse",)))]
    pool = pool_of(ROWS[1:] + [(typed[0].tuple.action_key, "ride a horse", 0, Codes("ride", ("horse",)),
                                (1, 0, 0))])
    write_pool(pool, str(tmp_path / "pool.npz"))
    [a] = list(_DecoysForBatch(0, 50).process(typed, str(tmp_path / "pool.npz")))
    [b] = list(_DecoysForBatch(0, 50).process(plain, str(tmp_path / "pool.npz")))
    assert a.endings == b.endings and a.label == b.label
    assert a.endings[a.label] == "ride a horse"
    assert all(e == e.lower() and "  " not in e for e in a.endings)


def test_the_data_card_warns_when_target_positions_are_not_uniform(caplog):
    from pipelines.bd2bb.datacard import _positions_section
    fine = _positions_section(position_uniformity([0, 1, 2, 3, 4] * 40))
    assert "no evidence of bias" in fine["text"] and "WARNING" not in fine["text"]
    skewed = _positions_section(position_uniformity([0] * 100 + [1] * 10))
    assert "WARNING: not uniform" in skewed["text"]
