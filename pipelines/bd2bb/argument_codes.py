"""The 4-code argument structure of an action from its dependency parse (§3.2, A.3, Table 4).

    code1  the main verb, lemmatised
    code2  the main verb's direct and indirect objects (obj, iobj, and a dative "to"
           phrase: "sing happy birthday to the girl" -> happy birthday, girl); when it
           has no object, its other complements (obl: "sit on the wall" -> wall)
    code3  the verb of the coordinate or subordinate clause (conj, xcomp, advcl, ccomp,
           parataxis of the main verb), lemmatised
    code4  §3.2's "other nouns in any complement position of the main or secondary
           verb": the nouns in complement positions (obj, iobj, obl) of the second verb,
           and the nouns attached (nmod, not possessives) to any code2/code4 noun:
           "take a picture of the giraffe" -> code2 picture, code4 giraffe

Nouns keep their surface form (§3.2 fn. 6: "player" and "players" look different), with
their compound modifiers ("ski poles", "baseball game"). Rules the paper's Table 4 shows:
- catenative verbs are not the action: "try to get the woman's attention" -> get; "tell
  the girl i hope she enjoys her pizza" -> code3 enjoy (CATENATIVE);
- a quantity noun gives way to what it measures: "order a slice of pizza" -> pizza;
- coordinated verbs share a trailing object: "buy and eat a banana" -> banana twice;
- code4 holds nouns only: "give it to the dog" -> dog;
- with an object, the main verb's other obl phrases are adjuncts, not complements:
  "call someone for a chat" -> call, someone (no chat); obl:tmod / obl:npmod never count
  ("use that laptop the best way" -> laptop);
- a light verb with an event noun is that event: "take a ride on the motorbike" -> ride,
  motorbike (LIGHT_VERBS x EVENT_NOUNS; "take a trip" stays take, trip as in Table 4).
Actions without a verbal root: a copular/adjectival root with a verb clause is that verb
("be able to talk to the women" -> talk, women); a copular root without one has the
copula as code1 ("be nice to the man" -> be, man). A tree with neither has empty codes,
and action_parses rejects it (no_main_verb): decoy exclusions never see empty codes.
Reads only transforms.text.tokens.Token, so spaCy, Stanza and CoNLL-U parses give the same codes.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from spacy.lang.en.stop_words import STOP_WORDS

from pipelines.bd2bb.records import Codes
from transforms.text.tokens import Token

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
NOT_COMPLEMENTS = ("obl:tmod", "obl:npmod", "nmod:poss", "nmod:tmod", "nmod:npmod")
DATIVE = frozenset({"to"})       # "sing happy birthday to the girl": the indirect object
LIGHT_VERBS = frozenset({"take", "have"})
EVENT_NOUNS = frozenset({"ride", "walk", "swim", "nap", "drive", "stroll", "jog", "look",
                         "peek", "bath", "shower", "dip"})


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
        return [k for k in kids if _base(k.deprel) in deprels and k.deprel != "compound:prt"
                and k.deprel not in NOT_COMPLEMENTS]

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

    def case(self, noun: Token) -> str:
        marks = [k.lemma.lower() for k in self.kids(noun, ("case",))]
        return marks[0] if marks else ""

    def attached(self, nouns: List[Token]) -> List[Token]:
        """Nouns attached to these nouns (nmod, not possessives, not what a quantity noun
        gives way to): "a picture of the giraffe" -> giraffe."""
        out = []
        for noun in self.with_conjuncts(nouns):
            shown = self.measured(noun)
            out += [k for k in self.kids(shown, ("nmod",)) if k.upos in NOUNS]
            if shown is not noun:
                out += [k for k in self.kids(noun, ("nmod",)) if k.upos in NOUNS and k is not shown]
        return out

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


def _verbal_root(tree: _Tree, root: Token) -> Tuple[Token, List[Token], str]:
    """(the token whose dependents are the action's, catenatives passed, code1 override).
    A verbal root is itself; "be able to talk" -> talk (the ADJ root is passed like a
    catenative); "be nice to the man" -> the ADJ root, code1 = the copula's lemma."""
    if root.upos == VERB:
        return root, [], ""
    inner = [k for k in tree.kids(root, ("xcomp", "ccomp")) if k.upos == VERB]
    cops = tree.kids(root, ("cop",))
    if inner and (cops or root.upos in ("ADJ", "AUX")):
        return inner[0], [root], ""
    if cops:
        return root, [], cops[0].lemma.lower()
    return None, [], ""


def extract_codes(tokens: Sequence[Token]) -> Codes:
    """The 4 codes of one parsed action; Codes() when the tree has no main verb
    (neither a verbal root, nor a copular/adjectival root with a verb or a copula)."""
    if not tokens:
        return Codes()
    tree = _Tree(tokens)
    root = tree.root()
    if root is None:
        return Codes()
    head, before, copula = _verbal_root(tree, root)
    if head is None:
        return Codes()
    main, passed = _unwrap(tree, head) if not copula else (head, [])
    passed = before + passed
    code1 = copula or main.lemma.lower()
    objects = tree.kids(main, OBJECTS)
    obliques = tree.kids(main, ("obl",))
    events = [o for o in objects if o.upos in NOUNS and o.lemma.lower() in EVENT_NOUNS]
    if not copula and main.lemma.lower() in LIGHT_VERBS and events:
        event = events[0]                 # "take a ride on the motorbike" -> ride, motorbike
        code1 = event.lemma.lower()
        heads2 = [o for o in objects if o is not event] + obliques + tree.kids(event, ("nmod",))
    elif copula:
        heads2 = ([main] if main.upos in NOUNS + PRONOUNS else []) + obliques
    elif objects:
        heads2 = objects + [o for o in obliques if tree.case(o) in DATIVE]
    else:
        heads2 = obliques
    heads2 = sorted(heads2, key=lambda t: t.id)
    code2 = _nouns(tree, heads2, NOUNS + PRONOUNS)
    extra = [n for n in tree.attached(heads2) if n not in heads2]   # code4 of the main verb

    inner_ids = {t.id for t in passed[1:]} | {main.id}
    clauses = [k for v in [main] + passed for k in tree.kids(v, CLAUSES)
               if k.upos == VERB and k.id not in inner_ids and k.id != main.id]
    if not clauses:
        return Codes(code1, code2, "", _nouns(tree, sorted(extra, key=lambda t: t.id), NOUNS))
    second, _ = _unwrap(tree, min(clauses, key=lambda t: t.id))
    complements = tree.kids(second, COMPLEMENTS)
    if (not tree.kids(second, OBJECTS) and _base(second.deprel) == "conj"
            and any(o.id > second.id for o in objects)):
        complements = complements + [o for o in objects if o.id > second.id]  # shared object
    complements = complements + [n for n in tree.attached(complements) if n not in complements]
    code4 = _nouns(tree, sorted(extra + complements, key=lambda t: t.id), NOUNS)
    return Codes(code1, code2, second.lemma.lower(), code4)


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
