"""ImageCoDe (Krojer et al. 2022) as the runner sees it (pipelines/benchmark.py)."""
from __future__ import annotations

import os

from pipelines.benchmark import Benchmark, Plan
from pipelines.imagecode import datacard, pipeline, preflight, reasons
from pipelines.imagecode.config import SAMPLE_DIR, ImageCodeConfig
from pipelines.imagecode.params import build_rules
from pipelines.imagecode.video.explorer_frames import rejected_frames
from pipelines.progress import Progress
from pipelines.release.explorer.views import Compat, Explorer, ExplorerView, RejectsOfRows
from transforms.image.embed_cache import CACHE_STAGE as IMAGE_EMBEDDING_CACHE


class ImageCoDe(Benchmark):
    name = "imagecode"
    title = "ImageCoDe (Krojer et al. 2022)"
    config_type = ImageCodeConfig
    package_dir = os.path.dirname(os.path.abspath(__file__))
    vocabulary = reasons.VOCABULARY
    sample_generator = "pipelines/imagecode/sample/"   # a package: make, expected sets, answers

    def ensure_sample(self, config: ImageCodeConfig) -> None:
        if self.reads_sample(config):
            from pipelines.imagecode.sample import make_imagecode_sample
            make_imagecode_sample(SAMPLE_DIR)

    def prepare(self, config: ImageCodeConfig, cache_root) -> Plan:
        preflight.check_imagecode(config)
        rules = build_rules(config)  # the encoder and quality gate, with their identities: once
        return Plan(config, models=rules.models, inputs={"videos": config.inputs.videos},
                    cache_root=cache_root, rules=rules)

    def build(self, p, plan: Plan, staging_dir: str) -> None:
        pipeline.build_pipeline(p, plan.config, plan.rules, staging_dir, plan.cache_root)

    def tables(self, plan: Plan):
        return pipeline.released_tables(plan.config)

    def progress(self, plan: Plan):
        # videos: listed in the manifest, done at shot detection (a cached video's shots
        # are replayed, and counted, there); static images: listed by the collection,
        # done when embedded or found in the embedding cache
        return (Progress("videos", "video", "shots", total_counter=("manifest", "line.out"),
                         work=("embed", "frame.embedded", "frames")),
                Progress("images", "image", "embed", total_counter=("images", "entry.out"),
                         cached=(IMAGE_EMBEDDING_CACHE,)))

    def explorer(self, plan: Plan):
        # a description with its set of 10, the target and the retrievers' votes; the sets
        # with each frame's number and BRISQUE score (static sets: distance to the query);
        # a rejected frame (blurry, text, too_similar, ...) decoded from its video; a
        # rejected description or retrieval (<set>#<target>#<worker>[@<retriever>]) with
        # its set, the target and the retrievers' guesses marked (rounds.keep_rule_detail)
        answers = RejectsOfRows(r"([^#]+)#\d+#", (("target", r"target (\d+)"), ("guessed", r"guesses ([\d, ]+)")))
        views = (
            ExplorerView(pipeline.DESCRIPTIONS, "Descriptions", images=("image_paths",),
                         target="target_index", text=("description",),
                         figures=("retrievers", "correct", "tokens", "set_name"),
                         compat=Compat(("compat/*.json",), (("", "set_name"),))),
            ExplorerView(pipeline.VIDEO_SETS, "Video sets", images=("image_paths",),
                         image_notes=(("frame", "frame_indices"), ("brisque", "brisque_scores")),
                         figures=("video_id", "shot_index", "distance_min", "distance_mean",
                                  "distance_max", "text_chars"), rejects_of_rows=answers),
            ExplorerView(pipeline.STATIC_SETS, "Static sets", images=("image_paths",),
                         image_notes=(("distance", "distances"),),
                         figures=("query_id", "distance_mean"), rejects_of_rows=answers))
        return Explorer(views, reject_images=rejected_frames(plan.config.inputs.videos))

    def links(self, plan: Plan):
        return pipeline.STAGE_LINKS

    def after_run(self, plan: Plan, staging_dir: str) -> None:
        pipeline.check_split_conflicts(plan.config, staging_dir)

    def describe(self, plan: Plan, facts: dict) -> dict:
        return datacard.describe(plan.config, plan.rules, facts, plan.cache_root)


BENCHMARK = ImageCoDe()
