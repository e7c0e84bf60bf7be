"""S1: search queries from synsets by Table 1's four heuristics, over every synonym.

    quantities      "two beagles", "some cups"; collective nouns "herd of beagles"
    hypernyms       "flute woodwind"          (non-animal synsets; direct WordNet hypernyms)
    similar words   "banana pear"             (non-animal; see similar_words.py)
    activities      "beagles eating"          (animal synsets)

Plurals are naive, as in the release ("gray wolfs", "doughs", "potatos"). The word lists
are config (collection.queries); `wide` marks the queries App. B searches further
(collective nouns and "two <synset>", fn 12).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, Sequence, Tuple

from pipelines.nlvr2.collection.config import QueriesConfig, SearchConfig
from pipelines.nlvr2.collection.synsets import Synset

QUANTITY, COLLECTIVE, HYPERNYM, SIMILAR, ACTIVITY = (
    "quantity", "collective_noun", "hypernym", "similar_word", "activity")


@dataclass(frozen=True)
class Query:
    text: str
    synset: str        # the synset's name (first lemma), as the release writes it
    wnid: str
    kind: str
    synonym: str
    wide: bool         # App. B's larger caps apply


def plural(phrase: str) -> str:
    """The release's naive plural of a phrase's last word."""
    head, _, last = phrase.rpartition(" ")
    if last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    elif last.endswith("y") and len(last) > 1 and last[-2] not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def synset_queries(synset: Synset, cfg: QueriesConfig, search: SearchConfig,
                   hypernyms: Dict[str, Tuple[str, ...]],
                   similar: Dict[str, Sequence[str]]) -> Iterator[Query]:
    """Every query of one synset, each text once (the first heuristic that makes it wins).
    `similar` maps a synonym to its similar words (empty for animals)."""
    seen = set()

    def query(text, kind, synonym, wide=False):
        if text not in seen:
            seen.add(text)
            return Query(text, synset.name, synset.wnid, kind, synonym, wide)
        return None

    wide_words = set(search.wide_quantity_words)
    collective = cfg.collective_nouns_animal if synset.animal else cfg.collective_nouns_object
    for synonym in synset.lemmas:
        many = plural(synonym)
        made = [query(f"{word} {many}", QUANTITY, synonym, word in wide_words)
                for word in cfg.quantity_words]
        made += [query(f"{noun} {many}", COLLECTIVE, synonym, True) for noun in collective]
        if synset.animal:
            made += [query(f"{many} {verb}", ACTIVITY, synonym) for verb in cfg.activities]
        else:
            if cfg.hypernyms:
                made += [query(f"{synonym} {h}", HYPERNYM, synonym)
                         for h in hypernyms.get(synset.wnid, ()) if h.lower() != synonym.lower()]
            made += [query(f"{synonym} {w}", SIMILAR, synonym) for w in similar.get(synonym, ())]
        yield from (q for q in made if q is not None)
