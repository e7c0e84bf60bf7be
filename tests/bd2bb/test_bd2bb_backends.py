"""Model backends and their errors: a spaCy pipeline loaded from a folder parses actions
through the shared cache (second run: all hits); missing weights name the config key."""
import os
import subprocess
import sys

import apache_beam as beam
import pytest
import spacy
from apache_beam.testing.util import assert_that, equal_to
from spacy.language import Language

from pipelines import build
from pipelines.bd2bb.action_parses import ParseActions
from pipelines.bd2bb.records import BD2BBTuple
from tests.beam_testing import local_test_pipeline
from tests.paths import ROOT
from transforms.core.errors import UserError
from transforms.core.stage import MAIN, REJECTS, read_stage_counts
from transforms.text.parsers import ModelParser, ParserError, parser_identity
from transforms.text.sentence_embed import EmbedError, SentenceEncoderSpec, encoder_identity


@Language.component("bd2bb_toy_parser")
def toy_parser(doc):
    """A rule 'parser' for "VERB (the|a) NOUN" actions: enough to stand in for a trained
    pipeline on disk (none can be downloaded here)."""
    for i, tok in enumerate(doc):
        if i == 0:
            tok.pos_, tok.dep_, tok.lemma_ = "VERB", "ROOT", tok.text.rstrip("s")
            tok.head = tok
        elif tok.lower_ in ("the", "a"):
            tok.pos_, tok.dep_, tok.lemma_, tok.head = "DET", "det", tok.lower_, doc[min(i + 1, len(doc) - 1)]
        else:
            tok.pos_, tok.dep_, tok.lemma_, tok.head = "NOUN", "obj", tok.lower_, doc[0]
    return doc


@pytest.fixture(scope="module")
def spacy_folder(tmp_path_factory):
    nlp = spacy.blank("en")
    nlp.add_pipe("bd2bb_toy_parser")
    folder = tmp_path_factory.mktemp("spacy_model")
    nlp.to_disk(folder)
    return str(folder)


def test_spacy_backend_parses_into_codes(spacy_folder):
    tokens = ModelParser("spacy", spacy_folder).parse("rides the horse")
    assert [(t.form, t.upos, t.head, t.deprel) for t in tokens] == [
        ("rides", "VERB", 0, "root"), ("the", "DET", 3, "det"), ("horse", "NOUN", 1, "obj")]
    identity = parser_identity("spacy", spacy_folder)
    assert identity["weights_sha256"] and identity["fingerprint"]
    assert identity["library_version"] == spacy.__version__


def test_parser_identity_does_not_import_spacy(spacy_folder):
    """Its version comes from the package's metadata: a build whose parses are cached
    never pays spaCy's import (issue 34: ~2 CPU s of a same-config ImageCoDe rebuild)."""
    code = ("import sys; from transforms.text.parsers import parser_identity; "
            f"parser_identity('spacy', {str(spacy_folder)!r}); "
            "assert 'spacy' not in sys.modules, 'spacy imported'")
    done = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-2000:]


def test_model_parses_go_through_the_cache(spacy_folder, tmp_path):
    cache = str(tmp_path / "cache")
    fingerprint = parser_identity("spacy", spacy_folder)["fingerprint"]
    tuples = [BD2BBTuple("t1", "COCO_1.jpg", "i", "ride the horse", "w"),
              BD2BBTuple("t2", "COCO_1.jpg", "i", "Ride  the horse", "w"),   # same action
              BD2BBTuple("t3", "COCO_2.jpg", "i", "feed a dog", "w")]
    for run, (hits, misses) in enumerate([(0, 2), (2, 0)]):
        with local_test_pipeline() as p:
            out = p | beam.Create(tuples) | ParseActions("spacy", spacy_folder, fingerprint=fingerprint,
                                                         cache_root=cache, run_id=f"test-{run}")
            assert_that(out[MAIN] | beam.Map(lambda d: (d.tuple.tuple_id, d.codes.code1, d.codes.code2)),
                        equal_to([("t1", "ride", ("horse",)), ("t2", "ride", ("horse",)),
                                  ("t3", "feed", ("dog",))]))
            assert_that(out[REJECTS], equal_to([]), label="no rejects")
        counted = read_stage_counts(p.result).get("cache.action_parse", {})   # hits and misses: its work
        assert counted.get("hit", 0) == hits and counted.get("miss", 0) == misses, counted


def test_missing_models_name_the_config_key(tmp_path):
    with pytest.raises(ParserError, match="parser.model"):
        parser_identity("stanza", str(tmp_path / "nothing"))
    with pytest.raises(ParserError, match="parser.model"):
        parser_identity("spacy", "en_core_web_not_installed")
    with pytest.raises(ParserError, match="parser.model"):
        ModelParser("spacy", str(tmp_path / "nothing"))
    with pytest.raises(ParserError, match="parser.backend"):
        parser_identity("corenlp", None)
    with pytest.raises(EmbedError, match="embed.model"):
        encoder_identity(SentenceEncoderSpec(model=str(tmp_path)))


def test_bundled_sentence_encoder_identity_has_a_weights_checksum():
    identity = encoder_identity(SentenceEncoderSpec())
    assert len(identity["weights_sha256"]) == 64 and identity["name"] == "all-MiniLM-L6-v2"
    assert identity == encoder_identity(SentenceEncoderSpec(batch_size=8))   # batching is no identity


def test_stanza_documents_convert_to_the_same_tokens():
    from stanza.models.common.doc import Document

    from pipelines.bd2bb.argument_codes import extract_codes
    from transforms.text.parsers import tokens_from_stanza
    words = [("grab", "grab", "VERB", 0, "root"), ("the", "the", "DET", 3, "det"),
             ("ball", "ball", "NOUN", 1, "obj")]
    doc = Document([[{"id": i, "text": f, "lemma": l, "upos": u, "head": h, "deprel": d}
                     for i, (f, l, u, h, d) in enumerate(words, 1)]])
    tokens = tokens_from_stanza(doc)
    assert [(t.id, t.form, t.head) for t in tokens] == [(1, "grab", 0), (2, "the", 3), (3, "ball", 1)]
    assert extract_codes(tokens).code2 == ("ball",)
    two = Document([[{"id": 1, "text": "go", "lemma": "go", "upos": "VERB", "head": 0, "deprel": "root"}],
                    [{"id": 1, "text": "now", "lemma": "now", "upos": "ADV", "head": 0, "deprel": "root"}]])
    assert [(t.id, t.head) for t in tokens_from_stanza(two)] == [(1, 0), (2, 0)]   # ids continue


@pytest.mark.parametrize("override,key", [
    (["parser.backend=spacy", "parser.model=/nonexistent/parser"], "parser.model"),
    (["embed.model=/nonexistent/encoder"], "embed.model"),
])
def test_a_missing_model_is_one_line_naming_the_config_key(tmp_path, capsys, override, key):
    assert issubclass(ParserError, UserError) and issubclass(EmbedError, UserError)
    sets = [arg for value in override for arg in ("--set", value)]
    code = build.build_main("bd2bb", ["--config", "sample", "--output", str(tmp_path / "out"),
                                      "--version", "1.0.0", *sets])
    err = "".join(line for line in capsys.readouterr().err.splitlines(keepends=True)
                  if not line.startswith("progress: "))   # the build's own, before preflight failed
    assert code == 2 and err.startswith(f"error: {key}") and "/nonexistent/" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
