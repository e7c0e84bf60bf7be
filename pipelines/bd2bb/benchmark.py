"""BD2BB (Pezzelle et al. 2020) as the runner sees it (pipelines/benchmark.py)."""
from __future__ import annotations

import os

from pipelines.bd2bb import datacard, pipeline, reasons
from pipelines.bd2bb.config import SAMPLE_DIR, BD2BBConfig
from pipelines.benchmark import Benchmark, Plan
from pipelines.progress import Progress
from pipelines.release.explorer.views import Explorer, ExplorerView
from pipelines.release.write.split_files import MAIN, SplitScheme
from pipelines.release.write.tables import Table
from transforms.core.errors import ConfigError


class BD2BB(Benchmark):
    name = "bd2bb"
    title = "BD2BB (Pezzelle et al. 2020)"
    config_type = BD2BBConfig
    package_dir = os.path.dirname(os.path.abspath(__file__))
    vocabulary = reasons.VOCABULARY

    def ensure_sample(self, config: BD2BBConfig) -> None:
        if self.reads_sample(config):
            from pipelines.bd2bb.sample import make_bd2bb_sample
            make_bd2bb_sample(SAMPLE_DIR)

    def prepare(self, config: BD2BBConfig, cache_root) -> Plan:
        models = pipeline.preflight(config)
        inputs = {"tuples": config.inputs.tuples, "captions": config.inputs.captions,
                  "parses": config.inputs.parses, "review": config.clusters.review}
        return Plan(config, models=models, inputs=inputs, cache_root=cache_root,
                    rules=pipeline.load_review(config.clusters.review))

    def build(self, p, plan: Plan, staging_dir: str) -> None:
        pipeline.build_pipeline(p, plan.config, staging_dir, plan.models, plan.rules,
                                plan.cache_root)

    def tables(self, plan: Plan):
        return {pipeline.SAMPLES: Table("splits", "sample.out", key="sample_id")}

    def splits(self, plan: Plan):
        # §7: the hard test is a subset of test (flag `hard_test`), a config of its own
        return {pipeline.SAMPLES: MAIN + (SplitScheme("hard_test", "hard_test", {True: "test"}),)}

    def progress(self, plan: Plan):
        # every tuple read is rejected by a filter or passes the last one (grounding);
        # clustering takes them all at once, so it is no measure of pace. Then every
        # clustered tuple becomes a sample with its decoys.
        return (Progress("tuples", "tuple", "grounding", total_counter=("read", "line.out")),
                Progress("samples", "sample", "decoys", total_counter=("clusters", "tuple.out")))

    def explorer(self, plan: Plan):
        # the image, the intention, and the five endings: the target and four decoys
        return Explorer((
            ExplorerView(pipeline.SAMPLES, "Samples", images=("image",), text=("intention",),
                         choices="endings", choice_notes="ending_types", target="label",
                         figures=("action", "cluster", "hard_test", "annotator", "code1",
                                  "code2")),))

    def links(self, plan: Plan):
        return pipeline.STAGE_LINKS

    def user_error(self, error: Exception):
        # the review check runs inside the pipeline (it needs the clusters)
        line = pipeline.review_error(error)
        return ConfigError(line) if line else None

    def describe(self, plan: Plan, facts: dict) -> dict:
        return datacard.describe(plan.config, facts, plan.cache_root)


BENCHMARK = BD2BB()
