"""FG's stage rules on hand-made inputs: the similar-set merge, the coarse test by rank,
CLIPScore against a hand computation, the filters and the best pick (a caption with no
surviving candidate stays unchanged), the user's files joined with rejects."""
import json
import math

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.fg import reasons
from pipelines.fg.coarse import FINE, DetectCoarse, own_image_ranks
from pipelines.fg.filetexts import JoinFileTexts
from pipelines.fg.records import Candidate, Caption
from pipelines.fg.renovate import ClipScoreFilter, PickBest
from schemas.records import ImageEmbedding
from pipelines.fg.similar import cosine_of_distance, merge_similar, text_ranking
from transforms.core.stage import MAIN, REJECTS, stage_pardo
from transforms.image.clipscore import PREFIX, WEIGHT, clipscore, with_prefix
from transforms.image.encoders import EncoderSpec
from transforms.image.text_encoders import PALETTE, ThumbnailTextEncoder, nearest_colour
from tests.beam_testing import local_test_pipeline


# --- F5: the similar set ---------------------------------------------------------------

def test_interleave_alternates_image_and_text_neighbours_without_the_target_or_repeats():
    by_image = [(0.9, "a"), (0.8, "b"), (0.7, "c")]
    by_text = [(0.3, "b"), (0.29, "t"), (0.2, "x"), (0.1, "u")]
    # n=0: a (image), b (text); n=1: b again (skipped), t (the target: skipped); n=2: c, x
    assert merge_similar("t", by_image, by_text, 5, "interleave") == [
        ("t", "target"), ("a", "image"), ("b", "text"), ("c", "image"), ("x", "text")]
    assert merge_similar("t", by_image, by_text, 5, "image_first") == [
        ("t", "target"), ("a", "image"), ("b", "image"), ("c", "image"), ("x", "text")]
    assert merge_similar("t", by_image[:1], by_text, 4, "interleave") == [
        ("t", "target"), ("a", "image"), ("b", "text"), ("x", "text")]


def test_interleave_and_image_first_differ_when_both_lists_are_long():
    by_image = [(0.9, f"i{n}") for n in range(10)]
    by_text = [(0.3, f"x{n}") for n in range(10)]
    inter = [i for i, _ in merge_similar("t", by_image, by_text, 10, "interleave")]
    first = [i for i, _ in merge_similar("t", by_image, by_text, 10, "image_first")]
    assert inter == ["t", "i0", "x0", "i1", "x1", "i2", "x2", "i3", "x3", "i4"]
    assert first == ["t"] + [f"i{n}" for n in range(9)]


def test_text_neighbours_of_five_captions_merge_by_best_rank_then_cosine():
    merged = text_ranking([[(0.30, "a"), (0.20, "b")], [(0.35, "b"), (0.25, "c")], [(0.31, "c")]])
    # a, b and c are all first for some caption: best cosine breaks the tie
    assert [i for _, i in merged] == ["b", "c", "a"]
    assert dict((i, c) for c, i in merged)["b"] == 0.35


def test_cosine_of_unit_vectors_from_their_distance():
    a, b = np.array([1.0, 0.0]), np.array([0.6, 0.8])
    assert cosine_of_distance(float(np.linalg.norm(a - b))) == pytest.approx(0.6)


# --- F7: coarse by rank ----------------------------------------------------------------

def test_rank_of_the_own_image_counts_ties_against_it():
    ids = ["own", "other", "far"]
    matrix = np.array([[1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)
    texts = np.array([[1, 0], [0.6, 0.8], [0, 1], [0.6, 0.8]], dtype=np.float32)
    ranks = own_image_ranks(texts, ["own", "own", "own", "other"], ids, matrix)
    # text 0 picks "own" first; texts 1 and 2 score both others at least as high
    assert ranks[:3] == [1, 3, 3]
    assert ranks[3] == 1
    tie = own_image_ranks(np.array([[0, 1]], np.float32), ["own"], ["own", "twin"],
                          np.array([[1, 0], [1, 0]], np.float32))
    assert tie == [2]   # both score 0: the text does not single its image out


def test_ranks_do_not_depend_on_how_captions_are_batched():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(300, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = [f"i{n}" for n in range(300)]
    texts = matrix[:40] + 0.05 * rng.normal(size=(40, 16)).astype(np.float32)
    owns = ids[:40]
    together = own_image_ranks(texts, owns, ids, matrix)
    one_by_one = [own_image_ranks(texts[n:n + 1], owns[n:n + 1], ids, matrix)[0] for n in range(40)]
    assert together == one_by_one
    exact = [1 + int(np.sum((matrix.astype(float) @ t.astype(float) >= matrix[n].astype(float) @ t.astype(float))
                            & (np.arange(300) != n))) for n, t in enumerate(texts)]
    assert together == exact


def _ranks_one_caption_at_a_time(texts, owns, ids, matrix):
    """The coarse test as it was before issue 28 (one caption at a time against the whole
    pool, a float64 copy of every near row): the reference the block-wise count keeps."""
    tol, tie = 1e-4, 1e-6
    exact = lambda rows, text: np.einsum("ij,j->i", rows.astype(np.float64), text.astype(np.float64))  # noqa: E731
    where = {i: n for n, i in enumerate(ids)}
    fast = matrix @ texts.T
    ranks = []
    for col, own in enumerate(owns):
        own_row = where[own]
        own_score = float(exact(matrix[own_row:own_row + 1], texts[col])[0])
        column = fast[:, col]
        near = np.flatnonzero(np.abs(column - own_score) <= tol)
        near = near[near != own_row]
        near_count = int((exact(matrix[near], texts[col]) >= own_score - tie).sum()) if len(near) else 0
        ranks.append(1 + int((column > own_score + tol).sum()) + near_count)
    return ranks


def test_block_wise_ranks_are_the_one_caption_at_a_time_ranks_with_ties_and_near_ties():
    """Duplicated images, a text every image ties with (no colour word: the thumbnail
    stand-in's constant vector), images a hair from the own score, and one text vector
    for captions of different images (scored once); the pool in parts of any size adds
    up to the same ranks."""
    from pipelines.fg import coarse
    rng = np.random.default_rng(5)
    matrix = rng.normal(size=(500, 24)).astype(np.float32)
    matrix -= matrix.mean(axis=1, keepdims=True)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix[100:140] = matrix[0]                                   # 40 twins of image 0
    nudged = matrix[1] + rng.normal(scale=2e-6, size=(30, 24)).astype(np.float32)
    matrix[200:230] = nudged / np.linalg.norm(nudged, axis=1, keepdims=True)
    ids = [f"i{n:03d}" for n in range(500)]
    noisy = matrix[:60] + 0.05 * rng.normal(size=(60, 24)).astype(np.float32)
    texts = np.concatenate([noisy,
                            np.full((5, 24), 1 / np.sqrt(24), np.float32),   # ties with every image
                            matrix[[0, 1, 100, 200]],
                            noisy[:3],                                    # one vector, other own images
                            np.repeat(noisy[1:2], 6, axis=0)])            # owns a hair apart (the nudged)
    owns = ids[:60] + ids[:5] + [ids[0], ids[1], ids[100], ids[200]] + ids[3:6] + ids[200:206]
    reference = _ranks_one_caption_at_a_time(texts, owns, ids, matrix)
    assert own_image_ranks(texts, owns, ids, matrix) == reference
    assert max(reference) > 400 and reference.count(1) > 10       # the data exercise both ends
    scores = coarse.own_scores(texts, matrix[[ids.index(o) for o in owns]])
    for cut in (1, 7, 128, 499):
        parts = sum(coarse.count_at_least_own(texts, owns, scores, ids[lo:lo + cut], matrix[lo:lo + cut])
                    for lo in range(0, 500, cut))
        assert [1 + int(n) for n in parts] == reference, cut


def test_detect_coarse_rejects_fine_grained_captions_with_a_reason(tmp_path):
    from transforms.vectors.vector_files import WriteVectorFiles
    pool = [ImageEmbedding("a", "a.jpg", "", np.array([1.0, 0.0], np.float32)),
            ImageEmbedding("b", "b.jpg", "", np.array([0.0, 1.0], np.float32))]
    captions = [Caption("a", 0, "fine", np.array([1.0, 0.0], np.float32)),
                Caption("a", 1, "coarse", np.array([0.0, 1.0], np.float32))]
    with local_test_pipeline() as p:
        pool_files = p | "Pool" >> beam.Create(pool) | WriteVectorFiles(str(tmp_path / "pool"))
        images = p | "Images" >> beam.Create([(e.image_id, e.embedding) for e in pool])
        out = (p | beam.Create([captions])
               | stage_pardo(DetectCoarse(), beam.pvalue.AsList(pool_files), beam.pvalue.AsDict(images),
                             outputs=(FINE,)))
        assert_that(out[MAIN] | "K" >> beam.Map(lambda c: (c.key, c.rank)), equal_to([("a#1", 2)]))
        assert_that(out[FINE] | "F" >> beam.Map(lambda c: c.key), equal_to(["a#0"]), label="fine")
        assert_that(out[REJECTS] | "R" >> beam.Map(lambda r: (r.stage, r.reason, r.item_id, r.detail)),
                    equal_to([("coarse", reasons.NOT_COARSE, "a#0",
                               "own image ranked 1 of 2: fine-grained, kept as is")]), label="rejects")


# --- CLIPScore ---------------------------------------------------------------------------

def test_clipscore_is_hessels_formula():
    image = np.array([3.0, 4.0]) / 5.0
    text = np.array([1.0, 0.0])
    assert clipscore(image, text) == pytest.approx(2.5 * 0.6)
    assert clipscore(image, -text) == 0.0        # w * max(cos, 0)
    both = clipscore(np.stack([image, image]), np.stack([text, -text]))
    assert both.tolist() == pytest.approx([1.5, 0.0])
    assert WEIGHT == 2.5 and PREFIX == "A photo depicts "
    assert with_prefix("a dog.") == "A photo depicts a dog."


def test_the_thumbnail_text_side_scores_the_named_colour():
    encoder = ThumbnailTextEncoder(4)
    red = np.zeros((4, 4, 3), np.float32) + PALETTE["red"]
    flat = red.reshape(-1) - red.mean()
    image = flat / np.linalg.norm(flat)
    red_text, blue_text, plain = encoder.encode(["a red car", "a blue car", "a car"])
    assert float(image @ red_text) == pytest.approx(1.0, abs=1e-6)
    assert float(image @ blue_text) < float(image @ red_text)
    assert float(image @ plain) == pytest.approx(0.0, abs=1e-6)
    assert nearest_colour((200, 30, 50)) == "red"


# --- F11/F14: filters and pick ----------------------------------------------------------

def _candidate(index, template, noun, detail, merged="", merged_score=None, original="a car"):
    return Candidate("img", index, original, 0.0, template, noun, "the color of the car",
                     detail=detail, merged=merged, merged_score=merged_score)


def test_the_filter_keeps_only_texts_scoring_above_the_original():
    image = np.zeros((16, 16, 3), np.float32) + PALETTE["red"]
    flat = image.reshape(-1) - image.mean()
    vector = (flat / np.linalg.norm(flat)).astype(np.float32)
    spec = EncoderSpec(kind="thumbnail", model_name="thumbnail-16", pretrained="none", device="cpu")
    red = _candidate(0, 4, "car", "the color of the car is red")
    blue = _candidate(0, 4, "car", "the color of the car is blue")
    none = _candidate(1, 1, "", "it is")   # no colour word: cosine 0 = the original's 0: a tie
    with local_test_pipeline() as p:
        images = p | "Images" >> beam.Create([("img", vector)])
        out = (p | beam.Create([[red, blue, none]])
               | stage_pardo(ClipScoreFilter("filter1", spec, PREFIX, 2.5, False, merged=False),
                             beam.pvalue.AsDict(images)))
        assert_that(out[MAIN] | "D" >> beam.Map(lambda c: (c.detail, round(c.detail_score, 4))),
                    equal_to([("the color of the car is red", 2.5)]))
        assert_that(out[REJECTS] | "R" >> beam.Map(lambda r: r.reason),
                    equal_to([reasons.CLIPSCORE_NOT_HIGHER] * 2), label="rejects")


def test_pick_takes_the_highest_score_and_a_caption_without_survivors_stays_unchanged():
    coarse = [Caption("img", 0, "a car"), Caption("img", 1, "a road")]
    survivors = [_candidate(0, 3, "car", "d1", "a shiny car", 1.2),
                 _candidate(0, 4, "car", "d2", "a red car", 1.9),
                 _candidate(0, 1, "", "d3", "a car at night", 1.9 - 1e-9),
                 _candidate(0, 2, "", "d4", "a red car with a road", 1.9)]   # equal score, longer
    with local_test_pipeline() as p:
        keyed = {"caption": p | "C" >> beam.Create([(c.key, c) for c in coarse]),
                 "candidates": p | "S" >> beam.Create([(c.key, c) for c in survivors])}
        out = keyed | beam.CoGroupByKey() | stage_pardo(PickBest())
        assert_that(out[MAIN] | "P" >> beam.Map(lambda c: (c.key, c.merged)), equal_to([("img#0", "a red car")]))
        assert_that(out[REJECTS] | "R" >> beam.Map(lambda r: (r.level, r.reason, r.item_id)),
                    equal_to([("caption", reasons.NO_CANDIDATE, "img#1"),
                              ("candidate", reasons.NOT_BEST, "img#0/t3/car"),
                              ("candidate", reasons.NOT_BEST, "img#0/t1/-"),
                              ("candidate", reasons.NOT_BEST, "img#0/t2/-")]), label="rejects")


# --- the user's files --------------------------------------------------------------------

def test_a_details_file_is_joined_by_prompt_with_line_rejects(tmp_path):
    path = tmp_path / "details.jsonl"
    lines = [{"image_id": "img", "caption_index": 0, "prompt": "The color of the car", "noun": "car",
              "detail": "the color of the car is red"},
             {"image_id": "img", "caption_index": 0, "prompt": "the color of the car", "noun": "car",
              "detail": "a second answer"},
             {"image_id": "img", "caption_index": 4, "prompt": "it is", "detail": "it is late"},
             {"image_id": "img", "caption_index": "0", "prompt": "x", "detail": "y"}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n")
    wanted = _candidate(0, 4, "car", "")
    missing = Candidate("img", 2, "a car", 0.0, 1, "", "it is")
    with local_test_pipeline() as p:
        out = p | beam.Create([wanted, missing]) | JoinFileTexts("details", str(path), "detail",
                                                                 reasons.NO_DETAIL)
        assert_that(out[MAIN] | "D" >> beam.Map(lambda c: (c.key, c.detail)),
                    equal_to([("img#0", "the color of the car is red")]))
        assert_that(out[REJECTS] | "R" >> beam.Map(lambda r: (r.level, r.reason, r.line)),
                    equal_to([("line", reasons.DUPLICATE_LINE, 2), ("line", reasons.UNKNOWN_PROMPT, 3),
                              ("line", reasons.BAD_FIELD, 4), ("line", reasons.BAD_JSON, 5),
                              ("candidate", reasons.NO_DETAIL, 0)]), label="rejects")


def test_no_nan_in_hand_scores():
    assert not math.isnan(float(clipscore(np.array([1.0, 0.0]), np.array([0.0, 1.0]))))


# --- config and precomputed text vectors ---------------------------------------------------

def test_a_model_kind_without_its_directory_is_a_clear_config_error():
    from pipelines.config import load_config
    from pipelines.fg.benchmark import BENCHMARK
    from transforms.core.errors import ConfigError
    with pytest.raises(ConfigError, match="details.model_dir"):
        load_config(BENCHMARK.config_path("sample"), ["details.kind=model"], BENCHMARK.config_type)
    with pytest.raises(ConfigError, match="merge.model_dir"):
        load_config(BENCHMARK.config_path("sample"), ["merge.kind=gpt2"], BENCHMARK.config_type)
    with pytest.raises(ConfigError, match="inputs.details"):
        load_config(BENCHMARK.config_path("paper"), ["inputs.captions=a", "inputs.images=b",
                                                     "inputs.pool=c"], BENCHMARK.config_type)


def test_precomputed_text_vectors_replace_the_retrieval_encoding_but_not_the_clipscore():
    from pipelines.fg.renovate import EncodeCaptions
    spec = EncoderSpec(kind="thumbnail", model_name="thumbnail-16", pretrained="none", device="cpu")
    image = ThumbnailTextEncoder().encode(["red"])[0]       # an image vector that is "red"
    given = np.zeros(768, np.float32)
    given[0] = 1.0
    captions = [Caption("img", 0, "a red car"), Caption("img", 1, "a car")]
    with local_test_pipeline() as p:
        images = p | "Images" >> beam.Create([("img", image)])
        vectors = p | "Vectors" >> beam.Create([("a red car", given)])
        out = (p | beam.Create([captions])
               | stage_pardo(EncodeCaptions(spec, PREFIX, 2.5), beam.pvalue.AsDict(images),
                             beam.pvalue.AsDict(vectors)))
        assert_that(out[MAIN] | beam.Map(lambda c: (c.index, float(c.embedding[0]), round(c.score, 4))),
                    equal_to([(0, 1.0, 2.5), (1, float(ThumbnailTextEncoder().encode(["a car"])[0][0]), 0.0)]))
