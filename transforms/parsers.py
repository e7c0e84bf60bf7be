"""Dependency parses of actions from three backends, in one neutral form (schemas.bd2bb.Token).

  conllu  pre-parsed CoNLL-U: the manually corrected path (§3.2: "All the outputs by the
          parser were manually checked and fixed"). A sentence belongs to the action whose
          normalised text equals its `# text =` comment.
  spacy   a spaCy pipeline by installed package name or saved folder (spacy.load).
  stanza  a Stanza model folder (stanza.Pipeline(dir=..., download_method=None)).

Nothing is downloaded: a name or folder that does not load is a ParserError naming the
config key. The argument codes (transforms/argument_codes.py) read only Tokens, so every
backend feeds the same extractor.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from schemas.bd2bb import Token, normalise_text

PARSER_KEY = "parser.backend"
MODEL_KEY = "parser.model"


class ParserError(RuntimeError):
    """The parser cannot be built or read as configured; the message names the config key."""


# --- CoNLL-U -----------------------------------------------------------------------------

def read_conllu(lines: Iterable[str]) -> Iterator[Tuple[Dict[str, str], Tuple[Token, ...]]]:
    """(comments, tokens) per sentence. Multi-word token ranges ("1-2") and empty nodes
    ("1.1") are skipped: the basic tree over syntactic words is what the codes read."""
    meta: Dict[str, str] = {}
    tokens: List[Token] = []
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            if tokens:
                yield meta, tuple(tokens)
            meta, tokens = {}, []
            continue
        if line.startswith("#"):
            key, sep, value = line[1:].partition("=")
            if sep:
                meta[key.strip()] = value.strip()
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise ValueError(f"CoNLL-U line {number}: expected 10 tab-separated columns, got {len(cols)}")
        if "-" in cols[0] or "." in cols[0]:
            continue
        try:
            tokens.append(Token(int(cols[0]), cols[1], cols[2], cols[3], int(cols[6]), cols[7]))
        except ValueError:
            raise ValueError(f"CoNLL-U line {number}: ID and HEAD must be integers") from None
    if tokens:
        yield meta, tuple(tokens)


def sentence_text(meta: Dict[str, str], tokens: Tuple[Token, ...]) -> str:
    """The sentence's `# text`, or its forms joined by spaces when the comment is absent."""
    return meta.get("text") or " ".join(t.form for t in tokens)


def to_conllu(tokens: Iterable[Token], text: Optional[str] = None, sent_id: Optional[str] = None) -> str:
    """One sentence in CoNLL-U (for the sample, and to export parses for manual correction)."""
    lines = []
    if sent_id:
        lines.append(f"# sent_id = {sent_id}")
    if text is not None:
        lines.append(f"# text = {text}")
    for t in tokens:
        lines.append("\t".join([str(t.id), t.form, t.lemma, t.upos, "_", "_", str(t.head),
                                t.deprel, "_", "_"]))
    return "\n".join(lines) + "\n\n"


# --- spaCy / Stanza ------------------------------------------------------------------------

def tokens_from_spacy(doc) -> Tuple[Token, ...]:
    """A spaCy Doc (one sentence) as Tokens; spaCy's ROOT label becomes UD's `root`."""
    out = []
    for tok in doc:
        if tok.is_space:
            continue
        head = 0 if tok.head.i == tok.i else tok.head.i + 1
        dep = "root" if tok.dep_.upper() == "ROOT" else tok.dep_
        out.append(Token(tok.i + 1, tok.text, tok.lemma_ or tok.text.lower(), tok.pos_, head, dep))
    return tuple(out)


def tokens_from_stanza(doc) -> Tuple[Token, ...]:
    """The words of a Stanza Document (its first sentence holds an action) as Tokens."""
    out = []
    offset = 0
    for sentence in doc.sentences:
        for w in sentence.words:
            head = 0 if w.head == 0 else w.head + offset
            out.append(Token(w.id + offset, w.text, w.lemma or w.text.lower(), w.upos or "X",
                             head, w.deprel or "dep"))
        offset += len(sentence.words)
    return tuple(out)


def _files_sha256(folder: str) -> str:
    """One checksum over every file below a model folder (names and bytes)."""
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(folder)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            digest.update(os.path.relpath(path, folder).encode())
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def _spacy_folder(model: str) -> str:
    if os.path.isdir(model):
        return model
    import importlib.util
    spec = importlib.util.find_spec(model)
    if spec is None or not spec.submodule_search_locations:
        raise ParserError(f"{MODEL_KEY}: spaCy pipeline {model!r} is neither a folder nor an "
                          "installed package (nothing is downloaded at run time)")
    return list(spec.submodule_search_locations)[0]


def parser_identity(backend: str, model: Optional[str]) -> dict:
    """What the manifest records about the parser; `fingerprint` (weights checksum
    included, location excluded) keys the parse cache."""
    if backend == "conllu":
        identity = {"backend": "conllu", "model": None, "weights_sha256": None}
    elif backend in ("spacy", "stanza"):
        if not model:
            raise ParserError(f"{MODEL_KEY} is not set: give the {backend} model "
                              f"{'name or folder' if backend == 'spacy' else 'folder'}")
        folder = _spacy_folder(model) if backend == "spacy" else model
        if not os.path.isdir(folder):
            raise ParserError(f"{MODEL_KEY}: no such {backend} model folder: {model}")
        module = __import__(backend)
        identity = {"backend": backend, "model": model, "library_version": module.__version__,
                    "weights_sha256": _files_sha256(folder)}
    else:
        raise ParserError(f"{PARSER_KEY}: unknown backend {backend!r} (conllu, spacy, stanza)")
    stable = {k: v for k, v in identity.items() if k != "model"}
    identity["fingerprint"] = hashlib.sha256(
        json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]
    return identity


class ModelParser:
    """A spaCy or Stanza pipeline that parses one action at a time (loaded once per worker)."""

    def __init__(self, backend: str, model: str):
        self.backend = backend
        if backend == "spacy":
            import spacy
            try:
                self._nlp = spacy.load(model)
            except OSError as e:
                raise ParserError(f"{MODEL_KEY}: cannot load spaCy pipeline {model!r}: {e}") from None
        elif backend == "stanza":
            import stanza
            try:
                self._nlp = stanza.Pipeline(lang="en", dir=model, processors="tokenize,pos,lemma,depparse",
                                            tokenize_no_ssplit=True, download_method=None,
                                            logging_level="WARN")
            except Exception as e:  # stanza raises several types for a missing resource
                raise ParserError(f"{MODEL_KEY}: cannot load Stanza models from {model!r}: {e}") from None
        else:
            raise ParserError(f"{PARSER_KEY}: {backend!r} is not a model backend")

    def parse(self, text: str) -> Tuple[Token, ...]:
        if self.backend == "spacy":
            return tokens_from_spacy(self._nlp(text))
        return tokens_from_stanza(self._nlp(text))


def conllu_index(lines: Iterable[str]) -> Iterator[Tuple[str, Tuple[Token, ...]]]:
    """(normalised action text, tokens) per sentence of a CoNLL-U file."""
    for meta, tokens in read_conllu(lines):
        yield normalise_text(sentence_text(meta, tokens)), tokens
