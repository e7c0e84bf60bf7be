"""VSR (Liu et al. 2023) as the runner sees it (pipelines/benchmark.py)."""
from __future__ import annotations

import os

from pipelines.benchmark import Benchmark, Plan
from pipelines.progress import Progress
from pipelines.release.explorer.views import Compat, Explorer, ExplorerView
from pipelines.release.write.split_files import MAIN, SplitScheme
from pipelines.vsr import datacard, pipeline, reasons
from pipelines.vsr.config import SAMPLE_DIR, VsrConfig
from pipelines.vsr.validation import AgreementRule


class Vsr(Benchmark):
    name = "vsr"
    title = "VSR (Liu et al. 2023)"
    config_type = VsrConfig
    package_dir = os.path.dirname(os.path.abspath(__file__))
    vocabulary = reasons.VOCABULARY

    def ensure_sample(self, config: VsrConfig) -> None:
        if self.reads_sample(config):
            from pipelines.vsr.sample import make_vsr_sample
            make_vsr_sample(SAMPLE_DIR)

    def prepare(self, config: VsrConfig, cache_root) -> Plan:
        # the readers and the manifest see files, never patterns; the manifest's config
        # is the one given (patterns as written)
        concrete = pipeline.preflight(config)
        inputs = {f"{key}[{i}]": path for key in pipeline.INPUT_KEYS
                  for i, path in enumerate(getattr(concrete.inputs, key))}
        return Plan(concrete, inputs=inputs, cache_root=cache_root,
                    rules=AgreementRule.from_config(concrete.validation, concrete.crowd.aggregation))

    def build(self, p, plan: Plan, staging_dir: str) -> None:
        pipeline.build_pipeline(p, plan.config, staging_dir, plan.rules)

    def tables(self, plan: Plan):
        return pipeline.released_tables(plan.config)

    def splits(self, plan: Plan):
        # §3.4: examples are in the random split (`split`) and, unless their concepts
        # straddle parts, in the concept zero-shot split (`zeroshot_split`)
        return {**super().splits(plan),
                pipeline.EXAMPLES: MAIN + (SplitScheme("zeroshot_split", "zeroshot"),)}

    def progress(self, plan: Plan):
        # COCO's images and instances, read by the coco stage and done at pair sampling
        return (Progress("images", "image", "pair_sampling", total_counter=("coco", "image.in")),
                Progress("annotations", "annotation", "pair_sampling",
                         total_counter=("coco", "annotation.in")))

    def explorer(self, plan: Plan):
        # COCO images are shown when the release's paths are local (the build reads no
        # image: a sample's are file names), each with its COCO link
        return Explorer((
            ExplorerView(pipeline.EXAMPLES, "Examples", images=("image",), image_links=("image_link",),
                         text=("caption",),
                         figures=("label", "relation", "subj", "obj", "vote_true_validator_id",
                                  "vote_false_validator_id", "agreeing", "validators",
                                  "zeroshot_split", "pair_id"),
                         compat=Compat(("compat/*.jsonl", "compat/splits/*/*.jsonl"),
                                       (("image", "image"), ("caption", "caption")))),
            ExplorerView(pipeline.PAIRS, "Image pairs", images=("images",), image_links=("image_links",),
                         figures=("subj", "obj", "image_ids", "draw", "pool_size"))))

    def links(self, plan: Plan):
        return pipeline.stage_links(plan.config)

    def check_counts(self, plan: Plan, stages: dict):
        return pipeline.check_source_sum(stages, plan.config)

    def describe(self, plan: Plan, facts: dict) -> dict:
        return datacard.describe(plan.config, facts)


BENCHMARK = Vsr()
