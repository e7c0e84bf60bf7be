"""Calibrate NLVR2's similar-words threshold for the MiniLM stand-in (pipelines/nlvr2/collection/similar_words.py).

Positive pairs: two lemmas of the same ILSVRC-1k synset (synonyms are as similar as words
get). Negative pairs: the first lemmas of two different synsets, every pair. The printed
threshold maximises Youden's J (true-positive rate - false-positive rate); run with no
arguments, offline, in a few seconds.
"""
from __future__ import annotations

import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipelines.nlvr2.collection.similar_words import embed, load_encoder  # noqa: E402
from pipelines.nlvr2.collection.synsets import ilsvrc_synsets  # noqa: E402


def main() -> int:
    synsets = ilsvrc_synsets()
    words = sorted({lemma for s in synsets for lemma in s.lemmas})
    index = {w: i for i, w in enumerate(words)}
    vectors = embed(load_encoder(), words)
    positive = [float(vectors[index[a]] @ vectors[index[b]]) for s in synsets
                for a, b in itertools.combinations(s.lemmas, 2) if a != b]
    firsts = np.stack([vectors[index[s.name]] for s in synsets])
    sims = firsts @ firsts.T
    negative = sims[np.triu_indices(len(synsets), k=1)]
    pos = np.sort(np.asarray(positive))
    best = max((float(np.mean(pos > t)) - float(np.mean(negative > t)), t)
               for t in np.round(np.arange(0.05, 0.95, 0.01), 2))
    print(f"{len(pos)} synonym pairs, {len(negative)} cross-synset pairs; "
          f"threshold {best[1]:.2f} (Youden J {best[0]:.3f}; "
          f"TPR {np.mean(pos > best[1]):.3f}, FPR {np.mean(negative > best[1]):.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
