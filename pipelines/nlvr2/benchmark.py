"""NLVR2 (Suhr et al. 2019) as the runner sees it (pipelines/benchmark.py)."""
from __future__ import annotations

import os

from pipelines.benchmark import Benchmark, Plan
from pipelines.nlvr2 import datacard, pipeline, reasons
from pipelines.nlvr2.config import SAMPLE_DIR, Nlvr2Config
from pipelines.progress import Progress
from pipelines.release.explorer.views import Compat, Explorer, ExplorerView


class Nlvr2(Benchmark):
    name = "nlvr2"
    title = "NLVR2 (Suhr et al. 2019)"
    config_type = Nlvr2Config
    package_dir = os.path.dirname(os.path.abspath(__file__))
    vocabulary = reasons.VOCABULARY

    def ensure_sample(self, config: Nlvr2Config) -> None:
        if self.reads_sample(config):
            from pipelines.nlvr2.sample import make_nlvr2_sample
            make_nlvr2_sample(SAMPLE_DIR)

    def prepare(self, config: Nlvr2Config, cache_root) -> Plan:
        models = {}
        if not config.inputs.public:
            from pipelines.nlvr2.collection.collect import model_identities, stage_devices
            from pipelines.nlvr2.collection.collect import preflight as collection_preflight
            collection_preflight(config.collection)
            models = {**model_identities(config.collection), "devices": stage_devices(config.collection)}
        concrete = pipeline.preflight(config)
        inputs = {f"public[{i}]": path for i, path in enumerate(concrete.inputs.public)}
        return Plan(concrete, models=models, inputs=inputs, cache_root=cache_root)

    def build(self, p, plan: Plan, staging_dir: str) -> None:
        pipeline.build_pipeline(p, plan.config, staging_dir)

    def tables(self, plan: Plan):
        return pipeline.released_tables(plan.config)

    def main_tables(self, plan: Plan):
        return pipeline.main_tables(plan.config)

    def progress(self, plan: Plan):
        if plan.config.inputs.public:
            return (Progress("examples", "example", "paper_rules",
                             total_counter=("public", "line.out")),)
        # a collection: image sets from the search results, pruned and paired (or
        # rejected on the way); examples from the validation rounds to the paper's rules
        return (Progress("sets", "set", "pairing", total_counter=("auto_pruning", "set.in")),
                Progress("examples", "example", "paper_rules",
                         total_counter=("validation", "example.in")))

    def explorer(self, plan: Plan):
        # an example's two images (local files of a collection, with their URLs; released
        # files have URLs only, shown as links), its sentence and judgements; a set's pairs
        return Explorer((
            ExplorerView(pipeline.EXAMPLES, "Examples", images=("left_path", "right_path"),
                         image_links=("left_url", "right_url"), text=("sentence",),
                         figures=("label", "synset", "query", "writer", "extra_labels",
                                  "extra_agreeing"),
                         compat=Compat(("compat/*.json", "compat/balanced/*.json",
                                        "compat/unbalanced/*.json"), (("identifier", "identifier"),))),
            ExplorerView(pipeline.SENTENCES, "Sentences", text=("sentence",),
                         figures=("group", "pairs", "labels", "writer", "true_examples")),
            ExplorerView(pipeline.SETS, "Sets", images=("left_urls", "right_urls"),
                         figures=("set", "synset", "query", "pairs", "examples", "sentences"))))

    def links(self, plan: Plan):
        return pipeline.stage_links(plan.config)

    def after_run(self, plan: Plan, staging_dir: str) -> None:
        pipeline.check_leakage_policy(plan.config, staging_dir)

    def describe(self, plan: Plan, facts: dict) -> dict:
        return datacard.describe(plan.config, facts)


BENCHMARK = Nlvr2()
