"""Visual Spatial Reasoning's collection (Liu et al. 2023, TACL, §3-§4.1) as a Beam pipeline.

    COCO instances -> one large instance per concept -> concept-pair pools -> seeded draws  (§3.1)
      -> caption tasks (template, 71 relations)                                             (§3.1)
    writer output (or the public raw layout) -> True + False example per pair               (§3.1)
      -> all sources merged, one example per id (duplicate_example for the rest)
      -> validator votes -> vote rules -> keep rule (>= 2 and >= 2/3 agree)                  (§3.2, §4.1)
      -> random 70/10/20 + concept zero-shot 50/20/30                                        (§3.4)
      -> release: tables, compat/ (public layout), tasks/, rejects, agreement, relation and
         concept counts, leakage check, manifest, data card

Run:  python -m pipelines vsr build --config paper \
          --set 'inputs.annotations=[all_vsr_raw_data.jsonl]' --output out --version 1.0.0
"""
from __future__ import annotations

import dataclasses
import logging

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.preflight import input_files
from pipelines.release.write.tables import Table
from pipelines.vsr.annotations import (JoinExtraLabels, JoinVotes, MergeExamples, ReadCaptions,
                                       ReadPublicAnnotations, check_answer_tables)
from pipelines.vsr.config import VsrConfig
from pipelines.vsr.pairs import FIGURES, EligibleConcepts, SamplePairs
from pipelines.vsr.release import (CAPTION_RELATIONS, CAPTION_TASKS, VALIDATION_LABELSTUDIO, CheckVsrLeakage,
                                   WriteCompat, WriteJsonLines, caption_labelstudio, caption_relations,
                                   caption_task, relation_and_concept_counts, validation_task)
from pipelines.vsr.splits import SplitVsr
from pipelines.vsr.tables import EXAMPLE_SCHEMA, PAIR_SCHEMA, example_to_row, pair_to_row
from pipelines.vsr.validation import (AgreementFn, AgreementRule, ApplyVoteRules,
                                      ExtraLabelAgreementFn, KeepRule, Verdicts, sum_counters)
from pipelines.vsr.worker_pages import (CAPTION, VALIDATION, WriteWorkerPages, caption_row,
                                        validation_row)
from transforms.coco.instances import ReadCoco
from transforms.core.errors import InputError, PreflightError
from transforms.core.stage import MAIN, REJECTS
from transforms.crowd.labelstudio import LABELSTUDIO_DIR, WriteLabelStudioRound
from transforms.crowd.pages import PAGES_DIR
from transforms.io.release import WriteRejects, WriteReport, WriteTable

BENCHMARK = "vsr"
EXAMPLES, PAIRS = "examples", "image_pairs"
log = logging.getLogger("pipelines.vsr.pipeline")


def build_pipeline(p: beam.Pipeline, cfg: VsrConfig, staging_dir: str,
                   agreement: AgreementRule) -> None:
    """Wire the stages; reads like §3.1-§3.4. Writes into `staging_dir`. `agreement` is
    the vote and keep rule, built once from `cfg.validation` (Plan.rules)."""
    rejects = []
    pairs = coco_images = None
    if cfg.inputs.coco:
        pairs, coco_images, coco_rejects = _image_pairs(p, cfg, staging_dir)
        rejects += coco_rejects
    listed, caption_rejects = _examples(p, cfg, staging_dir, pairs, coco_images)
    rejects += caption_rejects
    if listed is not None:
        rejects += _validation_and_splits(p, cfg, staging_dir, listed, agreement)
    _ = (rejects | "All rejects" >> beam.Flatten() | "Write rejects" >> WriteRejects(staging_dir))


def _image_pairs(p, cfg: VsrConfig, staging_dir: str):
    """§3.1 Image Pair Sampling, and the caption tasks for the pairs."""
    coco = p | "Read COCO" >> ReadCoco(cfg.inputs.coco)
    eligible = ((coco["images"], coco["annotations"], coco["broken"])
                | "Eligible concepts" >> EligibleConcepts(cfg.sampling.min_area,
                                                          cfg.sampling.max_instances))
    sampled = eligible[MAIN] | "Sample pairs" >> SamplePairs(
        cfg.seed, cfg.sampling.pairs, cfg.sampling.max_draws)
    pairs = sampled[MAIN]
    _ = sampled[FIGURES] | "Write sampling figures" >> WriteReport(staging_dir, "sampling")
    _ = pairs | "Write pairs" >> WriteTable(staging_dir, PAIRS, PAIR_SCHEMA, pair_to_row)
    tasks = pairs | "Caption tasks" >> beam.Map(
        lambda pair: (CAPTION_TASKS, (pair.pair_id, caption_task(pair))))
    relations = p | "Caption relations" >> beam.Create(
        [(CAPTION_RELATIONS, line) for line in caption_relations()])
    _ = ((tasks, relations) | "Task files" >> beam.Flatten()
         | "Write caption tasks" >> WriteJsonLines(FileSystems.join(staging_dir, "tasks"),
                                                   [CAPTION_TASKS, CAPTION_RELATIONS]))
    _ = (pairs | "Caption page rows" >> beam.Map(lambda pair: (CAPTION, (pair.pair_id, caption_row(caption_task(pair)))))
         | "Caption page" >> WriteWorkerPages(_pages_dir(staging_dir), cfg.relations(), [CAPTION],
                                             cfg.inputs.coco_images))
    _ = (pairs | "Label Studio caption rows" >> beam.Map(lambda pair: (pair.pair_id, caption_row(caption_task(pair))))
         | "Label Studio caption" >> WriteLabelStudioRound(
             FileSystems.join(staging_dir, "crowd", LABELSTUDIO_DIR), "caption", caption_labelstudio(cfg.relations())))
    names = coco["images"] | "Image file names" >> beam.Map(lambda image: image.file_name)
    return pairs, names, [coco[REJECTS], eligible[REJECTS], sampled[REJECTS]]


def _pages_dir(staging_dir: str) -> str:
    """crowd/pages/: the worker pages of the rounds this build runs (worker_pages.py)."""
    return FileSystems.join(staging_dir, "crowd", PAGES_DIR)


def _examples(p, cfg: VsrConfig, staging_dir: str, pairs, coco_images):
    """§3.1 writer output and/or the public raw layout -> (Example, true votes, false votes)."""
    sources, rejects = {}, []
    if cfg.inputs.annotations:
        public = p | "Read public annotations" >> ReadPublicAnnotations(
            cfg.inputs.annotations, cfg.relations(), cfg.captions.aliases, coco_images)
        sources["annotations"] = public[MAIN]
        rejects.append(public[REJECTS])
    if cfg.inputs.captions:
        captions = p | "Read captions" >> ReadCaptions(cfg.inputs.captions, cfg.relations(), pairs)
        sources["captions"] = captions[MAIN]
        rejects.append(captions[REJECTS])
        _ = (captions[MAIN] | "Validation tasks" >> beam.Map(
                lambda t: ("validation_tasks.jsonl", (t[0].example_id, validation_task(t[0]))))
             | "Write validation tasks" >> WriteJsonLines(FileSystems.join(staging_dir, "tasks"),
                                                          ["validation_tasks.jsonl"]))
        _ = (captions[MAIN] | "Validation page rows" >> beam.Map(
                lambda t: (VALIDATION, (t[0].example_id, validation_row(validation_task(t[0])))))
             | "Validation page" >> WriteWorkerPages(_pages_dir(staging_dir), cfg.relations(), [VALIDATION],
                                                     cfg.inputs.coco_images))
        _ = (captions[MAIN] | "Label Studio validation rows" >> beam.Map(
                lambda t: (t[0].example_id, validation_task(t[0])))
             | "Label Studio validation" >> WriteLabelStudioRound(
                 FileSystems.join(staging_dir, "crowd", LABELSTUDIO_DIR), "validation", VALIDATION_LABELSTUDIO))
    if not sources:
        return None, rejects
    merged = sources | "All examples" >> MergeExamples()   # one per example id, the rest rejected
    listed = merged[MAIN]
    rejects.append(merged[REJECTS])
    if cfg.inputs.votes:
        voted = listed | "Join votes" >> JoinVotes(cfg.inputs.votes)
        listed = voted[MAIN]
        rejects.append(voted[REJECTS])
    return listed, rejects


def _validation_and_splits(p, cfg: VsrConfig, staging_dir: str, listed,
                           agreement: AgreementRule) -> list:
    """§3.2 / §4.1 vote rules and keep rule, §3.4 splits, the release's tables and files."""
    voted = listed | "Vote rules" >> ApplyVoteRules(agreement)
    verdicts = voted[MAIN] | "Verdicts" >> Verdicts(agreement)
    kept = verdicts | "Keep rule" >> KeepRule(agreement)
    split = kept[MAIN] | "Splits" >> SplitVsr(cfg.seed, cfg.splits.random, cfg.splits.zeroshot)
    examples = split[MAIN]
    extra = cfg.captions.extra_relations
    _ = examples | "Write examples" >> WriteTable(
        staging_dir, EXAMPLES, EXAMPLE_SCHEMA, lambda x: example_to_row(x, extra))
    _ = examples | "Compat" >> WriteCompat(staging_dir, cfg.release.stringify_votes)

    anomalies = voted["anomalies"] | "Vote anomalies" >> beam.CombineGlobally(sum_counters)
    figures = verdicts | "Agreement" >> beam.CombineGlobally(AgreementFn(agreement))
    rejects = [voted[REJECTS], kept[REJECTS], split[REJECTS]]
    extra_figures = None
    if cfg.inputs.extra_labels:
        gold = kept[MAIN] | "Gold labels" >> beam.Map(lambda x: (x.example.example_id, x.example.label))
        labelled = gold | "Extra labels" >> JoinExtraLabels(cfg.inputs.extra_labels)
        rejects.append(labelled[REJECTS])
        extra_figures = labelled[MAIN] | "Fleiss kappa" >> beam.CombineGlobally(ExtraLabelAgreementFn())
    _ = (figures | "Agreement report" >> beam.Map(
            _agreement_report, anomalies=beam.pvalue.AsSingleton(anomalies),
            extra=beam.pvalue.AsSingleton(extra_figures) if extra_figures is not None else None,
            rules=agreement.vote_rules)
         | "Write agreement" >> WriteReport(staging_dir, "agreement"))
    relations, concepts = relation_and_concept_counts(examples, extra)
    _ = ((relations, concepts) | "Count reports" >> beam.Flatten()
         | "Write counts" >> WriteReport(staging_dir, "counts"))
    _ = (split["concepts"] | "Concept parts" >> beam.MapTuple(lambda c, part: {"concept": c, "split": part})
         | "Write concept parts" >> WriteReport(staging_dir, "zeroshot_concepts"))
    _ = (examples | "Leakage" >> CheckVsrLeakage() | "Write leakage" >> WriteReport(staging_dir, "leakage"))
    return rejects


def _agreement_report(figures: dict, anomalies: dict, extra, rules: dict) -> dict:
    return {**figures, "vote_anomalies": anomalies, "vote_rules": rules,
            "extra_labels": extra}


def stage_links(cfg: VsrConfig) -> list:
    """What one stage passes on, the next must take in (checked before a release is written)."""
    links = [("validation", "example.out", "zeroshot_split", "example.in"),
             # every source's output enters the merge (which counts it per source and in
             # total, and reconciles in = out + duplicates); the merge's output is validated
             ("examples", "example.out", "validation", "example.in")]
    if cfg.inputs.coco:
        links += [("coco", "annotation.out", "pair_sampling", "annotation.in"),
                  ("coco", "image.out", "pair_sampling", "image.in")]
    if cfg.inputs.annotations:
        links.append(("annotations", "line.out", "examples", "example.in_from_annotations"))
    if cfg.inputs.captions:
        links += [("captions", "example.out", "examples", "example.in_from_captions"),
                  ("pair_sampling", "draw.out", "captions", "pair.in")]
    return links


def check_source_sum(stages: dict, cfg: VsrConfig) -> list:
    """validation's example.in == the sum of the sources' outputs - duplicate_example."""
    outs = {"annotations": ("annotations", "line.out"), "captions": ("captions", "example.out")}
    total = sum(stages.get(stage, {}).get(name, 0) for key, (stage, name) in outs.items()
                if getattr(cfg.inputs, key))
    duplicates = stages.get("examples", {}).get("example.rejected.duplicate_example", 0)
    validated = stages.get("validation", {}).get("example.in", 0)
    if validated != total - duplicates:
        return [f"validation.example.in = {validated} but the sources gave {total} examples "
                f"and {duplicates} were duplicates"]
    return []


def released_tables(cfg: VsrConfig) -> dict:
    """Tables this config writes, each with the counter its row count must equal and the
    column that identifies a row."""
    tables = {}
    if cfg.inputs.coco:
        tables[PAIRS] = Table("pair_sampling", "draw.out", key="pair_id")
    if cfg.inputs.annotations or cfg.inputs.captions:
        tables[EXAMPLES] = Table("validation", "example.out", key="example_id")
    return tables


INPUT_KEYS = ("coco", "annotations", "captions", "votes", "extra_labels")


def expand_inputs(cfg: VsrConfig) -> dict:
    """{input key: [concrete files]}: each path or glob (local, gs://, any Beam file system)
    expanded once, files in pattern order then name order (pipelines/preflight.py
    input_files: a pattern that matches nothing, a folder, a pipe, a compressed or empty
    file, the same file twice is a PreflightError before any work, never a reject further on)."""
    return {key: input_files(f"inputs.{key}", getattr(cfg.inputs, key)) for key in INPUT_KEYS}


def preflight(cfg: VsrConfig) -> VsrConfig:
    """Every input exists (a file, or a glob that matches) before any work starts; returns
    the config with each input list replaced by the concrete files; a platform's answer
    file (MTurk's results, Label Studio's export) is checked whole (check_answer_tables)."""
    files = expand_inputs(cfg)
    try:
        check_answer_tables(files)
    except InputError as e:
        raise PreflightError(str(e)) from None
    return dataclasses.replace(cfg, inputs=dataclasses.replace(cfg.inputs, **files))
