"""Texts and parsed words in the forms every text stage shares.

`normalise_text` is the spelling two texts must share to count as the same (lower
case, single spaces), `text_key` a stable id of that spelling (parses and embeddings are
cached by it), `Token` one word of a dependency parse, whatever parser produced it.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass


def normalise_text(text: str) -> str:
    """The spelling two texts must share to count as the same text: lower case, single
    spaces."""
    return " ".join(str(text).lower().split())


def text_key(text: str) -> str:
    """A stable id of a normalised text: parses and embeddings are keyed by it, so a
    text typed by several annotators is parsed and embedded once."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Token:
    """One word of a dependency parse in the backend-neutral form every parser produces
    (CoNLL-U's ID, FORM, LEMMA, UPOS, HEAD, DEPREL; head 0 = root)."""
    id: int
    form: str
    lemma: str
    upos: str
    head: int
    deprel: str
