"""F8-F14 (§3.2.2-§3.2.3): nouns, prompts, details, CLIPScore filters, merge, best pick.

    coarse Caption -> prompts (Table 1, one Candidate per template and noun)   stage prompts
      -> d_g for each prompt (generator or the user's file)                     stage details
      -> keep d_n = <d_c, d_g> only if its CLIPScore beats the original's        stage filter1
      -> d_f = merge(d_c, d_g)                                                   stage merge
      -> keep d_f only if its CLIPScore beats the original's                     stage filter2
      -> per caption the candidate with the highest CLIPScore; a caption with no
         surviving candidate stays as it was (no_candidate)                      stage pick

Every stage counts level "candidate" (and prompts and pick also "caption"), so what one
stage passes on the next takes in (pipeline.stage_links). CLIPScore follows Hessel et
al.'s reference code: the prefix "A photo depicts ", w * max(cos, 0).
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List

import numpy as np

from pipelines.fg import reasons
from pipelines.fg.records import Candidate, Caption
from pipelines.fg.tagger import NONE, load_tagger, nouns_of_texts
from transforms.core.precision import rounded
from transforms.core.stage import StageFn
from transforms.image.clipscore import clipscore, with_prefix
from transforms.image.decode import read_image
from transforms.image.encoders import EncoderSpec
from transforms.image.text_encoders import build_text_encoder


# CLIPScores closer than this are a tie: the encoders compute in float32, so a text that
# adds nothing the encoder sees can differ from the original by rounding alone.
SCORE_TOLERANCE = 1e-6


class _TextEncoding:
    """A text encoder built once per worker from the spec (not pickled)."""

    def _text_encoder(self):
        encoder = self.__dict__.get("_encoder")
        if encoder is None:
            encoder = self.__dict__["_encoder"] = build_text_encoder(self._spec)
        return encoder

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_encoder", None)
        return state


def score_texts(encoder, texts: List[str], images: List[np.ndarray], prefix: str,
                weight: float) -> np.ndarray:
    """CLIPScore of each (image, text) pair."""
    vectors = encoder.encode([with_prefix(t, prefix) for t in texts])
    return clipscore(np.stack(images), vectors, weight)


class EncodeCaptions(_TextEncoding, StageFn):
    """Batches of Captions -> each with its retrieval embedding (the plain text, F2/F4/F7;
    taken from `precomputed` {text: vector} when it holds the text) and the CLIPScore of
    the original with its image (the baseline of F11 and F14: always the text tower,
    since it needs the prefixed text). Stage "embed_text", level "caption"."""
    stage, level = "embed_text", "caption"
    counts_in = False

    def __init__(self, spec: EncoderSpec, prefix: str, weight: float):
        self._spec, self._prefix, self._weight = spec, prefix, weight

    def judge(self, batch: List[Caption], images: Dict[str, np.ndarray], precomputed=None):
        self.counts.seen(len(batch), level=self.level)
        encoder = self._text_encoder()
        plain = encoder.encode([c.text for c in batch])
        if precomputed:
            plain = np.stack([precomputed.get(c.text, own) for c, own in zip(batch, plain)])
        scores = score_texts(encoder, [c.text for c in batch], [images[c.image_id] for c in batch],
                             self._prefix, self._weight)
        for caption, vector, score in zip(batch, plain, scores):
            yield dataclasses.replace(caption, embedding=vector, score=float(score))


class MakePrompts(StageFn):
    """F8 + F9: batches of coarse Captions -> per caption, one Candidate per (template,
    noun) of Table 1 (prompts.prompts_for), nouns from the tagger (a batch tagged at
    once); `no_prompt` when none applies."""
    stage, level = "prompts", "caption"
    counts_in = counts_out = False

    def __init__(self, tagger: str, templates: List[int]):
        self._tagger, self._templates = tagger, tuple(templates)

    def judge(self, batch: List[Caption]):
        from pipelines.fg.prompts import prompts_for
        self.counts.seen(len(batch), level=self.level)
        texts = [caption.text for caption in batch]
        tagged = [[] for _ in texts] if self._tagger == NONE else nouns_of_texts(self._tagger, texts)
        for caption, nouns in zip(batch, tagged):
            prompts = [p for p in prompts_for(caption.text, nouns) if p.template in self._templates]
            if not prompts:
                yield self.reject(reasons.NO_PROMPT, caption.key,
                                  detail=f"nouns {nouns}: no template of {list(self._templates)} applies")
                continue
            self.counts.count_out(level=self.level)
            self.counts.seen(len(prompts), level="candidate")
            self.counts.count_out(len(prompts), level="candidate")
            for p in prompts:
                yield Candidate(caption.image_id, caption.index, caption.text, caption.score,
                                p.template, p.noun, p.words)


class GenerateDetails(StageFn):
    """F10: Candidate -> with d_g from the generator (generators.StandinDetails or
    ModelDetails); `no_detail` when it gives nothing. Side input: target paths."""
    stage, level = "details", "candidate"

    def __init__(self, make_generator):
        self._make = make_generator

    def _generator(self):
        generator = self.__dict__.get("_built")
        if generator is None:
            generator = self.__dict__["_built"] = self._make()
        return generator

    def _image(self, path: str) -> np.ndarray:
        cached = self.__dict__.get("_last_image")
        if cached is None or cached[0] != path:
            cached = self.__dict__["_last_image"] = (path, read_image(path)[0])
        return cached[1]

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_built", None)
        state.pop("_last_image", None)
        return state

    def judge(self, candidate: Candidate, paths: Dict[str, str]):
        detail = self._generator().generate(self._image(paths[candidate.image_id]),
                                            candidate.original, candidate.template, candidate.prompt)
        if not detail.strip():
            yield self.reject(reasons.NO_DETAIL, candidate.label, detail="the generator gave nothing")
            return
        yield dataclasses.replace(candidate, detail=detail.strip())


class ClipScoreFilter(_TextEncoding, StageFn):
    """F11 / F14: batches of Candidates -> those whose text (d_n, or d_f with
    `merged=True`) has a CLIPScore above the original caption's (equal too with
    `ties_pass`; equal = within SCORE_TOLERANCE); the others are rejects
    `clipscore_not_higher`."""
    level = "candidate"
    counts_in = False

    def __init__(self, stage: str, spec: EncoderSpec, prefix: str, weight: float,
                 ties_pass: bool, merged: bool):
        self.stage = stage
        self._spec, self._prefix, self._weight = spec, prefix, weight
        self._ties_pass, self._merged = ties_pass, merged

    def judge(self, batch: List[Candidate], images: Dict[str, np.ndarray]):
        self.counts.seen(len(batch), level=self.level)
        texts = [c.merged if self._merged else c.text for c in batch]
        scores = score_texts(self._text_encoder(), texts, [images[c.image_id] for c in batch],
                             self._prefix, self._weight)
        for candidate, text, score in zip(batch, texts, scores.tolist()):
            field = "merged_score" if self._merged else "detail_score"
            candidate = dataclasses.replace(candidate, **{field: score})
            gain = score - candidate.original_score
            better = gain > SCORE_TOLERANCE or (self._ties_pass and gain >= -SCORE_TOLERANCE)
            if not better:
                yield self.reject(reasons.CLIPSCORE_NOT_HIGHER, candidate.label,
                                  detail=f"{rounded(score)} vs original {rounded(candidate.original_score)}: {text[:120]}")
                continue
            yield candidate


class MergeSentences(StageFn):
    """F13: Candidate -> with d_f = merger.merge(d_c, d_g); `merge_failed` when the
    merger gives nothing."""
    stage, level = "merge", "candidate"

    def __init__(self, make_merger):
        self._make = make_merger

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_built", None)
        return state

    def judge(self, candidate: Candidate):
        merger = self.__dict__.get("_built")
        if merger is None:
            merger = self.__dict__["_built"] = self._make()
        merged = merger.merge(candidate.original, candidate.detail)
        if not merged:
            yield self.reject(reasons.MERGE_FAILED, candidate.label,
                              detail=f"no sentence from {candidate.original!r} + {candidate.detail!r}")
            return
        yield dataclasses.replace(candidate, merged=merged)


def best_first(candidate: Candidate):
    """The pick order: highest CLIPScore of d_f (§3.2.3(4)); among equal scores (the paper
    does not say) the shortest sentence, the smallest change, then template, noun, text."""
    return (-candidate.merged_score, len(candidate.merged.split()), candidate.template,
            candidate.noun, candidate.merged)


class PickBest(StageFn):
    """F14 (pick): (caption key, {"caption": [Caption], "candidates": [Candidate]}) ->
    the best surviving Candidate per coarse caption. Levels: "caption" (no_candidate:
    the caption stays unchanged) and "candidate" (not_best)."""
    stage, level = "pick", "caption"

    def judge(self, keyed):
        key, groups = keyed
        candidates = sorted(groups["candidates"], key=best_first)
        self.counts.seen(len(candidates), level="candidate")
        if not groups["caption"]:   # cannot happen: every candidate comes from a coarse caption
            raise ValueError(f"candidates for {key} without its coarse caption")
        if not candidates:
            yield self.reject(reasons.NO_CANDIDATE, key,
                              detail="no candidate survived the CLIPScore filters: unchanged")
            return
        best, rest = candidates[0], candidates[1:]
        self.counts.count_out(level="candidate")
        for other in rest:
            yield self.reject(reasons.NOT_BEST, other.label, level="candidate",
                              detail=f"{rounded(other.merged_score)} <= picked {rounded(best.merged_score)}")
        yield best


class SplitFineGrained(StageFn):
    """F12 (§3.2.3(1)): a fine-grained Caption -> a merge-training pair
    {"input": "<d'_c> <d'_g>", "target": caption} (merge_rules.split_fine_grained over
    the parse); `no_split` when the rules find no adjective-noun pair or prepositional
    phrase to split off."""
    stage, level = "merge_training", "caption"

    def __init__(self, tagger: str):
        self._tagger = tagger

    def judge(self, caption: Caption):
        from pipelines.fg.merge_rules import split_fine_grained
        parts = split_fine_grained(load_tagger(self._tagger)(caption.text))
        if not parts:
            yield self.reject(reasons.NO_SPLIT, caption.key, detail=caption.text[:200])
            return
        d_c, d_g = parts
        yield {"image_id": caption.image_id, "caption_index": caption.index,
               "input": f"{d_c.strip()} {d_g.strip()}", "target": caption.text}
