"""The rules of NLVR2's collection stages, one at a time (pure functions)."""
import pytest

from pipelines.config import from_dict, load_config
from pipelines.nlvr2.collection import reasons as why
from pipelines.nlvr2.collection.config import (CollectionConfig, PruningConfig, QueriesConfig,
                                               SearchConfig)
from pipelines.nlvr2.collection.image_sets import Image, ImageSet
from pipelines.nlvr2.collection.queries import plural, synset_queries
from pipelines.nlvr2.collection.rounds import (construct_set, judgement_check, pair_up, prune_round1,
                                               sentence_check)
from pipelines.nlvr2.collection.search import Drop, apply_caps, prune_query_sets
from pipelines.nlvr2.collection.splits import assign_splits, number_sets
from pipelines.nlvr2.collection.synsets import hypernym_table, select_synsets
from schemas import reasons
from transforms.core.errors import ConfigError
from transforms.crowd.answer_rows import RowProblem


def _set(query="two cups", rank=0, n=16):
    return ImageSet(query, rank, "cup", tuple(Image(i, f"u{rank}-{i}", f"/p/{rank}-{i}") for i in range(n)))


def _drops(items):
    return [(d.reason, d.level) for d in items if isinstance(d, Drop)]


# --- S1 --------------------------------------------------------------------------------

def test_release_synsets_are_124_with_57_animals():
    synsets = select_synsets([])
    assert len(synsets) == 124 and sum(s.animal for s in synsets) == 57
    assert {"acorn", "timber wolf", "beer bottle"} <= {s.name for s in synsets}


def test_unknown_synset_name_is_a_config_error():
    with pytest.raises(ConfigError, match="collection.synsets.names"):
        select_synsets(["no such thing"])


def test_naive_plurals_as_in_the_release():
    assert [plural(w) for w in ("gray wolf", "dough", "potato", "monastery", "box", "bus")] == \
        ["gray wolfs", "doughs", "potatos", "monasteries", "boxes", "buses"]


def test_table_1_heuristics_by_animal_and_object():
    cfg = QueriesConfig(quantity_words=["two", "some"], collective_nouns_animal=["herd of"],
                        collective_nouns_object=["stack of"], activities=["eating"])
    wolf, flute = select_synsets(["timber wolf", "flute"])
    wolf_queries = list(synset_queries(wolf, cfg, SearchConfig(), hypernym_table(), {}))
    assert {q.kind for q in wolf_queries} == {"quantity", "collective_noun", "activity"}
    assert "gray wolfs eating" in {q.text for q in wolf_queries}        # every synonym
    assert {q.text for q in wolf_queries if q.wide} >= {"two timber wolfs", "herd of timber wolfs"}
    assert "some timber wolfs" not in {q.text for q in wolf_queries if q.wide}
    flute_queries = list(synset_queries(flute, cfg, SearchConfig(), hypernym_table(),
                                        {"flute": ["piccolo"]}))
    kinds = {q.text: q.kind for q in flute_queries}
    assert kinds["flute woodwind"] == "hypernym" and kinds["flute piccolo"] == "similar_word"
    assert "activity" not in kinds.values() and "stack of flutes" in kinds


# --- S2, S3 ------------------------------------------------------------------------------

def test_search_stops_after_misses_in_a_row():
    results = [_set(rank=0), _set(rank=1, n=1), _set(rank=2, n=1), _set(rank=3)]
    out = list(apply_caps(results, 60, 30, 2))
    assert _drops(out) == [(why.NO_SIMILAR_IMAGES, ""), (why.NO_SIMILAR_IMAGES, ""),
                           (why.BEYOND_SEARCH_CAP, "")]


def test_search_caps_results_and_sets():
    results = [_set(rank=r) for r in range(10)]
    assert len([x for x in apply_caps(results, 60, 3, 5) if isinstance(x, ImageSet)]) == 3
    assert len([x for x in apply_caps(results, 4, 30, 5) if isinstance(x, ImageSet)]) == 4


def test_automatic_pruning_rules():
    first, second = _set(rank=0, n=9), _set(rank=1, n=12)
    images = list(second.images)
    images[1] = images[1]._replace(url=first.images[0].url)       # seen in the earlier set
    second = second._replace(images=tuple(images))

    def facts(path):
        if path.endswith("1-2"):
            raise OSError("missing")
        if path.endswith("1-3"):
            return "small", 199, 400
        return ("same" if path.endswith(("1-4", "1-5")) else path), 300, 300

    out = list(prune_query_sets([second, first], PruningConfig(), facts))
    assert _drops(out) == [(why.SEEN_IN_EARLIER_SET, "image"), (reasons.UNREADABLE_IMAGE, "image"),
                           (why.TOO_SMALL, "image"), (why.DUPLICATE_IN_SET, "image")]
    kept = [x for x in out if isinstance(x, ImageSet)]
    assert [len(s.images) for s in kept] == [9, 8]
    assert _drops(prune_query_sets([_set(n=7)], PruningConfig(), lambda p: (p, 300, 300))) == \
        [(why.TOO_FEW_IMAGES, "set")]


# --- S4, S5, S6 --------------------------------------------------------------------------

def test_round_1_removals_and_small_sets():
    image_set = _set(n=10)
    verdicts = {i: "keep" for i in range(10)}
    verdicts.update({0: "unloadable", 1: "inappropriate"})
    del verdicts[2]
    out = list(prune_round1(image_set, verdicts, PruningConfig()))
    assert _drops(out) == [(why.UNLOADABLE, "image"), (why.INAPPROPRIATE, "image"),
                           (why.UNANSWERED, "image"), (why.TOO_FEW_IMAGES, "set")]


def test_round_2_sorts_by_interest_then_similarity_and_keeps_8():
    image_set = _set(n=12)
    answers = {i: (i == 0, i >= 6) for i in range(12)}   # 0 a duplicate; 6-11 interesting
    out = list(construct_set(image_set, answers, PruningConfig()))
    kept = [x for x in out if isinstance(x, ImageSet)][0]
    assert [i.position for i in kept.images] == [6, 7, 8, 9, 10, 11, 1, 2]
    assert _drops(out).count((why.BEYOND_TOP_IMAGES, "image")) == 3
    dull = {i: (False, i < 2) for i in range(12)}
    assert _drops(construct_set(image_set, dull, PruningConfig()))[-1] == (why.TOO_FEW_INTERESTING, "set")


def test_pairs_are_seeded_and_cover_the_set():
    image_set = _set(n=8)
    paired = pair_up(image_set, 0)
    assert len(paired.pairs) == 4
    assert sorted(i.position for pair in paired.pairs for i in pair) == list(range(8))
    assert pair_up(image_set, 0) == paired
    assert any(pair_up(image_set, seed) != paired for seed in range(1, 5))


# --- answer rows ---------------------------------------------------------------------------

def test_writer_selection_must_be_two_distinct_pairs():
    check = sentence_check(4)
    tasks = {"s#0": True}
    ok = check({"task": "s#0", "writer": "1", "sentence": "x", "selected": [2, 0]}, tasks)
    assert ok == ("s#0", ("s#0", "1", "x", (0, 2)))
    for bad in ([0, 0], [1], [0, 4], "a,b", [0, 1, 2]):
        problem = check({"task": "s#0", "writer": "1", "sentence": "x", "selected": bad}, tasks)
        assert isinstance(problem, RowProblem) and problem.reason == why.BAD_SELECTION
    assert check({"task": "other", "selected": [0, 1]}, tasks).reason == why.UNKNOWN_ITEM


def test_judgement_rows():
    check = judgement_check(("True", "False"), per_worker=True)
    assert check({"example": "e", "worker": "7", "judgement": "True"}, {"e": True})[0] == ("e", "7")
    assert check({"example": "e", "worker": "7", "judgement": "report"}, {"e": True}).reason == why.BAD_ANSWER


# --- S9 ----------------------------------------------------------------------------------------

def test_splits_are_exact_and_seeded():
    keys = [f"q#{i}" for i in range(100)]
    splits = assign_splits(keys, 3, 0.2)
    counts = {name: list(splits.values()).count(name) for name in ("train", "dev", "test1", "test2")}
    assert counts["train"] == 80 and sorted(counts.values())[:3] in ([6, 7, 7], [6, 6, 8])
    assert assign_splits(reversed(keys), 3, 0.2) == splits
    assert assign_splits(keys, 4, 0.2) != splits


def test_set_ids():
    ids = number_sets([("dev", "b"), ("dev", "a"), ("train", "c"), ("dev", "a")], 0)
    assert sorted(v for (s, _), v in ids.items() if s == "dev") == [0, 1] and ids[("train", "c")] == 0


# --- config ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["paper", "sample"])
def test_configs_load(name, tmp_path):
    import yaml
    from pipelines.nlvr2.sample import CONFIG
    path = CONFIG.replace("sample.yaml", f"{name}.yaml")
    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f)
    assert raw["benchmark"] == "nlvr2"
    part = tmp_path / "collection.yaml"
    part.write_text(yaml.safe_dump(raw["collection"]), encoding="utf-8")
    cfg = load_config(str(part), [], CollectionConfig)
    assert cfg.pruning.set_images == 8 and cfg.search.set_size == 16


def test_config_rejects_unknown_keys_and_odd_sets():
    with pytest.raises(ConfigError, match="collection.search.nope"):
        from_dict(CollectionConfig, {"search": {"nope": 1}}, "collection.")
    with pytest.raises(ConfigError, match="set_images"):
        from_dict(CollectionConfig, {"pruning": {"set_images": 7, "min_set_images": 8}}, "collection.")


def test_stand_ins_are_declared():
    from pipelines.nlvr2.collection.collect import stand_ins
    cfg = from_dict(CollectionConfig, {}, "collection.")
    assert set(stand_ins(cfg)) == {"similar_words"} and "0.31" in stand_ins(cfg)["similar_words"]
    cfg = from_dict(CollectionConfig, {"queries": {"similar_words": {"enabled": False}},
                                       "search": {"local_similar": {"collection": "/x"}}}, "collection.")
    assert set(stand_ins(cfg)) == {"similar_images"}


@pytest.mark.parametrize("name", ["paper", "sample"])
def test_whole_configs_load_and_tie_the_extra_judgements(name):
    """The shipped configs load whole; S9's extra judgements and the rules' are one number."""
    from pipelines.nlvr2.benchmark import BENCHMARK
    from pipelines.nlvr2.config import Nlvr2Config
    path = BENCHMARK.config_path(name)
    cfg = load_config(path, [], Nlvr2Config)
    assert cfg.rules.enforce and cfg.collection.splits.extra_judgements == cfg.rules.extra_judgements == 4
    with pytest.raises(ConfigError, match="collection.splits.extra_judgements"):
        load_config(path, ["collection.splits.extra_judgements=3"], Nlvr2Config)
