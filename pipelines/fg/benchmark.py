"""MSCOCO-FG / Flickr30K-FG (Chen et al., SIGIR '23) as the runner sees it
(pipelines/benchmark.py): one benchmark, two configurations, each released under its
own name (mscoco-fg, flickr30k-fg), as TFDS builder configs are."""
from __future__ import annotations

import os

from pipelines.benchmark import Benchmark, Plan
from pipelines.fg import datacard, pipeline, reasons
from pipelines.fg.config import SAMPLE_DIR, FgConfig
from pipelines.fg.tables import CAPTIONS, POOL, SIMILAR_SETS
from pipelines.fg.tagger import tagger_identity
from pipelines.preflight import check_not_empty
from pipelines.progress import Progress
from pipelines.release.explorer.views import Compat, Explorer, ExplorerView, ImageIndex, Join
from transforms.core.errors import InputError, PreflightError
from transforms.image.encoders import encoder_identity
from transforms.image.weights import EncoderError


class Fg(Benchmark):
    name = "fg"
    title = "MSCOCO-FG / Flickr30K-FG (Chen et al. 2023)"
    config_type = FgConfig
    package_dir = os.path.dirname(os.path.abspath(__file__))
    vocabulary = reasons.VOCABULARY

    def release_name(self, config: FgConfig) -> str:
        return f"{config.configuration}-fg"

    def sample_configs(self):
        return ["sample", "flickr30k-sample"]   # MSCOCO-FG's and Flickr30K-FG's

    def ensure_sample(self, config: FgConfig) -> None:
        if self.reads_sample(config):
            from pipelines.fg.sample import make_fg_sample
            make_fg_sample(SAMPLE_DIR)

    def prepare(self, config: FgConfig, cache_root) -> Plan:
        from pipelines.fg.captions import read_captions
        inputs = {"captions": config.inputs.captions, "details": config.inputs.details,
                  "merged": config.inputs.merged, "corrections": config.inputs.corrections}
        for key, path in inputs.items():
            if path:
                if not os.path.isfile(path):
                    raise PreflightError(f"inputs.{key}: no such file: {path}")
                check_not_empty(path, f"inputs.{key}")
        for key in ("image_embeddings", "text_embeddings"):
            folder = getattr(config.inputs, key)
            if folder:
                from transforms.vectors.embedding_folders import list_parts
                if not os.path.isdir(folder):
                    raise PreflightError(f"inputs.{key}: no such folder: {folder}")
                list_parts(folder, "img" if key == "image_embeddings" else "text")
        for key in ("images", "pool"):
            if not os.path.exists(getattr(config.inputs, key)):
                raise PreflightError(f"inputs.{key}: no such folder or file: {getattr(config.inputs, key)}")
        for key, section in (("details.model_dir", config.details), ("merge.model_dir", config.merge)):
            if section.kind in ("model", "gpt2") and not os.path.isdir(section.model_dir):
                raise PreflightError(f"{key}: no such directory: {section.model_dir}")
        try:   # one JSON document, read whole: a bad one stops here, naming the key
            captions = read_captions(config.inputs.captions, config.inputs.captions_split)
        except InputError as e:
            raise InputError(f"inputs.captions: {e}") from None
        try:
            encoder = encoder_identity(config.embed.spec())
        except EncoderError as e:
            raise PreflightError(str(e)) from None
        models = {"image_text_encoder": {**encoder, "text_side": _text_side(config)},
                  "tagger": tagger_identity(config.nouns.tagger),
                  "details": _generator_identity(config), "merge": _merger_identity(config),
                  "devices": _stage_devices(config)}
        return Plan(config, models=models, inputs={k: v for k, v in inputs.items() if v},
                    cache_root=cache_root, rules={"captions": captions})

    def build(self, p, plan: Plan, staging_dir: str) -> None:
        pipeline.build_pipeline(p, plan.config, plan.rules["captions"], staging_dir)

    def tables(self, plan: Plan):
        return pipeline.released_tables(plan.config)

    def explorer(self, plan: Plan):
        # a caption, original against renovated, beside its image's similar set (the
        # target first); set members are pool ids, their files the pool table's paths
        pool = ImageIndex(POOL, "image_id", "path")
        return Explorer((
            ExplorerView(CAPTIONS, "Captions", images=(f"{SIMILAR_SETS}.members",),
                         image_notes=(f"{SIMILAR_SETS}.sources",), target=0,
                         text=("original", "renovated"),
                         figures=("caption_index", "changed", "coarse", "noun", "detail",
                                  "clipscore_before", "clipscore_after", "corrected"),
                         join=(Join(SIMILAR_SETS, on="image_id", key="target"),),
                         image_index=pool,
                         compat=Compat(("compat/Annotations/*.json",), (("", "image_id"),))),
            ExplorerView(SIMILAR_SETS, "Similar sets", images=("members",),
                         image_notes=("sources", ("image", "image_scores"), ("text", "text_scores")),
                         target=0,
                         image_index=pool),
            ExplorerView(POOL, "Pool", images=("path",),
                         figures=("position", "file_name", "original"))))

    def progress(self, plan: Plan):
        # images: targets and pool as read, done when embedded (or dropped as a target's
        # own file in the pool; later pool dedupes pass on what was embedded); candidate
        # details: prompted, done when picked or filtered out; captions: done when
        # renovated or left as they are (not coarse, no candidate)
        return (Progress("images", "image", "embed", total_counter=("images", "entry.out"),
                         rejected_in=("embed", "pool_input")),
                Progress("candidates", "candidate", "pick", total_counter=("prompts", "candidate.out")),
                Progress("captions", "caption", "pick", total_counter=("embed_text", "caption.out")))

    def links(self, plan: Plan):
        return pipeline.stage_links(plan.config)

    def check_counts(self, plan: Plan, stages: dict):
        return pipeline.check_counts(stages, plan.config)

    def describe(self, plan: Plan, facts: dict) -> dict:
        return datacard.describe(plan.config, facts)


def _text_side(config: FgConfig) -> str:
    if config.embed.kind == "thumbnail":
        return ("STAND-IN (transforms/image/text_encoders.ThumbnailTextEncoder): the colour words "
                "of a text painted as a flat thumbnail; NOT CLIP")
    return f"open_clip text tower of {config.embed.model_name} (same weights)"


def _generator_identity(config: FgConfig) -> dict:
    d = config.details
    if d.kind == "file":
        return {"kind": "file", "path": config.inputs.details}
    if d.kind == "standin":
        from pipelines.fg.generators import StandinDetails
        return {**StandinDetails.identity, "stand_in": True}
    return {"kind": "model", "model_dir": d.model_dir, "max_new_tokens": d.max_new_tokens,
            "decoding": "greedy", "note": "a labelled substitute for VinVL_base (§4.1)"}


def _merger_identity(config: FgConfig) -> dict:
    m = config.merge
    if m.kind == "file":
        return {"kind": "file", "path": config.inputs.merged}
    if m.kind == "rules":
        from pipelines.fg.generators import RuleMerger
        return {**RuleMerger.identity, "stand_in": True}
    return {"kind": "gpt2", "model_dir": m.model_dir, "max_new_tokens": m.max_new_tokens,
            "decoding": "greedy"}


BENCHMARK = Fg()


def _stage_devices(config) -> dict:
    """Where each model stage runs, with library and CUDA versions (the manifest's record)."""
    from transforms.core.devices import torch_device_record
    from transforms.vectors.knn import knn_identity
    out = {}
    if config.embed.kind == "open_clip" and not config.inputs.image_embeddings:
        out["embed"] = torch_device_record(config.embed.device, "embed.device", precision=config.embed.precision)
    out["similar_knn"] = knn_identity(config.similar.knn.spec())
    return out
