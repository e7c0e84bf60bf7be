"""BD2BB's construction (Pezzelle et al. 2020, §3-§4, §7, Appendix A) as a Beam pipeline.

    tuples -> filters: text length, language, intention length, parse, action nouns,
              grounding (§3.1, A.1)
           -> action embeddings (cached) -> k-means over a k range, elbow -> review (§3.2, A.3)
           -> argument codes from the parses (§3.2, A.3, Table 4)
           -> 2 language + 2 vision decoys per target, shuffled (§4)
           -> 20/40/40 splits + hard test (§4.1, §7)
           -> target positions balanced per split (as the public release; positions.py)
           -> release: parquet/tfrecord samples, compat/ (public CSVs + JSON), review
              sheet, rejects, data card (Table 1 per split, cluster sizes, elbow plot)

Run:  python -m pipelines bd2bb build --config paper \
          --set inputs.tuples=tuples.jsonl --set inputs.captions=captions_train2014.json \
          --set inputs.parses=actions.conllu --output out --version 1.0.0 [Beam options]
"""
from __future__ import annotations

import dataclasses
import logging
import os
from typing import Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.bd2bb.action_parses import ParseActions
from pipelines.bd2bb.clustering import ClusteringParams, Review, parse_review
from pipelines.bd2bb.config import BD2BBConfig
from pipelines.bd2bb.decoys import SelectDecoys
from pipelines.bd2bb.inputs import ReadCaptions, ReadTuples, load_captions
from pipelines.bd2bb.positions import BalancePositions, PositionCounts
from pipelines.bd2bb.records import coco_image_id
from pipelines.bd2bb.release import WriteCompat, WriteReviewSheet, cluster_report
from pipelines.bd2bb.splits import AssignSplits
from pipelines.bd2bb.tables import SAMPLE_SCHEMA, sample_to_row
from pipelines.bd2bb.topic_clusters import ApplyClusters, ClusterActions
from pipelines.bd2bb.tuple_filters import (ActionNounFilter, GroundingFilter, IntentionLength,
                                           LanguageFilter, NounLexiconFn, TextLength,
                                           language_identifier, language_identifier_identity)
from pipelines.preflight import check_not_empty
from transforms.cache.read_through import WRITTEN
from transforms.cache.store import relative_cache_path
from transforms.core.errors import ConfigError, InputError, PreflightError
from transforms.core.stage import MAIN, REJECTS
from transforms.io.release import WriteRejects, WriteReport, WriteTable
from transforms.text.parsers import conllu_file_problem, parser_identity
from transforms.text.sentence_embed import (EmbedActions, EmbedActionsCached, SentenceEncoderSpec,
                                            encoder_identity)
from transforms.text.tokens import normalise_text

BENCHMARK = "bd2bb"
SAMPLES = "samples"
log = logging.getLogger("pipelines.bd2bb.pipeline")


def encoder_spec(cfg: BD2BBConfig) -> SentenceEncoderSpec:
    return SentenceEncoderSpec(model=cfg.embed.model, batch_size=cfg.embed.batch_size, device=cfg.embed.device)


def build_pipeline(p: beam.Pipeline, cfg: BD2BBConfig, staging_dir: str, models: dict,
                   review: Review, cache_root: Optional[str] = None) -> None:
    """Wire the stages; reads like §3-§4. `models` holds the identities (fingerprints)."""
    run_id = f"{BENCHMARK}-{FileSystems.split(staging_dir.rstrip('/'))[1].rsplit('-', 1)[-1]}"
    datapoints, rejects, written = _filters(p, cfg, models, cache_root, run_id)
    clustered, reviewed, vectors, more_rejects, more_written = _topics(
        datapoints, cfg, staging_dir, models, review, cache_root, run_id)
    rejects += more_rejects
    written += more_written
    samples, decoy_rejects = _decoys(reviewed, vectors, cfg, staging_dir)
    rejects.append(decoy_rejects)
    split = (samples | "Splits" >> AssignSplits(cfg.seed, cfg.splits.ratios)
             | "Target positions" >> BalancePositions(cfg.seed, FileSystems.join(staging_dir, ".position-runs")))
    _release(split, clustered, reviewed, cfg, staging_dir)
    _ = (rejects | "All rejects" >> beam.Flatten() | "Write rejects" >> WriteRejects(staging_dir))
    if cache_root:
        _ = (written | "Cache files" >> beam.Flatten()
             | "Relative" >> beam.Map(lambda path: relative_cache_path(cache_root, path))
             | "Write cache files" >> WriteReport(staging_dir, "cache_files"))


def _filters(p, cfg: BD2BBConfig, models: dict, cache_root, run_id):
    """§3.1 and A.1: every tuple that fails a filter leaves with the filter's reason."""
    f = cfg.filters
    tuples = p | "Read tuples" >> ReadTuples(cfg.inputs.tuples)
    short_enough = tuples[MAIN] | "Text length" >> TextLength(f.max_intention_chars, f.max_action_chars)
    english = short_enough[MAIN] | "Language" >> LanguageFilter(
        f.min_english_share, f.wordlist, f.languages, f.min_english_probability)
    long_enough = english[MAIN] | "Intention length" >> IntentionLength(f.intention_min_tokens, f.count_opener)
    parsed = long_enough[MAIN] | "Parse actions" >> ParseActions(
        cfg.parser.backend, cfg.parser.model, cfg.inputs.parses,
        fingerprint=models["parser"]["fingerprint"], cache_root=cache_root, run_id=run_id)
    with_nouns = parsed[MAIN] | "Action nouns" >> ActionNounFilter()
    lexicon = (parsed[MAIN] | "Parses" >> beam.Map(lambda d: d.parse)
               | "Noun lexicon" >> beam.CombineGlobally(NounLexiconFn()))
    captions = p | "Read captions" >> ReadCaptions(cfg.inputs.captions)
    # The parse has done its work (codes, action nouns, the lexicon): every later step
    # carries a datapoint without it, half its size.
    grounded = ({"datapoints": with_nouns[MAIN] | "Key by image" >> beam.Map(
                    lambda d: (coco_image_id(d.tuple.image), dataclasses.replace(d, parse=()))),
                 "captions": captions}
                | "Grounding" >> GroundingFilter(lexicon))
    rejects = [tuples[REJECTS], short_enough[REJECTS], english[REJECTS], long_enough[REJECTS], parsed[REJECTS],
               with_nouns[REJECTS], grounded[REJECTS]]
    return grounded[MAIN], rejects, [parsed[WRITTEN]]


def _topics(datapoints, cfg: BD2BBConfig, staging_dir, models, review, cache_root, run_id):
    """§3.2 Topic: embed each unique action, k-means over the k range, the review."""
    actions = (datapoints | "Action texts" >> beam.Map(
        lambda d: (d.tuple.action_key, normalise_text(d.tuple.action)))
        | "Unique actions" >> beam.Distinct())
    spec = encoder_spec(cfg)
    written = []
    if cache_root:
        embedded = actions | "Embed actions (cached)" >> EmbedActionsCached(
            spec, models["sentence_encoder"]["fingerprint"], cache_root, run_id)
        vectors = embedded[MAIN]
        written.append(embedded[WRITTEN])
    else:
        vectors = actions | "Embed actions" >> EmbedActions(spec)
    items = ({"text": actions, "vector": vectors} | "Join vectors" >> beam.CoGroupByKey()
             | "Key, text, vector" >> beam.MapTuple(lambda k, g: (k, list(g["text"])[0], list(g["vector"])[0])))
    clustered = items | "Topic clusters" >> ClusterActions(
        ClusteringParams.from_config(cfg), FileSystems.join(staging_dir, ".cluster-vectors"))
    _ = clustered | "Review sheet" >> WriteReviewSheet(staging_dir)
    _ = (clustered | "Cluster report" >> beam.Map(cluster_report)
         | "Write cluster report" >> WriteReport(staging_dir, "clusters"))
    reviewed = datapoints | "Review decisions" >> ApplyClusters(review, clustered)
    return clustered, reviewed[MAIN], vectors, [reviewed[REJECTS]], written


def _pool_entry(kv):
    key, groups = kv
    points, vectors = list(groups["points"]), list(groups["vector"])
    if not points:
        return []  # an action whose datapoints the review removed
    text, cluster, codes = points[0]
    return [(key, text, cluster, codes, vectors[0])]


def _decoys(reviewed, vectors, cfg: BD2BBConfig, staging_dir: str):
    """§4: the pool of unique reviewed actions, then 2 + 2 decoys per target."""
    pool = ({"points": reviewed | "Key points" >> beam.Map(
                lambda d: (d.tuple.action_key, (normalise_text(d.tuple.action), d.cluster, d.codes))),
             "vector": vectors}
            | "Join pool" >> beam.CoGroupByKey()
            | "Pool entries" >> beam.FlatMap(_pool_entry))
    selected = {"datapoints": reviewed, "pool": pool} | "Decoys" >> SelectDecoys(
        cfg.seed, cfg.decoys.pool_size, FileSystems.join(staging_dir, ".decoy-pool"))
    return selected[MAIN], selected[REJECTS]


def _release(samples, clustered, reviewed, cfg: BD2BBConfig, staging_dir: str):
    _ = samples | "Write samples" >> WriteTable(staging_dir, SAMPLES, SAMPLE_SCHEMA, sample_to_row)
    _ = samples | "Public layout" >> WriteCompat(staging_dir, FileSystems.join(staging_dir, ".compat-runs"))
    _ = (samples | "Labels" >> beam.Map(lambda s: (s.split, s.hard_test, s.label))
         | "Position counts" >> beam.CombineGlobally(PositionCounts())
         | "Write positions" >> WriteReport(staging_dir, "target_positions"))
    _ = (reviewed | "Cluster of" >> beam.Map(lambda d: (d.cluster, d.cluster_label))
         | "Count per cluster" >> beam.combiners.Count.PerElement()
         | "Size rows" >> beam.MapTuple(lambda cl, n: {"cluster": cl[0], "label": cl[1], "datapoints": n})
         | "Write cluster sizes" >> WriteReport(staging_dir, "cluster_sizes"))


STAGE_LINKS = (
    ("read", "line.out", "dedupe", "tuple.in"),
    ("dedupe", "tuple.out", "text_length", "tuple.in"),
    ("text_length", "tuple.out", "language", "tuple.in"),
    ("language", "tuple.out", "intention_length", "tuple.in"),
    ("intention_length", "tuple.out", "parse", "tuple.in"),
    ("parse", "tuple.out", "action_nouns", "tuple.in"),
    ("action_nouns", "tuple.out", "grounding", "tuple.in"),
    ("grounding", "tuple.out", "clusters", "tuple.in"),
    ("clusters", "tuple.out", "decoys", "sample.in"),
    ("decoys", "sample.out", "splits", "sample.in"),
)


def preflight(cfg: BD2BBConfig) -> dict:
    """Inputs and models exist; returns the model identities (weights checksums)."""
    for key, path, required in (("inputs.tuples", cfg.inputs.tuples, True),
                                ("inputs.captions", cfg.inputs.captions, True),
                                ("inputs.parses", cfg.inputs.parses, cfg.parser.backend == "conllu"),
                                ("clusters.review", cfg.clusters.review, False),
                                ("filters.wordlist", cfg.filters.wordlist, False)):
        if required and not path:
            raise PreflightError(f"{key} is not set (--set {key}=PATH)")
        if path and "://" not in path and not os.path.isfile(path):
            raise PreflightError(f"{key}: no such file: {path}")
        check_not_empty(path, key)
    try:  # one JSON document, read whole: a bad one stops here, naming it
        load_captions(cfg.inputs.captions)
    except InputError as e:
        raise InputError(f"inputs.captions: {e}") from None
    if cfg.parser.backend == "conllu":   # a whole file that is not CoNLL-U stops here, not per line
        problem = conllu_file_problem(cfg.inputs.parses)
        if problem:
            raise InputError(f"inputs.parses: {problem}")
    try:
        language_identifier(tuple(cfg.filters.languages))
    except ValueError as e:   # py3langid: "Unknown language code(s): {'xx'}"
        raise ConfigError(f"filters.languages: {e}") from None
    # EmbedError and ParserError are UserErrors naming their config key
    from transforms.core.devices import torch_device_record
    return {"sentence_encoder": encoder_identity(encoder_spec(cfg)),
            "parser": parser_identity(cfg.parser.backend, cfg.parser.model),
            "language_identifier": language_identifier_identity(tuple(cfg.filters.languages)),
            "devices": {"sentence_encoder": torch_device_record(cfg.embed.device, "embed.device")}}


def load_review(path: Optional[str]) -> Review:
    if not path:
        return Review()
    with FileSystems.open(path, compression_type="uncompressed") as f:
        try:
            return parse_review(f.read().decode("utf-8-sig"))   # Excel writes a BOM
        except ValueError as e:
            raise ConfigError(f"clusters.review: {e}") from None


def review_error(error: Exception) -> Optional[str]:
    """The "clusters.review: ..." line of a failed run (pipelines.bd2bb.clustering.check_review),
    whatever the runner wrapped it in."""
    for line in str(error).splitlines():
        at = line.find("clusters.review: ")
        if at >= 0:
            return line[at:].strip()
    return None
