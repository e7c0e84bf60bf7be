"""NLVR2 (Suhr et al. 2019) as a Beam pipeline: examples, the paper's rules, the figures of
§4-§5 and the release (spec S10-S12).

    released files (inputs.public, PUBLIC=)            the collection stages S1-S9
      -> one Example per valid line (read_public.py)     -> CollectExamples (collection/)
                      \\                                 /
                       one example per identifier (rules.py)
      -> the same two URLs per (set, pair) in both sentences                    (§3.2)
      -> the paper's rules: 4 extra judgements, removal at >= 2 disagreeing,
         <= 2 True and <= 2 False per (set, sentence): rejects with rules.enforce,
         reported otherwise                                                     (§3.2, §3.4)
      -> agreement before / after the rules, human performance, Table 4, groups,
         synsets, leakage (URL; aHash when the images are local)                (§4, §5)
      -> tables examples / sets / sentences, compat/ (public layout, balanced and
         unbalanced subsets, hash files), rejects, reports                      (S12)

Run:  python -m pipelines nlvr2 build --config public \\
          --set 'inputs.public=[dev.json,test1.json]' --output out --version 1.0.0
"""
from __future__ import annotations

import dataclasses

import apache_beam as beam
import pyarrow as pa

from pipelines.nlvr2 import analysis, tables
from pipelines.nlvr2.config import Nlvr2Config
from pipelines.nlvr2.read_public import RESPELLED, ParsePublicLine, RespelledSummary
from pipelines.nlvr2.release import HashImages, WriteCompat
from pipelines.nlvr2.rules import ANOMALIES, OneExamplePerIdentifier, PaperRules, SamePairUrls
from pipelines.nlvr2.tables import (EXAMPLE_SCHEMA, EXAMPLES, IMAGE_SETS, QUERIES, SENTENCE_SCHEMA, SENTENCES,
                                    SET_SCHEMA, SETS, example_to_row, sentence_row, set_row)
from pipelines.preflight import input_files
from pipelines.release.write import assemble as release
from pipelines.release.write.manifest import read_stats
from pipelines.release.write.tables import Table
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo
from transforms.io.lines import ReadNumberedLines
from transforms.io.release import WriteRejects, WriteReport, WriteTable


def build_pipeline(p: beam.Pipeline, cfg: Nlvr2Config, staging_dir: str) -> None:
    """Wire the stages; reads like the module docstring. Writes into `staging_dir`."""
    examples, rejects = _examples(p, cfg, staging_dir)
    unique = examples | "One per identifier" >> OneExamplePerIdentifier()
    pairs = unique[MAIN] | "Pair URLs" >> SamePairUrls()
    checked = pairs[MAIN] | "Paper rules" >> PaperRules(cfg.rules, cfg.crowd.aggregation)
    kept = checked[MAIN]
    rejects += [unique[REJECTS], pairs[REJECTS], checked[REJECTS]]
    source = cfg.mode

    _ = kept | "Write examples" >> WriteTable(staging_dir, EXAMPLES, EXAMPLE_SCHEMA,
                                              lambda x: example_to_row(x, source))
    _ = (kept | "Sets" >> _Rows("sets", "set", lambda x: (x.split, x.set_id), set_row, source)
         | "Write sets" >> WriteTable(staging_dir, SETS, SET_SCHEMA, lambda row: row))
    _ = (kept | "Sentences" >> _Rows("sentences", "group", lambda x: x.group, sentence_row, source)
         | "Write sentences" >> WriteTable(staging_dir, SENTENCES, SENTENCE_SCHEMA, lambda row: row))
    compat = kept | "Compat" >> WriteCompat(staging_dir, cfg.inputs.public)
    hashed = kept | "Image hashes" >> HashImages(staging_dir)
    rejects.append(hashed[REJECTS])

    raters = 1 + cfg.rules.extra_judgements   # the writer-time judgement + the extra ones (§4)
    agreement = [pairs[MAIN] | "Agreement before" >> analysis.Agreement("before_rules", raters),
                 kept | "Agreement after" >> analysis.Agreement("after_rules", raters)]
    reports = {
        "agreement": agreement,
        "human": [kept | "Human performance" >> analysis.HumanPerformance(
            cfg.analysis.min_worker_judgements)],
        "table4": [kept | "Table 4" >> analysis.Table4()],
        "groups": [kept | "Groups" >> analysis.GroupShapes()],
        "synsets": [kept | "Synsets" >> analysis.SynsetCounts()],
        "leakage": [kept | "Image URLs" >> beam.FlatMap(analysis.url_places)
                    | "URL leakage" >> analysis.ImageLeakage("url")],
        "anomalies": [checked[ANOMALIES]],
        "compat": [compat],
    }
    if not cfg.inputs.public:   # released files hold URLs only: no image content to compare
        reports["leakage"].append(
            hashed[MAIN] | "Hash places" >> beam.MapTuple(
                lambda split, _, digest, set_id: (digest, split, set_id))
            | "aHash leakage" >> analysis.ImageLeakage("ahash"))
    for name, parts in reports.items():
        _ = (parts | f"All {name}" >> beam.Flatten()
             | f"Write {name}" >> WriteReport(staging_dir, name))
    _ = (rejects | "All rejects" >> beam.Flatten() | "Write rejects" >> WriteRejects(staging_dir))


def _examples(p, cfg: Nlvr2Config, staging_dir: str):
    """(Examples, [rejects]) from the released files or from the collection stages."""
    if cfg.inputs.public:
        lines = p | "Read public files" >> ReadNumberedLines(cfg.inputs.public)
        parsed = lines | "Parse lines" >> stage_pardo(ParsePublicLine(), outputs=(RESPELLED,))
        _ = (parsed[RESPELLED] | "Respelled lines" >> RespelledSummary()
             | "Write respelled" >> WriteReport(staging_dir, RESPELLED))
        return parsed[MAIN], [parsed[REJECTS]]
    from pipelines.nlvr2.collection.collect import CollectExamples, collection_tables
    collected = p | "Collect" >> CollectExamples(cfg.collection, seed=cfg.seed,
                                                 staging_dir=staging_dir)
    for table in collection_tables(cfg.collection):
        _ = collected[table] | f"Write {table}" >> WriteTable(
            staging_dir, table, collection_schema(table), lambda row: row)
    return collected[MAIN], [collected[REJECTS]]


def collection_schema(table: str) -> pa.Schema:
    """The Arrow schema of one of the collection's tables: `tables.COLLECTION_SCHEMAS[table]`
    (written with the collection stages)."""
    return tables.COLLECTION_SCHEMAS[table]


class _RowsFn(StageFn):
    counts_in = False

    def __init__(self, stage, level, to_row, source):
        self.stage, self.level, self._to_row, self._source = stage, level, to_row, source

    def judge(self, keyed):
        self.counts.seen(level=self.level)
        key, examples = keyed
        yield self._to_row(key, list(examples), self._source)


class _Rows(beam.PTransform):
    """Examples -> one row per key (a set, a sentence group), counted `<level>.out` so the
    release checks its table against the counter."""

    def __init__(self, stage, level, key, to_row, source):
        super().__init__()
        self._fn, self._key = _RowsFn(stage, level, to_row, source), key

    def expand(self, examples):
        key = self._key
        return (examples | "Key" >> beam.Map(lambda x: (key(x), x)) | "Group" >> beam.GroupByKey()
                | "Rows" >> beam.ParDo(self._fn))


def released_tables(cfg: Nlvr2Config) -> dict:
    """Tables this config writes, each with the counter its row count must equal and the
    columns that identify a row: the public identifier, the set, the consistency group."""
    tables = {EXAMPLES: Table("paper_rules", "example.out", key="identifier"),
              SETS: Table("sets", "set.out", key="set"),
              SENTENCES: Table("sentences", "group.out", key="group")}
    if not cfg.inputs.public:
        from pipelines.nlvr2.collection.collect import collection_tables
        tables.update(collection_tables(cfg.collection))
    return tables


def main_tables(cfg: Nlvr2Config) -> list:
    """The tables a build is for (empty ones fail it before publishing): every table,
    except while a collection round's answers are still missing - then the examples are
    empty by design, and the build is for the last table the collection fills (the image
    sets, else the queries) and the tasks it exports."""
    tables = released_tables(cfg)
    if cfg.inputs.public:
        return list(tables)
    from pipelines.nlvr2.collection.collect import last_stage
    if last_stage(cfg.collection):
        return list(tables)
    return [IMAGE_SETS] if IMAGE_SETS in tables else [QUERIES]


def stage_links(cfg: Nlvr2Config) -> list:
    """What one stage passes on, the next must take in (checked before a release is written)."""
    links = [("identifiers", "example.out", "pairs", "example.in"),
             ("pairs", "example.out", "paper_rules", "example.in")]
    if cfg.inputs.public:
        links.insert(0, ("public", "line.out", "identifiers", "example.in"))
    else:
        from pipelines.nlvr2.collection.collect import last_stage
        from pipelines.nlvr2.collection.collect import stage_links as collection_links
        links += list(collection_links(cfg.collection))
        if last_stage(cfg.collection):
            links.append((*last_stage(cfg.collection), "identifiers", "example.in"))
    return links


def preflight(cfg: Nlvr2Config) -> Nlvr2Config:
    """Every released file exists and holds something before any work starts; globs become
    the files they match (pattern order, then name order; pipelines/preflight.py
    input_files refuses a folder, a pipe, a compressed file and a file named twice)."""
    files = input_files("inputs.public", cfg.inputs.public)
    return dataclasses.replace(cfg, inputs=dataclasses.replace(cfg.inputs, public=files))


def check_leakage_policy(cfg: Nlvr2Config, staging_dir: str) -> None:
    """With `leakage.forbid_shared_images`, an image in two splits (the same URL, or the
    same aHash when the build has the images) stops the build before anything is
    published. Judged on the leakage report the run wrote, so the same on every runner."""
    if not cfg.leakage.forbid_shared_images:
        return
    for report in read_stats(staging_dir, "leakage") or []:
        if report["in_several_splits"]:
            shown = ", ".join(f"{e['image']} ({'/'.join(e['splits'])})" for e in report["examples"][:3])
            raise release.ReleaseError(
                f"leakage.forbid_shared_images is true and {report['in_several_splits']} image "
                f"{'URLs' if report['kind'] == 'url' else 'aHash values'} occur in two or more "
                f"splits ({report['by_split_pair']}), e.g. {shown}. Set "
                "leakage.forbid_shared_images=false to release and report them.")
