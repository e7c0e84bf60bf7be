"""Visual Spatial Reasoning's collection (Liu et al. 2023, TACL, §3-§4.1) as a Beam pipeline.

    COCO instances -> one large instance per concept -> concept-pair pools -> seeded draws  (§3.1)
      -> caption tasks (template, 71 relations)                                             (§3.1)
    writer output (or the public raw layout) -> True + False example per pair               (§3.1)
      -> validator votes -> vote rules -> keep rule (>= 2 and >= 2/3 agree)                  (§3.2, §4.1)
      -> random 70/10/20 + concept zero-shot 50/20/30                                        (§3.4)
      -> release: tables, compat/ (public layout), tasks/, rejects, agreement, relation and
         concept counts, leakage check, manifest, data card

Run:  python -m pipelines.vsr --config pipelines/configs/vsr.yaml \
          --set 'inputs.annotations=[all_vsr_raw_data.jsonl]' --output out --version 1.0.0
"""
from __future__ import annotations

import glob
import logging
import os
import sys
from typing import List, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import cli, release
from pipelines import vsr_datacard as datacard
from pipelines.config import load_config
from pipelines.preflight import PreflightError
from pipelines.runners import runner_for
from pipelines.vsr_config import VsrConfig
from schemas.vsr import EXAMPLE_SCHEMA, PAIR_SCHEMA, example_to_row, pair_to_row
from transforms.coco import EligibleConcepts, ReadCoco, SamplePairs
from transforms.release import WriteRejects, WriteReport, WriteTable
from transforms.stage import MAIN, REJECTS
from transforms.vsr_annotations import JoinExtraLabels, JoinVotes, ReadCaptions, ReadPublicAnnotations
from transforms.vsr_release import (CheckVsrLeakage, WriteCompat, WriteJsonLines, caption_task,
                                    relation_and_concept_counts, validation_task)
from transforms.vsr_splits import SplitVsr
from transforms.vsr_validation import (AgreementFn, ApplyVoteRules, KeepRule, extra_label_agreement,
                                       sum_counters)

BENCHMARK = "vsr"
EXAMPLES, PAIRS = "examples", "image_pairs"
log = logging.getLogger("pipelines.vsr")


def build_pipeline(p: beam.Pipeline, cfg: VsrConfig, staging_dir: str) -> None:
    """Wire the stages; reads like §3.1-§3.4. Writes into `staging_dir`."""
    rejects = []
    pairs = coco_images = None
    if cfg.inputs.coco:
        pairs, coco_images, coco_rejects = _image_pairs(p, cfg, staging_dir)
        rejects += coco_rejects
    listed, caption_rejects = _examples(p, cfg, staging_dir, pairs, coco_images)
    rejects += caption_rejects
    if listed is not None:
        rejects += _validation_and_splits(p, cfg, staging_dir, listed)
    _ = (rejects | "All rejects" >> beam.Flatten() | "Write rejects" >> WriteRejects(staging_dir))


def _image_pairs(p, cfg: VsrConfig, staging_dir: str):
    """§3.1 Image Pair Sampling, and the caption tasks for the pairs."""
    coco = p | "Read COCO" >> ReadCoco(cfg.inputs.coco)
    eligible = ((coco["images"], coco["annotations"])
                | "Eligible concepts" >> EligibleConcepts(cfg.sampling.min_area,
                                                          cfg.sampling.max_instances))
    sampled = eligible[MAIN] | "Sample pairs" >> SamplePairs(
        cfg.seed, cfg.sampling.pairs, cfg.sampling.max_draws)
    pairs = sampled[MAIN]
    _ = pairs | "Write pairs" >> WriteTable(staging_dir, PAIRS, PAIR_SCHEMA, pair_to_row)
    _ = (pairs | "Caption tasks" >> beam.Map(
            lambda pair: ("caption_tasks.jsonl", (pair.pair_id, caption_task(pair))))
         | "Write caption tasks" >> WriteJsonLines(FileSystems.join(staging_dir, "tasks"),
                                                   ["caption_tasks.jsonl"]))
    names = coco["images"] | "Image file names" >> beam.Map(lambda image: image.file_name)
    return pairs, names, [coco[REJECTS], eligible[REJECTS], sampled[REJECTS]]


def _examples(p, cfg: VsrConfig, staging_dir: str, pairs, coco_images):
    """§3.1 writer output and/or the public raw layout -> (Example, true votes, false votes)."""
    sources, rejects = [], []
    if cfg.inputs.annotations:
        public = p | "Read public annotations" >> ReadPublicAnnotations(
            cfg.inputs.annotations, cfg.relations(), cfg.captions.aliases, coco_images)
        sources.append(public[MAIN])
        rejects.append(public[REJECTS])
    if cfg.inputs.captions:
        captions = p | "Read captions" >> ReadCaptions(cfg.inputs.captions, cfg.relations(), pairs)
        sources.append(captions[MAIN])
        rejects.append(captions[REJECTS])
        _ = (captions[MAIN] | "Validation tasks" >> beam.Map(
                lambda t: ("validation_tasks.jsonl", (t[0].example_id, validation_task(t[0]))))
             | "Write validation tasks" >> WriteJsonLines(FileSystems.join(staging_dir, "tasks"),
                                                          ["validation_tasks.jsonl"]))
    if not sources:
        return None, rejects
    listed = sources | "All examples" >> beam.Flatten()
    if cfg.inputs.votes:
        voted = listed | "Join votes" >> JoinVotes(cfg.inputs.votes)
        listed = voted[MAIN]
        rejects.append(voted[REJECTS])
    return listed, rejects


def _validation_and_splits(p, cfg: VsrConfig, staging_dir: str, listed) -> list:
    """§3.2 / §4.1 vote rules and keep rule, §3.4 splits, the release's tables and files."""
    v = cfg.validation
    voted = listed | "Vote rules" >> ApplyVoteRules(v.writer_votes, v.duplicate_votes,
                                                    v.conflicting_votes)
    kept = voted[MAIN] | "Keep rule" >> KeepRule(v.min_agreeing, v.min_agreement)
    split = kept[MAIN] | "Splits" >> SplitVsr(cfg.seed, cfg.splits.random, cfg.splits.zeroshot)
    examples = split[MAIN]
    extra = cfg.captions.extra_relations
    _ = examples | "Write examples" >> WriteTable(
        staging_dir, EXAMPLES, EXAMPLE_SCHEMA, lambda x: example_to_row(x, extra))
    _ = examples | "Compat" >> WriteCompat(staging_dir, cfg.release.stringify_votes)

    anomalies = voted["anomalies"] | "Vote anomalies" >> beam.CombineGlobally(sum_counters)
    figures = voted[MAIN] | "Agreement" >> beam.CombineGlobally(AgreementFn(v.min_agreeing,
                                                                          v.min_agreement))
    rejects = [voted[REJECTS], kept[REJECTS], split[REJECTS]]
    extra_figures = None
    if cfg.inputs.extra_labels:
        gold = kept[MAIN] | "Gold labels" >> beam.Map(lambda x: (x.example.example_id, x.example.label))
        labelled = gold | "Extra labels" >> JoinExtraLabels(cfg.inputs.extra_labels)
        rejects.append(labelled[REJECTS])
        extra_figures = (labelled[MAIN] | "Labelled examples" >> beam.combiners.ToList()
                         | "Fleiss kappa" >> beam.Map(extra_label_agreement))
    _ = (figures | "Agreement report" >> beam.Map(
            _agreement_report, anomalies=beam.pvalue.AsSingleton(anomalies),
            extra=beam.pvalue.AsSingleton(extra_figures) if extra_figures is not None else None,
            rules={"writer_votes": v.writer_votes, "duplicate_votes": v.duplicate_votes,
                   "conflicting_votes": v.conflicting_votes})
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
    links = [("validation", "example.out", "zeroshot_split", "example.in")]
    if cfg.inputs.coco:
        links.append(("coco", "annotation.out", "pair_sampling", "annotation.in"))
    if cfg.inputs.annotations and not cfg.inputs.captions:
        links.append(("annotations", "line.out", "validation", "example.in"))
    if cfg.inputs.captions and not cfg.inputs.annotations:
        links.append(("captions", "example.out", "validation", "example.in"))
    return links


def released_tables(cfg: VsrConfig) -> dict:
    """Tables this config writes, each with the counter its row count must equal."""
    tables = {}
    if cfg.inputs.coco:
        tables[PAIRS] = ("pair_sampling", "draw.out")
    if cfg.inputs.annotations or cfg.inputs.captions:
        tables[EXAMPLES] = ("validation", "example.out")
    return tables


def preflight(cfg: VsrConfig) -> None:
    """Every input exists (a file or a glob that matches) before any work starts."""
    for key in ("coco", "annotations", "captions", "votes", "extra_labels"):
        for path in getattr(cfg.inputs, key):
            if "://" not in path and not (os.path.exists(path) or glob.glob(path)):
                raise PreflightError(f"inputs.{key}: no such file: {path}")


def run(argv: Optional[List[str]] = None) -> str:
    """Build one release; returns its folder."""
    args, beam_args = cli.parse_args(argv, description=__doc__)
    cfg = load_config(args.config, args.set, VsrConfig)
    preflight(cfg)
    options = PipelineOptions(beam_args)

    def execute(staging_dir: str):
        pipeline = beam.Pipeline(runner=runner_for(options), options=options)
        build_pipeline(pipeline, cfg, staging_dir)
        result = pipeline.run()
        result.wait_until_finish()
        return result

    inputs = {f"{key}[{i}]": path for key in ("coco", "annotations", "captions", "votes", "extra_labels")
              for i, path in enumerate(getattr(cfg.inputs, key))}
    return release.build_release(
        benchmark=BENCHMARK, out=args.output, version=args.version, config=cfg, execute=execute,
        models={}, inputs=inputs, links=stage_links(cfg), tables=released_tables(cfg),
        describe=lambda facts: datacard.describe(cfg, facts))


def main(argv: Optional[List[str]] = None) -> int:
    return cli.run_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())
