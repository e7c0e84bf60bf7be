"""Splitting a fine-grained caption into <d'_c, d'_g> (F12, §3.2.3(1)) and the rule-based
merge that puts a detail back into its caption (F13's stand-in for the paper's GPT-2).

F12, in the paper's words: spaCy parses each fine-grained text; "we mainly use two types
of structure to construct d_g': adjective-noun structure and Prepositional Phrase ...
we split 'a young boy play a frisbee on top of a mountain.' into 'a young boy play a
frisbee.' and 'it is on top of a mountain.'". The rules here, over a parsed spaCy Doc:

- prepositional phrase: a `prep` whose whole subtree is one span that closes the sentence
  (only final punctuation after it), the outermost such (`on top of a mountain`, not
  `of a mountain`), leaving at least two words: d'_c is the rest, d'_g
  "it is <phrase>." (the form of Table 1's row 1 and of Figure 4's "it is at night");
- adjective-noun: a single-word `amod` adjective (no modifiers or conjuncts of its own)
  of a noun: d'_c is the caption without it, d'_g "the <noun> is|are <adjective>." with
  the noun's compound words ("the tennis racket is red.", row 3's form); a/an before
  the gap is mended ("an old man" -> "a man").
`splits(doc)` lists every candidate in that order; `split_fine_grained(doc)` takes the
first, so a caption with a closing prepositional phrase gives that one, as in the paper.

F13: `merge_rule_based(d_c, d_g)` reads d_g by the prompt that produced it (Table 1) and
puts its content where a one-sentence caption carries it:
- "it is X" / "it's X" / "they are X"       -> d_c X            ("... on a sidewalk at night")
- "there is|are X"                           -> d_c with X
- "the N is|are A" (A one word or "A and B") -> A before N in d_c ("a young boy ...")
- "the N is|are P" (any longer predicate)    -> P after N in d_c  ("a dog covered in snow")
- "the color of the N is C"                  -> C before N
- "the man|woman|... wears X" / "... in X"   -> "in X" after the person in d_c
- anything else, or N not in d_c             -> d_c and d_g       (a coordinated clause)
It inverts every F12 split (tests/fg/test_merge_rules.py). d_c's closing punctuation is
kept: "a woman standing on a sidewalk" + "it is at night" gives the paper's own
"a woman standing on a sidewalk at night".
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

_CLOSING = ".!?"
_VOWEL_SOUND = re.compile(r"^[aeiou]", re.IGNORECASE)


# --- F12 ---------------------------------------------------------------------------------

def split_fine_grained(doc) -> Optional[Tuple[str, str]]:
    """The first (d'_c, d'_g) of `splits(doc)`, or None when the caption has neither a
    closing prepositional phrase nor an adjective-noun pair."""
    candidates = splits(doc)
    return candidates[0] if candidates else None


def splits(doc) -> List[Tuple[str, str]]:
    """Every (d'_c, d'_g) the rules allow: the closing prepositional phrase first, then
    each adjective-noun pair in sentence order."""
    found = []
    phrase = _closing_prepositional_phrase(doc)
    if phrase is not None:
        start, end = phrase
        rest = _text(doc, [t for t in doc if not start <= t.i < end])
        found.append((_close(rest), _close("it is " + doc[start:end].text)))
    for adjective in doc:
        if adjective.dep_ == "amod" and adjective.pos_ == "ADJ" and adjective.head.pos_ == "NOUN" \
                and not list(adjective.children) and adjective.i < adjective.head.i:
            noun = adjective.head
            compound = [c for c in noun.lefts if c.dep_ == "compound" and c.i > adjective.i]
            noun_phrase = " ".join([c.text for c in compound] + [noun.text])
            verb = "are" if noun.tag_ in ("NNS", "NNPS") else "is"
            rest = _text(doc, [t for t in doc if t.i != adjective.i], mend_article_at=adjective.i)
            found.append((_close(rest), _close(f"the {noun_phrase} {verb} {adjective.text}")))
    return found


def _closing_prepositional_phrase(doc) -> Optional[Tuple[int, int]]:
    last = len(doc)
    while last > 0 and doc[last - 1].is_punct:
        last -= 1
    for token in doc:   # left to right: the first that qualifies is the outermost
        if token.dep_ != "prep" or token.left_edge.i != token.i:
            continue
        if token.right_edge.i + 1 == last and token.i >= 2 and token.n_rights > 0:
            return token.i, last
    return None


def _text(doc, tokens, mend_article_at: Optional[int] = None) -> str:
    words = []
    for t in tokens:
        if t.is_punct and t.i == len(doc) - 1:
            continue
        word = t.text
        if mend_article_at is not None and t.i == mend_article_at - 1 and word.lower() in ("a", "an"):
            following = next((u for u in tokens if u.i > mend_article_at), None)
            if following is not None:
                word = _article_for(following.text, word)
        words.append(word)
    return " ".join(words)


def _close(sentence: str) -> str:
    sentence = sentence.strip()
    return sentence if sentence.endswith(tuple(_CLOSING)) else sentence + "."


def _article_for(next_word: str, article: str) -> str:
    right = "an" if _VOWEL_SOUND.match(next_word) else "a"
    return right[0].upper() + right[1:] if article[:1].isupper() else right


# --- F13 stand-in ------------------------------------------------------------------------

_IT_IS = re.compile(r"^(?:it is|it's|they are)\s+(?P<rest>.+)$", re.IGNORECASE)
_THERE_IS = re.compile(r"^there (?:is|are)\s+(?P<rest>.+)$", re.IGNORECASE)
_COLOR = re.compile(r"^the colou?r of (?:the )?(?P<noun>.+?) (?:is|are) (?P<rest>.+)$", re.IGNORECASE)
_PERSON = re.compile(r"^the (?P<noun>man|woman|men|women|person|people|boy|girl|lady)\s+"
                     r"(?:wears|wear|is wearing|are wearing|in)\s+(?P<rest>.+)$", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"^the (?P<noun>.+?) (?:is|are) (?P<rest>.+)$", re.IGNORECASE)
_SHORT_ADJECTIVE = re.compile(r"^\w+(?: and \w+)?$")


def merge_rule_based(d_c: str, d_g: str) -> str:
    """One sentence from the caption d_c and the detail d_g (module docstring)."""
    caption = d_c.strip()
    closing = caption[-1] if caption.endswith(tuple(_CLOSING)) else ""
    caption = caption.rstrip(_CLOSING).rstrip()
    detail = d_g.strip().rstrip(_CLOSING).strip()

    merged = None
    if m := _IT_IS.match(detail):
        merged = f"{caption} {m['rest']}"
    elif m := _THERE_IS.match(detail):
        merged = f"{caption} with {m['rest']}"
    elif m := _COLOR.match(detail):
        merged = _before_noun(caption, m["noun"], m["rest"])
    elif m := _PERSON.match(detail):
        merged = _after_noun(caption, m["noun"], "in " + m["rest"])
    elif m := _ATTRIBUTE.match(detail):
        rest = m["rest"]
        merged = (_before_noun(caption, m["noun"], rest) if _SHORT_ADJECTIVE.match(rest)
                  else _after_noun(caption, m["noun"], rest))
    if merged is None:
        merged = f"{caption} and {detail}"
    return merged + closing


def _find_noun(caption: str, noun: str) -> Optional[re.Match]:
    for form in (noun, noun + "s", noun[:-1] if noun.endswith("s") else None):
        if form:
            m = re.search(rf"\b{re.escape(form)}\b", caption, re.IGNORECASE)
            if m:
                return m
    return None


def _before_noun(caption: str, noun: str, words: str) -> Optional[str]:
    m = _find_noun(caption, noun)
    if m is None:
        return None
    head, tail = caption[:m.start()], caption[m.start():]
    article = re.search(r"\b(a|an|A|An)\s+$", head)
    if article:   # "a" + "old man" -> "an old man"
        head = head[:article.start(1)] + _article_for(words, article.group(1)) + " "
    return f"{head}{words} {tail}"


def _after_noun(caption: str, noun: str, words: str) -> Optional[str]:
    m = _find_noun(caption, noun)
    if m is None:
        return None
    return f"{caption[:m.end()]} {words}{caption[m.end():]}"
