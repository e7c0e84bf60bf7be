"""Language statistics (ImageCoDe §4.2, Table 4): definitions, Beam combine, public data."""
import json

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to
from spacy.tokens import Doc

from tests.beam_testing import local_test_pipeline
from tests.paths import REALDATA as ALL_REALDATA
from transforms.text import stats as text_stats
from transforms.text.stats import (LanguageStatsPerSplit, ParserNotInstalled, doc_depths,
                                   language_stats, load_parser, tokenizer_nlp, tree_depth)

REALDATA = ALL_REALDATA / "imagecode"


@pytest.fixture(scope="module")
def nlp():
    return tokenizer_nlp()


def parsed(nlp, words, heads, deps, sent_starts):
    """A hand-built parsed Doc (heads are absolute token indices)."""
    return Doc(nlp.vocab, words=words, heads=heads, deps=deps, sent_starts=sent_starts)


# --- tokens, sentences, types ------------------------------------------------------------

def test_counts_tokens_sentences_and_lowercased_word_types(nlp):
    stats = language_stats(["The dog runs.  The DOG sleeps!", "A cat."], nlp)
    # Tokens skip the whitespace token of the double space: 4 + 4 + 3.
    assert stats["descriptions"] == 2
    assert stats["mean_tokens"] == pytest.approx(11 / 2)
    assert stats["mean_sentences"] == pytest.approx(3 / 2)
    # Lower-cased, punctuation and whitespace left out.
    assert stats["word_types"] == len({"the", "dog", "runs", "sleeps", "a", "cat"})
    assert stats["share_3plus_sentences"] == 0
    assert stats["mean_tree_depth"] is None  # no parser: not computed, not faked


def test_whitespace_only_tail_is_not_a_sentence(nlp):
    assert language_stats(["Left side.\n\n"], nlp)["mean_sentences"] == 1


def test_empty_split(nlp):
    stats = language_stats([], nlp)
    assert stats["descriptions"] == 0 and stats["mean_tokens"] is None


# --- tree depth --------------------------------------------------------------------------

def test_depth_counts_tokens_from_root_to_deepest_leaf(nlp):
    # "A dog runs ." : runs <- dog <- A, so the root has depth 1 and the tree depth 3.
    doc = parsed(nlp, ["A", "dog", "runs", "."], heads=[1, 2, 2, 2],
                 deps=["det", "nsubj", "ROOT", "punct"], sent_starts=[1, 0, 0, 0])
    assert tree_depth(doc[:]) == 3


def test_single_word_sentence_has_depth_one(nlp):
    doc = parsed(nlp, ["Stop"], heads=[0], deps=["ROOT"], sent_starts=[1])
    assert tree_depth(doc[:]) == 1


def test_depth_per_sentence_and_mean_with_a_parser(nlp):
    # Sentence 1: "The big dog sleeps ."      big -> dog -> sleeps: depth 3.
    # Sentence 2: "It left the very red house ." very -> red -> house -> left: depth 4.
    # Sentence 3: "Yes": depth 1.
    words = ["The", "big", "dog", "sleeps", ".", "It", "left", "the", "very", "red", "house",
             ".", "Yes"]
    heads = [2, 2, 3, 3, 3, 6, 6, 10, 9, 10, 6, 6, 12]
    deps = ["det", "amod", "nsubj", "ROOT", "punct", "nsubj", "ROOT", "det", "advmod", "amod",
            "dobj", "punct", "ROOT"]
    starts = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1]
    doc = parsed(nlp, words, heads, deps, starts)
    assert doc_depths(doc) == [3, 4, 1]

    parser = {"any text": doc}.get  # a text -> parsed Doc callable stands in for spaCy
    stats = language_stats(["any text"], nlp, parser=parser)
    assert stats["mean_tree_depth"] == pytest.approx((3 + 4 + 1) / 3)


# --- the parser setting --------------------------------------------------------------------

def test_missing_parser_is_a_clear_error_naming_the_key():
    with pytest.raises(ParserNotInstalled, match=r"stats\.parser: spaCy model "
                                                 r"'en_core_web_sm' is not installed"):
        load_parser("en_core_web_sm")
    with pytest.raises(ParserNotInstalled, match=r"stats\.parser"):
        LanguageStatsPerSplit(parser_name="en_core_web_sm")


def test_no_parser_loads_nothing():
    assert load_parser(None) is None


def test_parser_from_a_saved_pipeline_path(tmp_path, nlp):
    nlp.to_disk(tmp_path / "pipe")
    loaded = load_parser(str(tmp_path / "pipe"))
    assert loaded.pipe_names == ["sentencizer"]


# --- Beam ------------------------------------------------------------------------------

@pytest.mark.parametrize("options", [{}, {"direct_running_mode": "multi_processing",
                                           "direct_num_workers": 2}])
@pytest.mark.slow
def test_beam_per_split_matches_the_pure_function(nlp, options):
    train = ["The dog runs.", "Two cats. One sleeps. The other eats.", "A red car"]
    valid = ["Nothing here."]
    expected = [("train", language_stats(train, nlp)), ("valid", language_stats(valid, nlp))]
    pairs = [("train", t) for t in train] + [("valid", t) for t in valid]
    with local_test_pipeline(**options) as p:
        out = p | beam.Create(pairs, reshuffle=False) | LanguageStatsPerSplit()
        assert_that(out, equal_to(expected))


def test_combine_fn_merges_partial_accumulators(nlp):
    fn = text_stats.LanguageStatsFn()
    left = fn.add_inputs(fn.create_accumulator(), ["The dog runs.", "A Dog."])
    right = fn.add_inputs(fn.create_accumulator(), ["The cat. It sleeps."])
    merged = fn.extract_output(fn.merge_accumulators([left, right]))
    assert merged == language_stats(["The dog runs.", "A Dog.", "The cat. It sleeps."], nlp)


# --- the public data: Table 4 ------------------------------------------------------------

def _descriptions(split):
    path = REALDATA / f"{split}_data.json"
    # The Table 4 check must never pass by not running: the data sits beside the checkout.
    assert path.exists(), f"public ImageCoDe data not found at {path} (../shared/realdata)"
    sets = json.loads(path.read_text())
    return [text for targets in sets.values() for text in targets.values()]


def test_public_train_valid_reproduce_table_4(nlp):
    texts = _descriptions("train") + _descriptions("valid")
    stats = language_stats(texts, nlp)
    assert stats["descriptions"] == 16594 + 2302
    assert round(stats["mean_tokens"], 1) == 23.3        # Table 4: 23.3
    assert round(stats["mean_sentences"], 1) == 1.6      # Table 4: 1.6
    # §4.2: 11.8% of all descriptions (with test) have 3+ sentences; we see 11.5%.
    assert stats["share_3plus_sentences"] == pytest.approx(0.118, abs=0.01)
    # Table 4: 6,916 types over all splits; train + valid alone must stay below it.
    assert 6000 < stats["word_types"] < 6916
