"""Dependency parses of short texts from three backends, in one neutral form
(transforms.text.tokens.Token).

  conllu  pre-parsed CoNLL-U: a parse checked and fixed by hand. A sentence belongs to
          the text whose normalised form equals its `# text =` comment.
  spacy   a spaCy pipeline by installed package name or saved folder (spacy.load).
  stanza  a Stanza model folder (stanza.Pipeline(dir=..., download_method=None)).

Nothing is downloaded: a name or folder that does not load is a ParserError naming the
config key. Whatever reads the parses reads only Tokens, so every backend feeds it the
same way.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from transforms.core.errors import UserError
from transforms.core.hashing import folder_sha256
from transforms.io.lines import read_numbered_lines
from transforms.text.tokens import Token, normalise_text

PARSER_KEY = "parser.backend"
MODEL_KEY = "parser.model"


class ParserError(UserError, RuntimeError):
    """The parser cannot be built or read as configured; the message names the config key
    (the command line prints it as one line, transforms/core/errors.py)."""


# --- CoNLL-U -----------------------------------------------------------------------------

_RANGE_OR_EMPTY_NODE = re.compile(r"^\d+(-|\.)\d+$")   # "1-2" (multi-word token), "1.1" (empty node)


@dataclass(frozen=True)
class ConlluSentence:
    """One sentence of a CoNLL-U file. `problem` is set when one of its lines is malformed
    ("line 43: expected 10 tab-separated columns, got 5"; `problem_line` is 43): the
    sentence is then unusable and `tokens` holds only what was read before the bad line."""
    meta: Dict[str, str]
    tokens: Tuple[Token, ...]
    first_line: int
    problem: Optional[str] = None
    problem_line: int = 0
    undecodable: bool = False     # the problem is a line whose bytes are not UTF-8


def conllu_sentences(lines: Iterable[Tuple[int, str, Optional[str]]]) -> Iterator[ConlluSentence]:
    """(line number, text, decoding error) per line -> ConlluSentence per sentence.

    Sentences end at a blank line or at a gap in the line numbers (transforms.io.lines
    leaves blank lines out). Multi-word token ranges ("1-2") and empty nodes ("1.1") are
    skipped: the basic tree over syntactic words is what the codes read. A sentence is
    malformed when a line is undecodable, has other than 10 tab-separated columns, an ID
    or HEAD that is not an integer, IDs other than 1, 2, 3, ... in order, or a HEAD that
    names no word of the sentence (or the word itself); its first problem is reported and
    the rest of it is skipped, never a crash."""
    state = _SentenceBuilder()
    previous = None
    for number, text, error in lines:
        line = text.rstrip("\r\n")
        blank = error is None and not line.strip()
        if blank or (previous is not None and number != previous + 1):
            if state.started:
                yield state.finish()
            state = _SentenceBuilder()
        previous = number
        if blank:
            continue
        state.add(number, line, error)
    if state.started:
        yield state.finish()


class _SentenceBuilder:
    def __init__(self):
        self.meta: Dict[str, str] = {}
        self.tokens: List[Token] = []
        self.first_line = 0
        self.problem: Optional[str] = None
        self.problem_line = 0
        self.undecodable = False
        self._line_of: Dict[int, int] = {}   # word ID -> its line, to name a bad HEAD's line

    @property
    def started(self) -> bool:
        return self.first_line > 0

    def add(self, number: int, line: str, error: Optional[str]) -> None:
        self.first_line = self.first_line or number
        if self.problem:
            return
        if error:
            self.undecodable = True
            return self._fail(number, error)
        if line.startswith("#"):
            key, sep, value = line[1:].partition("=")
            if sep:
                self.meta[key.strip()] = value.strip()
            return
        cols = line.split("\t")
        if len(cols) != 10:
            return self._fail(number, f"expected 10 tab-separated columns, got {len(cols)}")
        if _RANGE_OR_EMPTY_NODE.match(cols[0]):
            return
        try:
            token_id, head = int(cols[0]), int(cols[6])
        except ValueError:
            return self._fail(number, f"ID and HEAD must be integers, got {cols[0][:20]!r} and {cols[6][:20]!r}")
        if token_id != len(self.tokens) + 1:
            return self._fail(number, f"ID {token_id} out of order (expected {len(self.tokens) + 1})")
        if head < 0 or head == token_id:
            return self._fail(number, f"HEAD {head} of word {token_id} is not another word or 0")
        self.tokens.append(Token(token_id, cols[1], cols[2], cols[3], head, cols[7]))
        self._line_of[token_id] = number

    def _fail(self, number: int, message: str) -> None:
        self.problem, self.problem_line = f"line {number}: {message}", number

    def finish(self) -> ConlluSentence:
        if not self.problem:
            n = len(self.tokens)
            beyond = [t for t in self.tokens if t.head > n]
            if beyond:
                t = beyond[0]
                self._fail(self._line_of[t.id], f"HEAD {t.head} of word {t.id} is beyond the "
                                                   f"sentence's {n} words")
        return ConlluSentence(dict(self.meta), tuple(self.tokens), self.first_line, self.problem,
                              self.problem_line, self.undecodable)


def read_conllu(lines: Iterable[str]) -> Iterator[Tuple[Dict[str, str], Tuple[Token, ...]]]:
    """(comments, tokens) per sentence of trusted CoNLL-U (tests, round trips); the first
    malformed line raises ValueError naming it. The pipeline reads with conllu_sentences,
    which turns a malformed sentence into a reject instead."""
    for sentence in conllu_sentences((n, line, None) for n, line in enumerate(lines, 1)):
        if sentence.problem:
            raise ValueError(f"CoNLL-U {sentence.problem}")
        yield sentence.meta, sentence.tokens


def conllu_file_problem(path: str, max_lines: int = 1000) -> Optional[str]:
    """Why a file is not CoNLL-U at all, judged on its first `max_lines` lines, or None.
    Cheap enough for preflight: a file none of whose first word lines has 10
    tab-separated columns (a JSON or CSV file given as parses, an empty file) is a user
    error, not thousands of malformed sentences; single bad lines are the reader's."""
    word_lines = 0
    for line in read_numbered_lines(path):
        if line.number > max_lines:
            break
        if line.error or line.text.startswith("#"):
            continue
        word_lines += 1
        if len(line.text.rstrip("\r\n").split("\t")) == 10:
            return None
    if not word_lines:
        return f"{path} is not CoNLL-U: no readable word line in its first {max_lines} lines"
    return (f"{path} is not CoNLL-U: none of its first {word_lines} word lines has 10 "
            "tab-separated columns")


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

# spaCy's English pipelines (en_core_web_*) are trained on OntoNotes with ClearNLP labels,
# not Universal Dependencies: "cut the cake" has `dobj`, and "ride on the horse" hangs the
# noun under the preposition (ride -prep-> on -pobj-> horse) where UD hangs it under the
# verb (ride -obl-> horse -case-> on). Whatever reads Tokens reads UD, so a ClearNLP parse
# is converted here: the renames below, and each prep/pobj pair turned round. Labels UD
# shares (nsubj, amod, det, conj, xcomp, ...) and those of a UD-trained pipeline pass
# unchanged. Copulas are not turned round ("be nice": `be` stays the root).
_CLEAR_TO_UD = {
    "dobj": "obj", "dative": "iobj", "nsubjpass": "nsubj:pass", "csubjpass": "csubj:pass",
    "auxpass": "aux:pass", "poss": "nmod:poss", "prt": "compound:prt", "neg": "advmod",
    "acomp": "xcomp", "oprd": "xcomp", "npadvmod": "obl:npmod", "relcl": "acl:relcl",
    "quantmod": "advmod", "predet": "det:predet", "preconj": "cc:preconj", "intj": "discourse",
    "attr": "obj", "meta": "dep",
}
_PREPOSITIONS = ("prep", "agent", "dative")     # "dative" when it is the "to" of "give it to her"
_CLAUSAL_HEADS = ("VERB", "AUX", "ADJ", "ADV")


def tokens_from_spacy(doc) -> Tuple[Token, ...]:
    """A spaCy Doc (one sentence) as Tokens in UD form; spaCy's ROOT label becomes `root`
    and ClearNLP labels become UD's (above)."""
    words = [tok for tok in doc if not tok.is_space]
    number = {tok.i: n for n, tok in enumerate(words, 1)}
    upos = {number[t.i]: t.pos_ for t in words}
    head = {number[t.i]: 0 if t.head.i == t.i or t.head.i not in number else number[t.head.i]
            for t in words}
    dep = {number[t.i]: "root" if t.dep_.upper() == "ROOT" else t.dep_ for t in words}
    for word in list(head):
        if dep[word] not in _PREPOSITIONS or (dep[word] == "dative" and upos[word] != "ADP"):
            continue
        objects = [k for k in head if head[k] == word and dep[k] in ("pobj", "pcomp")]
        if not objects:
            continue
        target, governor = objects[0], head[word]
        clausal = upos.get(governor) in _CLAUSAL_HEADS or governor == 0
        if dep[target] == "pcomp":         # "before going home": a clause the preposition marks
            dep[target] = "advcl" if clausal else "acl"
            dep[word] = "mark"
        else:
            dep[target] = "obl" if clausal else "nmod"
            dep[word] = "case"
        head[target], head[word] = governor, target
        for other in objects[1:]:
            head[other] = target
    out = []
    for tok in words:
        n = number[tok.i]
        out.append(Token(n, tok.text, tok.lemma_ or tok.text.lower(), tok.pos_, head[n],
                         _CLEAR_TO_UD.get(dep[n], dep[n])))
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


def _spacy_folder(model: str) -> str:
    if os.path.isdir(model):
        return model
    import importlib.util
    spec = importlib.util.find_spec(model)
    if spec is None or not spec.submodule_search_locations:
        raise ParserError(f"{MODEL_KEY}: spaCy pipeline {model!r} is neither a folder nor an "
                          "installed package (nothing is downloaded at run time)")
    return list(spec.submodule_search_locations)[0]


def _library_version(backend: str) -> str:
    """The installed spaCy or Stanza version (the string its `__version__` holds), read
    from the package's metadata: importing spaCy to ask costs ~2 CPU s, and a build
    whose parses all come from the cache (or that parses nothing) never loads it."""
    from importlib import metadata
    try:
        return metadata.version(backend)
    except metadata.PackageNotFoundError:
        raise ParserError(f"{PARSER_KEY}: {backend} is not installed") from None


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
        identity = {"backend": backend, "model": model, "library_version": _library_version(backend),
                    "weights_sha256": folder_sha256(folder)}
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


def conllu_index(lines: Iterable[Tuple[int, str, Optional[str]]]) -> Iterator[Tuple[str, ConlluSentence]]:
    """(normalised action text, sentence) per sentence of a CoNLL-U file; a malformed
    sentence keeps the text of its `# text` comment (or of the words read before its bad
    line), so the action it was meant for can say why it has no parse."""
    for sentence in conllu_sentences(lines):
        yield normalise_text(sentence_text(sentence.meta, sentence.tokens)), sentence
