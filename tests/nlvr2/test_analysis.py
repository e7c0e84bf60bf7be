"""The figures of §4-§5 on hand-made examples: agreement, human performance, the hash
files and content leakage of images the build has (the collection half hands them over)."""
import json
import math
import os

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to
from PIL import Image

from pipelines.nlvr2.analysis import (Agreement, ImageLeakage, agreement_figures,
                                      human_performance, label_counts, worker_judgements)
from pipelines.nlvr2.compat import subset_keys
from pipelines.nlvr2.records import Example
from pipelines.nlvr2.release import HashImages
from pipelines.nlvr2.tables import sentence_row, set_row
from tests.beam_testing import local_test_pipeline
from transforms.core.stage import MAIN, REJECTS
from transforms.crowd.agreement import fleiss_kappa, krippendorff_alpha


def example(split="dev", set_id=0, pair=0, sentence_id=0, label=True, extra=(), writer="w",
            left_url="http://l", right_url="http://r", **more):
    text = "True" if label else "False"
    return Example(split=split, set_id=set_id, pair=pair, sentence_id=sentence_id,
                   sentence="A dog.", left_url=left_url, right_url=right_url, writer=writer,
                   validation=(("v", text),), label=label, synset="dog", query="dog0",
                   extra_validations=tuple(extra), **more)


def test_agreement_figures_equal_the_library_measures():
    histogram = [((5, 0), 3), ((0, 5), 2), ((4, 1), 1), ((3, 1), 1), ((1, 0), 4)]
    figures = agreement_figures(histogram, raters=5)
    five = [[5, 0]] * 3 + [[0, 5]] * 2 + [[4, 1]]
    assert figures["examples"] == 11 and figures["examples_with_all_labels"] == 6
    assert figures["examples_by_labels"] == {"1": 4, "4": 1, "5": 6}
    assert figures["fleiss_kappa"] == pytest.approx(fleiss_kappa(five))
    data = np.array([[1, 1, 1, 1, 1]] * 3 + [[0, 0, 0, 0, 0]] * 2 + [[1, 1, 1, 1, 0]]
                    + [[1, 1, 1, 0, math.nan]], dtype=float).T
    assert figures["krippendorff_alpha"] == pytest.approx(krippendorff_alpha(data))


def test_agreement_transform_counts_labels():
    xs = [example(extra=[("a", "True"), ("b", "True"), ("c", "True"), ("d", "False")]),
          example(label=False, extra=[("a", "False")] * 4)]
    assert label_counts(xs[0]) == (4, 1) and label_counts(xs[1]) == (0, 5)
    with local_test_pipeline() as p:
        out = p | beam.Create(xs) | Agreement("after_rules", 5)
        assert_that(out | beam.Map(lambda r: (r["when"], r["examples_with_all_labels"])),
                    equal_to([("after_rules", 2)]))


def test_human_performance_excludes_the_writer_and_small_workers():
    xs = [example(writer="a", extra=[("a", "False"), ("b", "True"), ("c", "False")]),
          example(writer="z", extra=[("a", "True"), ("b", "True"), ("c", "True")]),
          example(writer="z", label=False, extra=[("a", "True"), ("b", "False")])]
    rows = {}
    for x in xs:
        for key, (c, n) in worker_judgements(x):
            old = rows.get(key, (0, 0))
            rows[key] = (old[0] + c, old[1] + n)
    # a: own sentence excluded -> 2 judgements, 1 right; b: 3 of 3; c: 1 of 2
    assert rows == {("dev", "a"): (1, 2), ("dev", "b"): (3, 3), ("dev", "c"): (1, 2)}
    figures = human_performance(sorted(rows.items()), min_judgements=2)["dev"]
    assert figures["workers"] == 3 and figures["workers_counted"] == 3
    assert figures["mean"] == pytest.approx(100 * (0.5 + 1 + 0.5) / 3)
    assert figures["sd"] == pytest.approx(np.std([50, 100, 50]))
    assert human_performance(sorted(rows.items()), 3)["dev"]["workers_counted"] == 1


def test_sets_sentences_and_subsets_rows():
    xs = [example(pair=p, sentence_id=s, label=(p < 2) == (s == 0), left_url=f"l{p}",
                  right_url=f"r{p}") for p in range(4) for s in range(2)]
    s = set_row(("dev", 0), xs, "public")
    assert (s["pairs"], s["left_urls"], s["examples"], s["sentences"]) == (
        [0, 1, 2, 3], ["l0", "l1", "l2", "l3"], 8, 2)
    g = sentence_row(("dev", 0, 1), [x for x in xs if x.sentence_id == 1], "public")
    assert (g["group"], g["labels"], g["true_examples"]) == ("dev-0-1", [0, 0, 1, 1], 2)
    both = [example(label=True), example(sentence_id=1, label=False)]
    assert [f for f, _ in subset_keys((("dev", "http://l", "http://r"), both))] == [
        "balanced/balanced_dev.json"] * 2
    assert list(subset_keys((("dev", "l", "r"), both[:1]))) == []


def test_hash_files_and_content_leakage_of_local_images(tmp_path):
    rng = np.random.default_rng(0)
    pixels = (rng.random((64, 64, 3)) * 255).astype("uint8")
    same_a, same_b, other = tmp_path / "a.png", tmp_path / "b.png", tmp_path / "c.png"
    Image.fromarray(pixels).save(same_a)
    Image.fromarray(pixels).save(same_b)       # the same content under another name
    Image.fromarray(255 - pixels).save(other)
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not an image")
    xs = [example("dev", 0, 0, left_image=str(same_a), right_image=str(other)),
          example("test1", 0, 1, left_image=str(same_b), right_image=str(broken))]
    staging = str(tmp_path / "staging")
    with local_test_pipeline() as p:
        hashed = p | beam.Create(xs) | HashImages(staging)
        leak = (hashed[MAIN] | beam.MapTuple(lambda split, _, digest, set_id: (digest, split, set_id))
                | ImageLeakage("ahash"))
        assert_that(leak | beam.Map(lambda r: (r["in_several_splits"], r["by_split_pair"])),
                    equal_to([(1, {"dev|test1": 1})]), label="leak")
        assert_that(hashed[REJECTS] | beam.Map(lambda r: (r.reason, r.item_id)),
                    equal_to([("unreadable_image", "test1-0-1-img1.png")]), label="rejects")
    dev = json.load(open(os.path.join(staging, "compat", "hashes", "dev_hashes.json")))
    test1 = json.load(open(os.path.join(staging, "compat", "hashes", "test1_hashes.json")))
    assert sorted(dev) == ["dev-0-0-img0.png", "dev-0-0-img1.png"]
    assert list(test1) == ["test1-0-1-img0.png"]
    assert test1["test1-0-1-img0.png"] == dev["dev-0-0-img0.png"] != dev["dev-0-0-img1.png"]
    assert all(len(h) == 16 and int(h, 16) >= 0 for h in dev.values())
