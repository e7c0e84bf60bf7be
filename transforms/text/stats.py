"""Language statistics of a benchmark's texts, per split: tokens, word types, sentences,
dependency-tree depth.

Definitions (each chosen so that public released texts reproduce the published figures,
see tests/transforms/test_text_stats.py):

- **token**: a token of spaCy's rule-based English tokenizer (``spacy.blank("en")``, no
  model) that is not whitespace. Whitespace tokens (double spaces, trailing newlines) are
  not words; counting them would give 23.4 tokens per description instead of Table 4's 23.3.
- **sentence**: a span of the rule-based "sentencizer" holding at least one token
  (a whitespace-only tail is not a sentence).
- **word type**: a distinct lower-cased token that is neither whitespace nor punctuation
  (numbers and clitics such as "n't" count). Lower-casing is what Table 4's 6,916 needs:
  train + valid give 6,603 such types, and a Heaps'-law extrapolation to all 21,202
  descriptions (the test descriptions are unreleased) gives about 6,930; case-sensitive
  forms are already 7,400 on train + valid, above the paper's figure for the whole corpus.
- **tree depth** of a sentence: the number of tokens on the longest root-to-leaf path of
  its dependency tree, so **the root has depth 1** (a one-word sentence has depth 1;
  "Dogs run ." has depth 2, "A dog runs ." depth 3); subtract 1 for the edge-counting
  convention. The paper does not define it, and with no parser here its 5.1 could not be
  checked. The mean is over the parser's sentences (a parser sets its own boundaries).
  Depth needs a trained parser (config ``stats.parser``); with none it is None, never
  estimated.

The Beam side accumulates counts and one set of word types per split (bounded by the
vocabulary), so no split's texts are ever collected in one place.
"""
from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional, Set

import apache_beam as beam

PARSER_KEY = "stats.parser"
# Share of descriptions with at least this many sentences (§4.2 quotes 11.8% for 3+).
MANY_SENTENCES = 3


class ParserNotInstalled(RuntimeError):
    """The configured spaCy parser cannot be loaded (nothing is downloaded at run time)."""


# --- spaCy pipelines ---------------------------------------------------------------------

def tokenizer_nlp():
    """Rule-based English tokenizer + sentencizer: no model, nothing to download."""
    import spacy
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def _missing(name: str) -> ParserNotInstalled:
    return ParserNotInstalled(
        f"{PARSER_KEY}: spaCy model {name!r} is not installed (no download at run time): "
        f"install its package into the environment or the worker image, set {PARSER_KEY} "
        f"to the path of a saved pipeline, or set it to null to skip tree depth")


def check_parser(name: Optional[str]) -> None:
    """Fail before any work when `name` is neither an installed package nor a path. Asks
    the package metadata, as spacy.util.is_package does, without importing spaCy (~0.9 s
    of every build's start-up, whether or not a description is parsed)."""
    if name and not (_is_installed(name) or os.path.isdir(name)):
        raise _missing(name)


def _is_installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def load_parser(name: Optional[str]):
    """The spaCy pipeline for tree depth, or None when `name` is None."""
    if not name:
        return None
    import spacy
    try:
        return spacy.load(name)
    except OSError as err:  # spaCy's "Can't find model" is an OSError (E050)
        raise _missing(name) from err


# --- per-document measures ---------------------------------------------------------------

def words(doc) -> List:
    """The tokens that count: everything but whitespace."""
    return [token for token in doc if not token.is_space]


def sentences(doc) -> List:
    """The sentences that hold at least one token."""
    return [sent for sent in doc.sents if any(not token.is_space for token in sent)]


def word_types(doc) -> Set[str]:
    return {token.lower_ for token in doc if not (token.is_space or token.is_punct)}


def tree_depth(sent) -> int:
    """Tokens on the longest root-to-leaf path (root = depth 1); 0 for an empty span."""
    # A token's depth is 1 + its number of ancestors; the deepest leaf gives the tree's.
    return max((1 + sum(1 for _ in token.ancestors) for token in sent if not token.is_space),
               default=0)


def doc_depths(doc) -> List[int]:
    """Tree depth of each non-empty sentence of a parsed Doc."""
    return [tree_depth(sent) for sent in sentences(doc)]


# --- the accumulator (shared by the pure function and the CombineFn) ---------------------

@dataclass
class LanguageCounts:
    descriptions: int = 0
    tokens: int = 0
    sentences: int = 0
    many_sentences: int = 0            # descriptions with >= MANY_SENTENCES sentences
    types: Set[str] = field(default_factory=set)
    depth_sum: int = 0
    depth_sentences: int = 0           # sentences the parser measured
    parsed: bool = False               # whether depth was computed at all

    def add_doc(self, doc) -> None:
        n_sentences = len(sentences(doc))
        self.descriptions += 1
        self.tokens += len(words(doc))
        self.sentences += n_sentences
        self.many_sentences += n_sentences >= MANY_SENTENCES
        self.types |= word_types(doc)

    def add_parse(self, parsed_doc) -> None:
        depths = doc_depths(parsed_doc)
        self.parsed = True
        self.depth_sum += sum(depths)
        self.depth_sentences += len(depths)

    def merge(self, other: "LanguageCounts") -> "LanguageCounts":
        self.descriptions += other.descriptions
        self.tokens += other.tokens
        self.sentences += other.sentences
        self.many_sentences += other.many_sentences
        self.types |= other.types
        self.depth_sum += other.depth_sum
        self.depth_sentences += other.depth_sentences
        self.parsed = self.parsed or other.parsed
        return self

    def summary(self) -> dict:
        n = self.descriptions
        return {
            "descriptions": n,
            "mean_tokens": self.tokens / n if n else None,
            "word_types": len(self.types),
            "mean_sentences": self.sentences / n if n else None,
            "share_3plus_sentences": self.many_sentences / n if n else None,
            # None = not computed (no parser configured), not zero.
            "mean_tree_depth": (self.depth_sum / self.depth_sentences
                                if self.parsed and self.depth_sentences else None),
        }


def _parse_all(parser, texts: List[str]) -> Iterable:
    pipe: Optional[Callable] = getattr(parser, "pipe", None)
    return pipe(texts) if pipe is not None else map(parser, texts)


def count_texts(texts: Iterable[str], nlp_tokens, parser=None,
                counts: Optional[LanguageCounts] = None) -> LanguageCounts:
    """Add `texts` to `counts` (a new one if None); batched through nlp.pipe."""
    counts = counts if counts is not None else LanguageCounts()
    texts = list(texts)
    for doc in nlp_tokens.pipe(texts):
        counts.add_doc(doc)
    if parser is not None:
        for parsed in _parse_all(parser, texts):
            counts.add_parse(parsed)
    return counts


def language_stats(texts: Iterable[str], nlp_tokens, parser=None) -> dict:
    """Table 4 figures for one split. `parser`: a spaCy Language (or any text -> parsed
    Doc callable); None reports mean_tree_depth as None."""
    return count_texts(texts, nlp_tokens, parser).summary()


# --- Beam ------------------------------------------------------------------------------

class LanguageStatsFn(beam.CombineFn):
    """Combines description texts into one split's Table 4 figures."""

    def __init__(self, parser_name: Optional[str] = None):
        self.parser_name = parser_name
        self._nlp = None
        self._parser = None

    def _load(self):
        # On first use, not in setup(): a lifted combine runs this CombineFn in three
        # stages (add, merge, extract), and only the one that adds texts needs spaCy.
        if self._nlp is None:
            self._nlp = tokenizer_nlp()
            self._parser = load_parser(self.parser_name)

    def create_accumulator(self):
        return LanguageCounts()

    def add_input(self, counts, text):
        return self.add_inputs(counts, [text])

    def add_inputs(self, counts, texts):
        self._load()
        return count_texts(texts, self._nlp, self._parser, counts)

    def merge_accumulators(self, accumulators):
        accumulators = iter(accumulators)
        merged = next(accumulators, None) or LanguageCounts()
        for counts in accumulators:
            merged.merge(counts)
        return merged

    def extract_output(self, counts):
        return counts.summary()


class LanguageStatsPerSplit(beam.PTransform):
    """(split, description) pairs -> (split, figures dict) per split."""

    def __init__(self, parser_name: Optional[str] = None):
        super().__init__()
        check_parser(parser_name)  # a missing model fails at construction, before any work
        self.parser_name = parser_name

    def expand(self, pairs):
        return pairs | "LanguageStats" >> beam.CombinePerKey(LanguageStatsFn(self.parser_name))
