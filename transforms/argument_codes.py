"""The 4-code argument structure of an action from its dependency parse (§3.2, A.3, Table 4).

    code1  the main verb, lemmatised
    code2  the main verb's direct/indirect objects; when it has none, its other
           complements (obl: "sit on the wall" -> wall)
    code3  the verb of the coordinate or subordinate clause (conj, xcomp, advcl, ccomp,
           parataxis of the main verb), lemmatised
    code4  the nouns in complement positions (obj, iobj, obl) of that second verb

Nouns keep their surface form (§3.2 fn. 6: "player" and "players" look different), with
their compound modifiers ("ski poles", "baseball game"). Rules the paper's Table 4 shows:
- catenative verbs are not the action: "try to get the woman's attention" -> get; "tell
  the girl i hope she enjoys her pizza" -> code3 enjoy (CATENATIVE);
- a quantity noun gives way to what it measures: "order a slice of pizza" -> pizza;
- coordinated verbs share a trailing object: "buy and eat a banana" -> banana twice;
- code4 holds nouns only: "give it to the dog" -> dog.
Reads only schemas.bd2bb.Token, so spaCy, Stanza and CoNLL-U parses give the same codes.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from spacy.lang.en.stop_words import STOP_WORDS

from schemas.bd2bb import Codes, Token

VERB = "VERB"
NOUNS = ("NOUN", "PROPN")
PRONOUNS = ("PRON",)
OBJECTS = ("obj", "iobj")
COMPLEMENTS = ("obj", "iobj", "obl")
CLAUSES = ("conj", "xcomp", "advcl", "ccomp", "parataxis")
CATENATIVE = frozenset({"try", "want", "need", "attempt", "hope", "wish", "decide", "plan",
                        "like", "love"})
QUANTITY = frozenset({"slice", "piece", "bite", "cup", "glass", "bottle", "bowl", "plate",
                      "bit", "pair", "bunch", "lot", "couple", "box", "bag", "can", "mug"})
NOUN_COMPOUNDS = ("compound", "flat")


def _base(deprel: str) -> str:
    return deprel.split(":", 1)[0]


class _Tree:
    def __init__(self, tokens: Sequence[Token]):
        self.tokens = {t.id: t for t in tokens}
        self.children: Dict[int, List[Token]] = {}
        for t in sorted(tokens, key=lambda t: t.id):
            self.children.setdefault(t.head, []).append(t)

    def kids(self, token: Token, deprels=None) -> List[Token]:
        kids = self.children.get(token.id, [])
        if deprels is None:
            return kids
        return [k for k in kids if _base(k.deprel) in deprels and k.deprel != "compound:prt"]

    def root(self):
        roots = self.children.get(0, [])
        return roots[0] if roots else None

    def phrase(self, noun: Token) -> str:
        """The noun with the compound nouns before it: "ski poles", "baseball game"."""
        parts = [k for k in self.kids(noun) if k.deprel in NOUN_COMPOUNDS and k.id < noun.id
                 and k.upos in NOUNS + ("NUM",)]
        return " ".join(t.form for t in parts + [noun])

    def measured(self, noun: Token) -> Token:
        """"a slice of pizza" -> pizza: the nmod a quantity noun measures."""
        if noun.lemma.lower() in QUANTITY:
            for k in self.kids(noun, ("nmod",)):
                if k.upos in NOUNS:
                    return k
        return noun

    def with_conjuncts(self, heads: List[Token]) -> List[Token]:
        """"grab the bat and the ball" -> bat, ball."""
        out = []
        for h in heads:
            out.append(h)
            out += [k for k in self.kids(h, ("conj",)) if k.upos in NOUNS + PRONOUNS]
        return out


def _unwrap(tree: _Tree, verb: Token) -> Tuple[Token, List[Token]]:
    """Follow catenative verbs to the verb of the action; also return the catenatives
    passed, whose other clauses may hold the second verb."""
    passed = []
    while verb.lemma.lower() in CATENATIVE:
        inner = [k for k in tree.kids(verb, ("xcomp", "ccomp")) if k.upos == VERB]
        if not inner:
            break
        passed.append(verb)
        verb = inner[0]
    return verb, passed


def _nouns(tree: _Tree, heads: List[Token], allowed) -> Tuple[str, ...]:
    out = []
    for head in tree.with_conjuncts(heads):
        head = tree.measured(head)
        if head.upos in allowed:
            phrase = tree.phrase(head)
            if phrase not in out:
                out.append(phrase)
    return tuple(out)


def extract_codes(tokens: Sequence[Token]) -> Codes:
    """The 4 codes of one parsed action; Codes() when the tree has no verbal root."""
    if not tokens:
        return Codes()
    tree = _Tree(tokens)
    root = tree.root()
    if root is None or root.upos != VERB:
        return Codes()
    main, passed = _unwrap(tree, root)
    objects = tree.kids(main, OBJECTS)
    code2 = _nouns(tree, objects or tree.kids(main, ("obl",)), NOUNS + PRONOUNS)

    inner_ids = {t.id for t in passed[1:]} | {main.id}
    clauses = [k for v in [main] + passed for k in tree.kids(v, CLAUSES)
               if k.upos == VERB and k.id not in inner_ids]
    if not clauses:
        return Codes(main.lemma.lower(), code2, "", ())
    second, _ = _unwrap(tree, min(clauses, key=lambda t: t.id))
    complements = tree.kids(second, COMPLEMENTS)
    if (not tree.kids(second, OBJECTS) and _base(second.deprel) == "conj"
            and any(o.id > second.id for o in objects)):
        complements = complements + [o for o in objects if o.id > second.id]  # shared object
    code4 = _nouns(tree, sorted(complements, key=lambda t: t.id), NOUNS)
    return Codes(main.lemma.lower(), code2, second.lemma.lower(), code4)


def has_noun_or_pronoun(tokens: Sequence[Token]) -> bool:
    """§3.1: an action must contain a noun or a pronoun (UPOS NOUN, PROPN or PRON)."""
    return any(t.upos in NOUNS + PRONOUNS for t in tokens)


def verbs_of(codes: Codes) -> frozenset:
    """The verbs a vision decoy may not share with its target (code1, code3; §4)."""
    return frozenset(v for v in (codes.code1, codes.code3) if v)


def nouns_of(codes: Codes) -> frozenset:
    """The nouns a language decoy may not share with its target (code2, code4; §4).
    Compared word by word in lower case, so "ski poles" and "poles" share a noun."""
    return frozenset(w for phrase in codes.code2 + codes.code4 for w in phrase.lower().split()
                     if w not in STOP_WORDS)  # pronouns ("it", "someone") name no entity
