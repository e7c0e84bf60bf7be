"""Hostile BD2BB inputs (issue 10, cases 5 and 9): every bad line of the tuples or the
CoNLL-U parses becomes a reject naming its file and line, a file that is not CoNLL-U at
all stops before any work, over-long texts leave as too_long, and the English filter
rejects Spanish, German and French. Each case on a small generated input."""
import json

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.bd2bb import pipeline as bd2bb
from pipelines.bd2bb import reasons
from pipelines.bd2bb.action_parses import ParseActions
from pipelines.bd2bb.config import BD2BBConfig
from pipelines.bd2bb.inputs import ReadTuples
from pipelines.bd2bb.records import BD2BBTuple
from pipelines.bd2bb.tuple_filters import (DEFAULT_LANGUAGES, LanguageFilter, TextLength,
                                           english_words, language_identifier, language_verdict)
from tests.beam_testing import local_test_pipeline
from transforms.core.errors import ConfigError, InputError
from transforms.core.stage import MAIN, REJECTS, read_stage_counts, reconcile
from transforms.text.parsers import conllu_file_problem, to_conllu
from transforms.text.tokens import Token

IMAGE = "COCO_train2014_000000000001.jpg"


def tuple_line(intention, action, **extra):
    return json.dumps({"image": IMAGE, "intention": intention, "action": action, **extra},
                      ensure_ascii=False)


def run(p):
    result = p.run()
    result.wait_until_finish()
    return read_stage_counts(result)


# --- case 5: tuples with a byte that is not UTF-8 --------------------------------------------

def test_a_latin1_byte_in_the_tuples_is_a_bad_encoding_reject_naming_file_and_line(tmp_path):
    path = tmp_path / "tuples.jsonl"
    path.write_bytes(b"\n".join([
        tuple_line("want to relax a little bit", "pet the dog").encode("utf-8"),
        tuple_line("want to eat a cr\u00eape today", "eat the pizza").encode("latin-1"),   # 0xea
        tuple_line("want to see the sea again", "ride the bus").encode("utf-8"),
    ]) + b"\n")
    p = local_test_pipeline()
    read = p | ReadTuples(str(path))
    assert_that(read[MAIN] | "actions" >> beam.Map(lambda t: t.action),
                equal_to(["pet the dog", "ride the bus"]), label="the other lines go on")
    assert_that(read[REJECTS] | "where" >> beam.Map(lambda r: (r.reason, r.file, r.line, r.detail)),
                equal_to([(reasons.BAD_ENCODING, str(path), 2, "byte 0xea at column 76 is not UTF-8")]),
                label="named by file and line")
    counts = run(p)["read"]
    assert counts == {"line.in": 3, "line.out": 2, "line.rejected.bad_encoding": 1}


def test_json_rejects_of_the_tuples_name_file_and_line(tmp_path):
    path = tmp_path / "tuples.jsonl"
    path.write_text("\n\n".join(["{broken", tuple_line("want to relax a little bit", "pet the dog"),
                                 json.dumps({"image": IMAGE})]) + "\n")
    with local_test_pipeline() as p:
        read = p | ReadTuples(str(path))
        assert_that(read[REJECTS] | beam.Map(lambda r: (r.reason, r.file, r.line)),
                    equal_to([(reasons.BAD_JSON, str(path), 1), (reasons.MISSING_FIELD, str(path), 5)]))


# --- case 5: malformed CoNLL-U ----------------------------------------------------------------

def _sentence(text, rows):
    return to_conllu(tuple(Token(i, f, f, u, h, d) for i, (f, u, h, d) in enumerate(rows, 1)), text=text)


GOOD = _sentence("pet the dog", [("pet", "VERB", 0, "root"), ("the", "DET", 3, "det"), ("dog", "NOUN", 1, "obj")])
BROKEN = _sentence("wash the car", [("wash", "VERB", 0, "root"), ("the", "DET", 3, "det"),
                                    ("car", "NOUN", 1, "obj")])
# GOOD takes file lines 1-5 (its blank line included); BROKEN's "# text" is line 6, "the" line 8.
MALFORMED = {
    "five columns": (lambda cols: cols[:5], "expected 10 tab-separated columns, got 5"),
    "non-integer HEAD": (lambda cols: cols[:6] + ["three"] + cols[7:], "ID and HEAD must be integers, got '2' and 'three'"),
    "HEAD beyond the sentence": (lambda cols: cols[:6] + ["9"] + cols[7:], "HEAD 9 of word 2 is beyond the sentence's 3 words"),
    "ID out of order": (lambda cols: ["7"] + cols[1:], "ID 7 out of order (expected 2)"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_conllu_line_rejects_its_sentence_and_action_naming_file_and_line(case, tmp_path):
    edit, problem = MALFORMED[case]
    lines = BROKEN.split("\n")
    lines[2] = "\t".join(edit(lines[2].split("\t")))           # the word "the", file line 5 + 3 = 8
    path = tmp_path / "actions.conllu"
    path.write_text(GOOD + "\n".join(lines))
    tuples = [BD2BBTuple("t1", IMAGE, "want to relax a bit", "pet the dog", "w"),
              BD2BBTuple("t2", IMAGE, "want to relax a bit", "wash the car", "w")]
    p = local_test_pipeline()
    parsed = p | beam.Create(tuples) | ParseActions("conllu", conllu_path=str(path))
    assert_that(parsed[MAIN] | "kept" >> beam.Map(lambda d: d.tuple.tuple_id), equal_to(["t1"]), label="kept")
    assert_that(parsed[REJECTS] | "rejects" >> beam.Map(lambda r: (r.level, r.reason, r.file, r.line, r.detail)),
                equal_to([("sentence", reasons.BAD_PARSE, str(path), 8, problem),
                          ("tuple", reasons.BAD_PARSE, "", 0,
                           f"the parse of 'wash the car' is malformed: {path}:8: {problem}")]),
                label="rejects")
    counts = run(p)
    assert counts["parse"]["sentence.in"] == 2 and counts["parse"]["sentence.rejected.bad_parse"] == 1
    assert reconcile(counts) == []


def test_a_latin1_byte_in_the_conllu_rejects_its_sentence_as_bad_encoding(tmp_path):
    path = tmp_path / "actions.conllu"
    path.write_bytes(GOOD.encode("utf-8") + BROKEN.replace("car", "caf\u00e9").encode("latin-1"))
    tuples = [BD2BBTuple("t1", IMAGE, "want to relax a bit", "pet the dog", "w")]
    p = local_test_pipeline()
    parsed = p | beam.Create(tuples) | ParseActions("conllu", conllu_path=str(path))
    assert_that(parsed[REJECTS] | beam.Map(lambda r: (r.level, r.reason, r.file, r.line)),
                equal_to([("sentence", reasons.BAD_ENCODING, str(path), 6)]))   # its "# text" line
    assert reconcile(run(p)) == []


def test_a_byte_order_mark_on_a_later_line_of_the_conllu_rejects_its_sentence(tmp_path):
    path = tmp_path / "actions.conllu"          # two parse files joined with cat, each with its BOM
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode("utf-8") + b"\xef\xbb\xbf" + BROKEN.encode("utf-8"))
    tuples = [BD2BBTuple("t1", IMAGE, "want to relax a bit", "pet the dog", "w")]
    p = local_test_pipeline()
    parsed = p | beam.Create(tuples) | ParseActions("conllu", conllu_path=str(path))
    assert_that(parsed[MAIN] | "kept" >> beam.Map(lambda d: d.tuple.tuple_id), equal_to(["t1"]), label="kept")
    assert_that(parsed[REJECTS] | "rejects" >> beam.Map(lambda r: (r.level, r.reason, r.file, r.line, r.detail[:30])),
                equal_to([("sentence", reasons.BAD_ENCODING, str(path), 6, "a byte order mark (U+FEFF) at ")]),
                label="rejects")
    assert reconcile(run(p)) == []


def test_a_file_that_is_not_conllu_at_all_stops_in_preflight(tmp_path):
    parses = tmp_path / "actions.conllu"
    parses.write_text("\n".join(json.dumps({"text": f"action {i}"}) for i in range(3)) + "\n")
    assert conllu_file_problem(str(parses)) == (
        f"{parses} is not CoNLL-U: none of its first 3 word lines has 10 tab-separated columns")
    (tmp_path / "tuples.jsonl").write_text('{"image": "1", "intention": "i", "action": "a"}\n')
    (tmp_path / "captions.json").write_text('{"annotations": []}')
    cfg = BD2BBConfig()
    cfg.inputs.tuples, cfg.inputs.captions = str(tmp_path / "tuples.jsonl"), str(tmp_path / "captions.json")
    cfg.inputs.parses = str(parses)
    with pytest.raises(InputError, match="inputs.parses: .* is not CoNLL-U"):
        bd2bb.preflight(cfg)
    parses.write_text(GOOD + "1\tgo\tgo\n")        # one bad line later on is the reader's, not preflight's
    assert conllu_file_problem(str(parses)) is None


# --- case 9: length limit ---------------------------------------------------------------------

def test_a_10007_character_action_is_too_long_before_any_other_filter():
    long_action = ("pet the dog " * 834)[:10007]
    tuples = [BD2BBTuple("t1", IMAGE, "want to relax a little bit", long_action, "w"),
              BD2BBTuple("t2", IMAGE, "want " + "to relax " * 70, "pet the dog", "w"),
              BD2BBTuple("t3", IMAGE, "want to relax a little bit", "pet the dog", "w")]
    p = local_test_pipeline()
    kept = p | beam.Create(tuples) | TextLength(max_intention_chars=500, max_action_chars=500)
    assert_that(kept[MAIN] | "kept" >> beam.Map(lambda t: t.tuple_id), equal_to(["t3"]), label="kept")
    assert_that(kept[REJECTS] | "why" >> beam.Map(lambda r: (r.item_id, r.stage, r.reason, r.detail)),
                equal_to([("t1", "text_length", reasons.TOO_LONG, "action: 10007 characters > 500"),
                          ("t2", "text_length", reasons.TOO_LONG, "intention: 635 characters > 500")]),
                label="rejects")
    assert reconcile(run(p)) == []


def test_the_length_limits_are_config_keys_with_generous_defaults():
    f = BD2BBConfig().filters
    assert f.max_intention_chars == 500 and f.max_action_chars == 500
    cfg = BD2BBConfig()
    cfg.filters.max_action_chars = 0
    with pytest.raises(ConfigError, match="max_action_chars"):
        cfg.validate()


# --- case 9: not English ----------------------------------------------------------------------
# Hand-written, in BD2BB's shapes (the text after "If I" / "I will"), none from the benchmark's
# generator (bench/bd2bb_language.py): 10 per language.

ENGLISH = ["am hungry after work", "want to make my kids happy", "feel adventurous", "like animals.",
           "pet the giraffe", "take a picture of the zebras standing back to back",
           "grab my tennis raquet firmly and hit the ball", "sit on the bench and eat my sandwich",
           "go to the bathroom to get a selfie", "ride a zebra with the kids"]
FOREIGN = {
    "es": ["tengo mucha hambre", "quiero pasar la tarde con mi familia", "estoy muy aburrido en casa",
           "me gustan mucho los perros", "acariciar al perro del vecino", "comer una hamburguesa grande",
           "sacar una foto de las jirafas", "subir al autobús con mis hijos",
           "jugar al tenis con mi hermano", "sentarme en el banco a descansar"],
    "de": ["habe großen Hunger", "möchte mit meinen Kindern spielen", "bin heute sehr müde",
           "liebe es, draußen zu sein", "den kleinen Hund streicheln", "ein Stück Pizza essen",
           "mit dem Fahrrad zur Arbeit fahren", "ein Foto von der Giraffe machen",
           "mich auf die Bank setzen", "mit meiner Schwester Tennis spielen"],
    "fr": ["ai très faim ce soir", "veux passer du temps avec ma famille", "suis fatigué après le travail",
           "aime beaucoup les chiens", "caresser le petit chien", "manger une part de pizza",
           "prendre une photo de la girafe", "monter dans le bus avec mes enfants",
           "jouer au tennis avec mon frère", "m'asseoir sur le banc pour me reposer"],
}


@pytest.fixture(scope="module")
def rule():
    vocabulary, identifier = english_words(), language_identifier(DEFAULT_LANGUAGES)
    return lambda text: language_verdict(text, vocabulary, 0.5, identifier, 0.05)


@pytest.mark.parametrize("text", ENGLISH)
def test_english_passes_the_identifier_too(text, rule):
    assert rule(text) is None


@pytest.mark.parametrize("lang", sorted(FOREIGN))
def test_spanish_german_and_french_are_not_english(lang, rule):
    verdicts = {text: rule(text) for text in FOREIGN[lang]}
    passed = [text for text, v in verdicts.items() if v is None]
    assert passed == [], f"{lang} passed as English: {passed}"
    assert {v[0] for v in verdicts.values()} == {reasons.NOT_ENGLISH}


def test_accented_words_are_whole_foreign_words_not_english_fragments():
    # With ASCII-only words, "goûter" was "go" + "ter" and "été" looked like key-mashing.
    vocabulary = english_words()
    assert language_verdict("goûter la crêpe", vocabulary, 0.5)[0] == reasons.NOT_ENGLISH
    assert language_verdict("un été à la plage", vocabulary, 0.5)[0] == reasons.NOT_ENGLISH
    assert language_verdict("пойти в парк", vocabulary, 0.5)[0] == reasons.NOT_ENGLISH
    assert language_verdict("eat a crêpe at the café", vocabulary, 0.5) is None


def test_the_identifier_names_the_language_and_is_deterministic(rule):
    detail = rule("sacar una foto de las jirafas")[1]
    assert detail.startswith("identified as es (") and "English 0.0" in detail
    assert all(rule(t) == rule(t) for t in FOREIGN["fr"])


def test_the_language_stage_rejects_a_spanish_tuple_with_english_looking_words():
    # The word rule alone passes it: "me", "la", "pizza", "con", "mis" are in the English
    # vocabulary (4 of 6 words).
    spanish = BD2BBTuple("t2", IMAGE, "want to have some fun today", "comer la pizza con mis amigos", "w")
    assert language_verdict(spanish.action, english_words(), 0.5) is None
    with local_test_pipeline() as p:
        out = p | beam.Create([spanish, BD2BBTuple("t1", IMAGE, "want to have some fun today", "eat the pizza", "w")]) \
            | LanguageFilter(0.5)
        assert_that(out[MAIN] | "kept" >> beam.Map(lambda t: t.tuple_id), equal_to(["t1"]), label="kept")
        assert_that(out[REJECTS] | "why" >> beam.Map(lambda r: (r.item_id, r.reason, r.detail.split(" (")[0])),
                    equal_to([("t2", reasons.NOT_ENGLISH, "action: identified as es")]), label="rejects")


def test_an_unknown_language_code_is_a_config_error(tmp_path):
    (tmp_path / "tuples.jsonl").write_text('{"image": "1", "intention": "i", "action": "a"}\n')
    (tmp_path / "captions.json").write_text('{"annotations": []}')
    (tmp_path / "actions.conllu").write_text(GOOD)
    cfg = BD2BBConfig()
    cfg.inputs.tuples, cfg.inputs.captions = str(tmp_path / "tuples.jsonl"), str(tmp_path / "captions.json")
    cfg.inputs.parses = str(tmp_path / "actions.conllu")
    cfg.filters.languages = ["en", "xx"]
    with pytest.raises(ConfigError, match="filters.languages: .*xx"):
        bd2bb.preflight(cfg)


@pytest.mark.parametrize("content, message", [
    (b'{"annotations": [{"image_id": 1, "caption": "a d\xe9j\xe0 vu"}]}', "byte 0xe9 at offset 48 is not UTF-8"),
    (b'{"annotations": [', "not JSON"),
    (b'{"images": []}', 'is not a COCO captions file: no "annotations" list'),
    (b'{"annotations": [{"image_id": "1", "caption": "a dog"}]}', 'annotations\\[0\\] needs an integer "image_id"'),
])
def test_a_captions_file_that_cannot_be_read_stops_in_preflight(tmp_path, content, message):
    (tmp_path / "tuples.jsonl").write_text('{"image": "1", "intention": "i", "action": "a"}\n')
    (tmp_path / "captions.json").write_bytes(content)
    cfg = BD2BBConfig()
    cfg.inputs.tuples, cfg.inputs.captions = str(tmp_path / "tuples.jsonl"), str(tmp_path / "captions.json")
    cfg.parser.backend = "spacy"
    with pytest.raises(InputError, match=f"inputs.captions: {tmp_path / 'captions.json'}.*{message}"):
        bd2bb.preflight(cfg)
