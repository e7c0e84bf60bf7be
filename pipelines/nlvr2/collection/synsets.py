"""The ILSVRC-2014 synsets NLVR2 draws from (§3.1), and the 124 of the release.

The 1,000 ILSVRC-1k classes come from timm's lists (installed with open_clip):
`imagenet_synsets.txt` (wnids in class-index order) and `imagenet_synset_to_lemma.txt`
(wnid -> comma-separated lemmas). A synset's name is its first lemma, which is how the
release names it. Animal synsets are ILSVRC indices below 398 (spec S1a): Table 1 gives
them activities, and hypernyms and similar words only to the others.

The default list is the 124 synsets of the release (data/release_synsets.tsv, provenance
"release"); direct WordNet hypernyms come from data/hypernyms.tsv. Both tables were
derived once by scripts/nlvr2_synset_tables.py (see there how).
"""
from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from transforms.core.errors import ConfigError

# pipelines/nlvr2/data/: the manifest names the tables by that path (collect.model_identities)
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
RELEASE_SYNSETS = os.path.join(DATA, "release_synsets.tsv")
HYPERNYMS = os.path.join(DATA, "hypernyms.tsv")
FIRST_OBJECT_INDEX = 398   # ILSVRC indices 0-397 are animals


@dataclass(frozen=True)
class Synset:
    index: int                 # ILSVRC-1k class index
    wnid: str
    lemmas: Tuple[str, ...]    # every synonym; the first is the name

    @property
    def name(self) -> str:
        return self.lemmas[0]

    @property
    def animal(self) -> bool:
        return self.index < FIRST_OBJECT_INDEX


def _timm_info(name: str) -> str:
    """A file of timm's class lists, found without importing timm (which imports torch)."""
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.origin:
        raise ConfigError("collection.synsets: the ILSVRC-1k lists come from the timm package "
                          "(installed with open_clip_torch), which is not installed")
    return os.path.join(os.path.dirname(spec.origin), "data", "_info", name)


@functools.lru_cache(maxsize=1)
def ilsvrc_synsets() -> Tuple[Synset, ...]:
    """The 1,000 ILSVRC-1k synsets in class-index order."""
    with open(_timm_info("imagenet_synsets.txt"), encoding="utf-8") as f:
        wnids = [line.strip() for line in f if line.strip()]
    wanted = set(wnids)
    lemmas: Dict[str, Tuple[str, ...]] = {}
    with open(_timm_info("imagenet_synset_to_lemma.txt"), encoding="utf-8") as f:
        for line in f:
            wnid, _, text = line.rstrip("\n").partition("\t")
            if wnid in wanted:
                lemmas[wnid] = tuple(x.strip() for x in text.split(",") if x.strip())
    return tuple(Synset(i, wnid, lemmas[wnid]) for i, wnid in enumerate(wnids))


def _table_rows(path: str) -> List[List[str]]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip() and not line.startswith("#")]


@functools.lru_cache(maxsize=1)
def release_wnids() -> Tuple[str, ...]:
    return tuple(row[1] for row in _table_rows(RELEASE_SYNSETS))


@functools.lru_cache(maxsize=1)
def hypernym_table() -> Dict[str, Tuple[str, ...]]:
    return {row[0]: tuple(x for x in row[1].split(";") if x) if len(row) > 1 else ()
            for row in _table_rows(HYPERNYMS)}


def select_synsets(names: Sequence[str]) -> List[Synset]:
    """`synsets.names` of the config: [] = the 124 of the release; otherwise each entry is
    a wnid or a first lemma of an ILSVRC-1k class (in the order given)."""
    every = ilsvrc_synsets()
    if not names:
        by_wnid = {s.wnid: s for s in every}
        return [by_wnid[w] for w in release_wnids()]
    by_key = {}
    for s in every:
        by_key.setdefault(s.wnid, s)
        by_key.setdefault(s.name, s)
    chosen = []
    for name in names:
        if name not in by_key:
            raise ConfigError(f"collection.synsets.names: {name!r} is neither a wnid nor the first "
                              f"lemma of an ILSVRC-1k class")
        if by_key[name] not in chosen:
            chosen.append(by_key[name])
    return chosen
