"""BD2BB tuple filters (§3.1, A.1) on hand-built cases: the rules, then the Beam stages
with their counters and reject reasons."""
import json

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.bd2bb import reasons
from pipelines.bd2bb.inputs import ReadTuples, parse_tuple_line
from pipelines.bd2bb.records import BD2BBTuple, Datapoint, coco_image_id
from pipelines.bd2bb.tuple_filters import (ActionNounFilter, GroundingFilter, IntentionLength,
                                           LanguageFilter, NounLexiconFn, english_words,
                                           frequent_caption_nouns, intention_tokens,
                                           language_verdict, looks_random)
from tests.beam_testing import local_test_pipeline
from transforms.core.stage import MAIN, REJECTS
from transforms.text.stats import tokenizer_nlp
from transforms.text.tokens import Token


@pytest.fixture(scope="module")
def vocabulary():
    return english_words()


@pytest.mark.parametrize("text", ["pet the giraffe", "ride a zebra with the kids",
                                  "grab my tennis raquet firmly and hit the ball",   # a typo is fine
                                  "want to be on a spotlight", "go to the bathroom to get a selfie"])
def test_english_passes(text, vocabulary):
    assert language_verdict(text, vocabulary, 0.5) is None


@pytest.mark.parametrize("text,reason", [
    ("lorem ipsum dolor sit amet consectetur", reasons.NOT_ENGLISH),
    ("sed do eiusmod tempor incididunt ut labore", reasons.NOT_ENGLISH),
    ("asdfgh jklqwr", reasons.NONSENSE),
    ("xzcvbn mnbvc the", reasons.NONSENSE),
    ("aaaaaa", reasons.NONSENSE),
    ("1234 !!!", reasons.NONSENSE),
])
def test_not_english_or_nonsense(text, reason, vocabulary):
    assert language_verdict(text, vocabulary, 0.5)[0] == reason


def test_random_word_heuristics(vocabulary):
    assert looks_random("sdfgh") and looks_random("qwrt") and looks_random("zzz")
    assert not looks_random("sky") and not looks_random("rhythm") and not looks_random("giraffe")
    # A rare real word can look random ("ngths": 5 consonants); the rule needs half the
    # words to look random, so a sentence holding it is still English.
    assert looks_random("strengths")
    assert language_verdict("show my strengths at the gym", vocabulary, 0.5) is None


def test_intention_length_counts_spacy_tokens_with_the_opener():
    nlp = tokenizer_nlp()
    assert intention_tokens(nlp, "feel adventurous", count_opener=True) == 4
    assert intention_tokens(nlp, "feel adventurous", count_opener=False) == 2
    assert intention_tokens(nlp, "like animals.", count_opener=True) == 5     # "." is a token


def test_caption_nouns_occurring_more_than_once():
    nlp = tokenizer_nlp()
    lexicon = {"dog": "dog", "dogs": "dog", "frisbee": "frisbee", "park": "park"}
    captions = ["A dog catches a frisbee.", "Two dogs in a park.", "A man throws a frisbee to a dog."]
    # dog: 3 (dog, dogs, dog), frisbee: 2, park: 1
    assert frequent_caption_nouns(nlp, captions, lexicon) == {"dog", "frisbee"}


def test_noun_lexicon_keeps_words_mostly_tagged_as_nouns():
    fn = NounLexiconFn()
    parses = [
        (Token(1, "pet", "pet", "VERB", 0, "root"), Token(2, "dogs", "dog", "NOUN", 1, "obj")),
        (Token(1, "pet", "pet", "VERB", 0, "root"), Token(2, "it", "it", "PRON", 1, "obj")),
        (Token(1, "feed", "feed", "VERB", 0, "root"), Token(2, "pet", "pet", "NOUN", 1, "obj")),
    ]
    acc = fn.merge_accumulators([fn.add_input(fn.create_accumulator(), p) for p in parses])
    assert fn.extract_output(acc) == {"dogs": "dog"}       # "pet": 1 noun use in 3


def test_tuple_lines():
    ok = parse_tuple_line(json.dumps({"image": 123456, "intention": "want to relax", "action": "sit down",
                                      "annotator": "w1"}))
    assert isinstance(ok, BD2BBTuple) and ok.image == "123456" and len(ok.tuple_id) == 16
    assert parse_tuple_line('{"image": "x.jpg", "intention": "a", "action": "b"}')[0] == reasons.BAD_FIELD
    assert parse_tuple_line('{"image": "COCO_train2014_000000000001.jpg", "intention": "a"}')[0] == reasons.MISSING_FIELD
    assert parse_tuple_line("not json")[0] == reasons.BAD_JSON
    assert parse_tuple_line(json.dumps({"id": "t1", "image": "COCO_train2014_000000000042.jpg",
                                        "intention": "a", "action": "b"})).tuple_id == "t1"
    assert coco_image_id("COCO_train2014_000000000042.jpg") == 42


def tup(i, intention="want to have some fun today", action="pet the dog", image="COCO_train2014_000000000001.jpg"):
    return BD2BBTuple(f"t{i}", image, intention, action, "w")


def test_read_and_filter_stages_route_rejects_with_reasons(tmp_path):
    lines = [json.dumps({"id": "t1", "image": "COCO_train2014_000000000001.jpg", "intention": "want to relax a bit", "action": "pet the dog"}),
             json.dumps({"id": "t1", "image": "COCO_train2014_000000000001.jpg", "intention": "want to relax a bit", "action": "pet the cat"}),
             "{broken", json.dumps({"image": "COCO_train2014_000000000002.jpg", "intention": "x"})]
    path = tmp_path / "tuples.jsonl"
    path.write_text("\n".join(lines) + "\n\n")
    tuples = [tup(1), tup(2, intention="lorem ipsum dolor sit amet"), tup(3, action="asdfgh qwrtzp"),
              tup(4, intention="am bored")]
    with local_test_pipeline() as p:
        read = p | ReadTuples(str(path))
        assert_that(read[MAIN] | "ids" >> beam.Map(lambda t: (t.tuple_id, t.action)),
                    equal_to([("t1", "pet the cat")]), label="kept one of the duplicates")
        assert_that(read[REJECTS] | "read reasons" >> beam.Map(lambda r: r.reason),
                    equal_to([reasons.DUPLICATE_TUPLE, reasons.BAD_JSON, reasons.MISSING_FIELD]),
                    label="read rejects")
        english = p | "tuples" >> beam.Create(tuples) | LanguageFilter(0.5)
        long_enough = english[MAIN] | IntentionLength(5, True)
        assert_that(long_enough[MAIN] | "kept" >> beam.Map(lambda t: t.tuple_id), equal_to(["t1"]), label="kept")
        assert_that(english[REJECTS] | "lang" >> beam.Map(lambda r: (r.item_id, r.reason, r.stage)),
                    equal_to([("t2", reasons.NOT_ENGLISH, "language"), ("t3", reasons.NONSENSE, "language")]),
                    label="language rejects")
        assert_that(long_enough[REJECTS] | "short" >> beam.Map(lambda r: (r.item_id, r.reason)),
                    equal_to([("t4", reasons.SHORT_INTENTION)]), label="length rejects")


def parsed(i, action_tokens, **kw):
    return Datapoint(tuple=tup(i, **kw), parse=tuple(Token(n, f, f, u, h, d) for n, (f, u, h, d)
                                                      in enumerate(action_tokens, 1)))


def test_action_noun_and_grounding_stages():
    with_noun = parsed(1, [("pet", "VERB", 0, "root"), ("dog", "NOUN", 1, "obj")])
    with_pronoun = parsed(2, [("hug", "VERB", 0, "root"), ("him", "PRON", 1, "obj")])
    without = parsed(3, [("go", "VERB", 0, "root"), ("away", "ADV", 1, "advmod")])
    names_the_dog = parsed(4, [("pet", "VERB", 0, "root"), ("dog", "NOUN", 1, "obj")],
                           intention="want to play with the dog today")
    no_captions = parsed(5, [("pet", "VERB", 0, "root"), ("dog", "NOUN", 1, "obj")],
                         image="COCO_train2014_000000000009.jpg")
    captions = [(1, "A dog on a sofa."), (1, "The dog sleeps."), (1, "A cat looks at the sofa.")]
    with local_test_pipeline() as p:
        nouns = p | "points" >> beam.Create([with_noun, with_pronoun, without, names_the_dog, no_captions]) \
            | ActionNounFilter()
        assert_that(nouns[REJECTS] | "noun reasons" >> beam.Map(lambda r: (r.item_id, r.reason)),
                    equal_to([("t3", reasons.NO_NOUN_OR_PRONOUN)]), label="noun rejects")
        lexicon = p | "lexicon" >> beam.Create([{"dog": "dog", "sofa": "sofa", "cat": "cat"}])
        grounded = ({"datapoints": nouns[MAIN] | beam.Map(lambda d: (coco_image_id(d.tuple.image), d)),
                     "captions": p | "captions" >> beam.Create(captions)} | GroundingFilter(lexicon))
        assert_that(grounded[MAIN] | "kept" >> beam.Map(lambda d: d.tuple.tuple_id),
                    equal_to(["t1", "t2"]), label="grounded")
        assert_that(grounded[REJECTS] | "ground reasons" >> beam.Map(lambda r: (r.item_id, r.reason, r.detail)),
                    equal_to([("t4", reasons.MENTIONS_IMAGE_ENTITY, "intention names dog"),
                              ("t5", reasons.NO_CAPTIONS, "no captions for image COCO_train2014_000000000009.jpg")]),
                    label="grounding rejects")


def test_duplicates_are_unique_image_intention_action_whatever_the_annotator_or_id(tmp_path):
    """§4.1: one sample per <image, intention, action>; annotator, input id, image spelling,
    case and spacing do not make a second one."""
    from transforms.core.stage import read_stage_counts
    lines = [json.dumps({"image": "COCO_train2014_000000000001.jpg", "intention": "want to relax a bit",
                         "action": "pet the dog", "annotator": "w1"}),
             json.dumps({"image": 1, "intention": "Want to relax  a bit", "action": "Pet the DOG",
                         "annotator": "w2"}),
             json.dumps({"id": "z9", "image": "COCO_train2014_000000000001.jpg", "intention": "want to relax a bit",
                         "action": "pet the dog ", "annotator": "w3"}),
             json.dumps({"image": "COCO_train2014_000000000002.jpg", "intention": "want to relax a bit", "action": "pet the dog",
                         "annotator": "w1"})]                         # another image: kept
    path = tmp_path / "tuples.jsonl"
    first = parse_tuple_line(lines[1])           # same hash id as lines[0]; image "1" sorts first
    other = parse_tuple_line(lines[3])
    for order in (lines, list(reversed(lines))):  # the kept tuple does not depend on input order
        path.write_text("\n".join(order) + "\n")
        p = local_test_pipeline()
        read = p | ReadTuples(str(path))
        assert_that(read[MAIN] | "kept" >> beam.Map(lambda t: (t.tuple_id, t.annotator)),
                    equal_to([(first.tuple_id, "w2"), (other.tuple_id, "w1")]), label="kept")
        assert_that(read[REJECTS] | "reasons" >> beam.Map(lambda r: r.reason),
                    equal_to([reasons.DUPLICATE_TUPLE] * 2), label="two duplicates")
        result = p.run()
        result.wait_until_finish()
        counts = read_stage_counts(result)["dedupe"]
        assert counts["tuple.in"] == 4 and counts["tuple.out"] == 2
        assert counts["tuple.in"] == counts["tuple.out"] + counts["tuple.rejected.duplicate_tuple"]
    hashed = parse_tuple_line(lines[0]).tuple_id
    assert parse_tuple_line(lines[1]).tuple_id == hashed, "the id hashes the content key, not the annotator"
