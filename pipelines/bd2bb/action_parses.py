"""Parse every action and derive its argument codes (§3.2 "Argument structure", A.3).

    tuples -> unique actions -> parses (CoNLL-U file, or a spaCy/Stanza model through the
    shared cache) -> join back -> Datapoint(tuple, parse, codes)

With a model backend, a parse is cached under cache_key("action_parse", sha256 of the
normalised action, parser fingerprint incl. its weights checksum, {}), so a rebuild with
other thresholds parses nothing it has parsed before. A CoNLL-U file is itself the input
(the manually corrected parses), so it is read, not cached.

An action whose parse gives no main verb (extract_codes: empty code1) leaves as
no_main_verb: empty codes would make the decoy exclusions (§4) pass every candidate.

A malformed CoNLL-U sentence (a line with other than 10 columns, a non-integer ID or
HEAD, a HEAD outside the sentence, bytes that are not UTF-8) is a sentence-level reject
naming the file and line (bad_parse, or bad_encoding), never a crash; the tuples of the
action it was meant for (by its `# text`) leave as bad_parse with the same place, unless
another, well-formed sentence parses that action.

Counters: stage "parse" (tuple.in / tuple.out / tuple.rejected.no_parse / bad_parse /
no_main_verb; sentence.in / out / rejected.* for a CoNLL-U file; action.parsed for model
parses); the cache's own (stage "cache.action_parse": hit, miss, written).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import apache_beam as beam

from pipelines.bd2bb import reasons
from pipelines.bd2bb.argument_codes import extract_codes
from pipelines.bd2bb.records import Datapoint
from transforms.cache.read_through import WRITTEN, ReadThrough
from transforms.cache.store import cache_key, decode_json, encode_json
from transforms.core.stage import MAIN, REJECTS, StageCounts, StageFn, stage_pardo
from transforms.io.lines import read_numbered_lines
from transforms.text.parsers import ModelParser, conllu_index
from transforms.text.tokens import Token, text_key

STAGE = "parse"
CACHE_STAGE = "action_parse"


@dataclass(frozen=True)
class BadSentence:
    """Stands for a malformed CoNLL-U sentence in the join, so its action's tuples can
    say where their parse went wrong."""
    where: str        # "actions.conllu:43"
    problem: str      # "expected 10 tab-separated columns, got 5"


class _ReadConllu(StageFn):
    """A CoNLL-U path -> (text key, tokens) per sentence, (text key, BadSentence) per
    malformed one, and a sentence-level reject for each malformed one."""
    stage, level = STAGE, "sentence"
    # The element is a file, not a sentence; a BadSentence goes on to the join, but its
    # reject is what counts it.
    counts_in = counts_out = False

    def judge(self, path: str):
        lines = ((line.number, line.text, line.error) for line in read_numbered_lines(path))
        for text, sentence in conllu_index(lines):
            self.counts.seen(level="sentence")
            if sentence.problem is None:
                yield self.counts.passed((text_key(text), sentence.tokens), level="sentence")
                continue
            problem = sentence.problem.split(": ", 1)[1]
            where = f"{path}:{sentence.problem_line}"
            if text:
                yield text_key(text), BadSentence(where, problem)
            yield self.reject(reasons.BAD_ENCODING if sentence.undecodable else reasons.BAD_PARSE,
                              text or f"sentence at {path}:{sentence.first_line}",
                              detail=problem, file=path, line=sentence.problem_line)


def _pick_parse(kv):
    """Several sentences with the same text: the first well-formed one by content, on
    every runner; when all are malformed, the first by place."""
    key, parses = kv
    parses = list(parses)
    good = [p for p in parses if not isinstance(p, BadSentence)]
    if good:
        return key, min(good, key=lambda tokens: [(t.id, t.form, t.lemma, t.upos, t.head, t.deprel)
                                                  for t in tokens])
    return key, min(parses, key=lambda bad: (bad.where, bad.problem))


class _ParseWithModel(beam.DoFn):
    def __init__(self, backend: str, model: str):
        self.backend, self.model = backend, model

    def setup(self):
        self.parser = ModelParser(self.backend, self.model)  # once per worker
        self.counts = StageCounts(STAGE)

    def process(self, item):
        key, text = item
        self.counts.work("action.parsed")
        yield key, self.parser.parse(text)


def _tokens_to_json(tokens):
    return [[t.id, t.form, t.lemma, t.upos, t.head, t.deprel] for t in tokens]


def _tokens_from_json(rows):
    return tuple(Token(*row) for row in rows)


def _root_of(tokens) -> str:
    roots = [f"{t.form}/{t.upos}" for t in tokens if t.head == 0]
    return roots[0] if roots else "none"


class _Attach(StageFn):
    """(action key, {tuples, parses}) -> a Datapoint per tuple, or its reject."""
    stage, level = STAGE, "tuple"
    counts_in = False  # the element is an action's group: its tuples are counted in below

    def judge(self, joined):
        _, groups = joined
        parses = list(groups["parses"])
        for t in groups["tuples"]:
            self.counts.seen(level="tuple")
            if not parses:
                yield self.reject(reasons.NO_PARSE, t.tuple_id, source=t.image, **t.place,
                                  detail=f"no parse of {t.action[:200]!r}")
                continue
            if isinstance(parses[0], BadSentence):
                bad = parses[0]
                yield self.reject(reasons.BAD_PARSE, t.tuple_id, source=t.image, **t.place,
                                  detail=f"the parse of {t.action[:200]!r} is malformed: "
                                         f"{bad.where}: {bad.problem}")
                continue
            tokens = parses[0]
            codes = extract_codes(tokens)
            if not codes.code1:   # empty codes would let every decoy exclusion pass (§4)
                yield self.reject(reasons.NO_MAIN_VERB, t.tuple_id, source=t.image, **t.place,
                                  detail=f"no main verb in the parse of {t.action[:200]!r} "
                                         f"(root {_root_of(tokens)})")
                continue
            yield Datapoint(tuple=t, parse=tokens, codes=codes)


class ParseActions(beam.PTransform):
    """BD2BBTuple -> {MAIN: Datapoint with parse and codes, REJECTS: no_parse, bad_parse,
    no_main_verb and malformed CoNLL-U sentences, WRITTEN: cache files}.

    backend "conllu" reads `conllu_path`; "spacy"/"stanza" load `model` on each worker,
    through the cache when `cache_root` is set (`fingerprint` from parsers.parser_identity).
    """

    def __init__(self, backend: str, model: Optional[str] = None, conllu_path: Optional[str] = None,
                 fingerprint: str = "", cache_root: Optional[str] = None, run_id: str = ""):
        super().__init__()
        self.backend, self.model, self.conllu_path = backend, model, conllu_path
        self.fingerprint, self.cache_root, self.run_id = fingerprint, cache_root, run_id

    def expand(self, tuples):
        keyed = tuples | "Key by action" >> beam.Map(lambda t: (t.action_key, t))
        written = None
        if self.backend == "conllu":
            read = (tuples.pipeline | "CoNLL-U path" >> beam.Create([self.conllu_path])
                    | "Read CoNLL-U" >> stage_pardo(_ReadConllu()))
            parses = (read[MAIN] | "Group parses" >> beam.GroupByKey()
                      | "One parse per text" >> beam.Map(_pick_parse))
            sentence_rejects = read[REJECTS]
        else:
            # One text per action key; the smallest spelling, so every runner parses the same.
            unique = (keyed | "Action texts" >> beam.MapTuple(lambda k, t: (k, t.action))
                      | "Group spellings" >> beam.GroupByKey()
                      | "One spelling" >> beam.MapTuple(lambda k, texts: (k, min(texts))))
            parses, written = self._model_parses(unique)
        joined = ({"tuples": keyed, "parses": parses} | "Join parses" >> beam.CoGroupByKey()
                  | "Attach" >> stage_pardo(_Attach()))
        if written is None:
            written = tuples.pipeline | "No cache files" >> beam.Create([])
        rejects = joined[REJECTS]
        if self.backend == "conllu":
            rejects = (rejects, sentence_rejects) | "Parse rejects" >> beam.Flatten()
        return {MAIN: joined[MAIN], REJECTS: rejects, WRITTEN: written}

    def _model_parses(self, unique):
        parse = beam.ParDo(_ParseWithModel(self.backend, self.model))
        if not self.cache_root:
            return unique | "Parse" >> parse, None
        fingerprint = self.fingerprint
        parsed = unique | "Parse (cached)" >> ReadThrough(
            self.cache_root, CACHE_STAGE, self.run_id,
            # (action key, text) and (action key, tokens) both lead with the action key
            key=lambda pair: cache_key(CACHE_STAGE, pair[0], fingerprint, {}),
            compute=parse,
            encode=lambda pair: encode_json(_tokens_to_json(pair[1])),
            decode=lambda pair, value: (pair[0], _tokens_from_json(decode_json(value))))
        return parsed[MAIN], parsed[WRITTEN]
