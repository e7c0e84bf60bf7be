"""What DATACARD.md (and the manifest) say about an ImageCoDe release, beyond the generic card.

Reads what the pipeline wrote into the staging folder: the tables' small columns and
the summaries under stats/ (agreement, worker pools, language, within-set distances,
leakage), draws the plots into plots/, and returns the card's sections plus the figures
the manifest records.
"""
from __future__ import annotations

import math
from collections import defaultdict

from apache_beam.io.filesystems import FileSystems

from pipelines.cache import cache_record
from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.params import ImageCodeRules
from pipelines.imagecode.video.plans import FRAME_IMAGE
from pipelines.imagecode.video.quality_gate import QualityRule
from pipelines.release.cards import plots
from pipelines.release.cards.datacard import markdown_table
from pipelines.release.cards.hf_card import CardFacts
from pipelines.release.write.manifest import read_parquet_columns, read_stats

PAPER = "Krojer et al. 2022, ImageCoDe"
PAPER_RATIO = 1.13  # §4.3: video frames are more similar than static pictures by this factor


CARD = CardFacts(
    main_table="descriptions",
    language=("en",),
    # a description picks its one image out of ten close video frames: text-to-image
    # retrieval (the Hub has no image-text retrieval category) as a ten-way choice
    task_categories=("multiple-choice", "text-to-image"),
    license="mit",
    license_source=("the public repository github.com/McGill-NLP/imagecode: \"This work is "
                    "licensed under the MIT license\" (its README); the images come from "
                    "MSR-VTT, Video Storytelling, YouCook and Open Images, under their own "
                    "licenses"),
    citation="""@inproceedings{krojer_contextual_2022,
  address = {Online},
  title = {Image Retrieval from Contextual Descriptions},
  booktitle = {Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics},
  publisher = {Association for Computational Linguistics},
  author = {Krojer, Benno and Adlakha, Vaibhav and Vineet, Vibhav and Goyal, Yash and Ponti, Edoardo and Reddy, Siva},
  month = may,
  year = {2022}
}""",
    homepage="https://mcgill-nlp.github.io/imagecode/")


def describe(cfg: ImageCodeConfig, rules: ImageCodeRules, facts: dict, cache_root=None) -> dict:
    """The card's sections; the encoder and the quality gate are the build's own `rules`."""
    staging = facts["staging"]
    tables = facts["counts"]["tables"]
    stats = {name: read_stats(staging, name) for name in
             ("agreement", "worker_pools", "language", "set_distances", "leakage", "brisque")}
    sections = [_plots(cfg, rules.quality, staging, tables, stats["brisque"])]
    if stats["language"] is not None:
        sections.append(_language_section(stats["language"], cfg))
    if stats["agreement"] is not None:
        sections.append(_agreement_section(stats["agreement"]))
    if stats["worker_pools"]:
        sections.append(_pools_section(stats["worker_pools"][0]))
    if stats["set_distances"]:
        sections.append(_distance_section(stats["set_distances"][0]))
    if stats["leakage"]:
        leak = stats["leakage"][0]
        verdict = ("**No video appears in more than one split** (judged on the digest of "
                   "the videos' decoded frames, not their ids or bytes)." if not leak["video_leakage"]
                   else f"**Videos in several splits: {leak['videos_in_several_splits']}**")
        conflicts = leak.get("video_split_conflicts_rejected", 0)
        if conflicts:
            verdict += (f"\n\n{conflicts} manifest line(s) listed a video whose content (bytes "
                        "or decoded frames) an earlier line had listed in another split; they "
                        "were rejected (`same_content_other_split`, see rejects/).")
        sections.append({"title": "Leakage check", "text": verdict + (
            f"\n\nStatic sets: {leak['static_images_in_several_splits']} of "
            f"{leak['static_images']} images are members of sets in more than one split "
            "(kNN sets of one collection overlap; the paper does not separate them).")})
    return {"summary": _summary(cfg, rules), "thresholds": _thresholds(cfg, rules.quality),
            "sections": sections, "manifest": {name: value for name, value in stats.items()
                                               if value is not None},
            "build": cache_record(cache_root, staging, cache_use(facts["work"]),
                                  also_read=(FRAME_IMAGE,)) if cache_root else {},
            "dataset_card": CARD}


# What each cache stage stores, and the work counters that say how many came from it.
# (stage, items, cached counter, computed counter), counters as "<stage>/<name>".
CACHE_ITEMS = (
    ("shot_list", "videos", "cache.shot_list/hit", "cache.shot_list/miss"),
    ("frame_embedding", "frames", "embed/frame.cached", "embed/frame.embedded"),
    ("brisque", "frames", "mining/frame.brisque_cached", "mining/frame.brisque_evaluations"),
    ("ocr", "frames", "mining/frame.ocr_cached", "mining/frame.ocr_evaluations"),
    ("image_embedding", "images", "cache.image_embedding/hit", "cache.image_embedding/miss"),
)


def cache_use(work: dict) -> dict:
    """{cache stage: {"items", "cached", "computed"}}: the build record's per-stage
    record of shot lists and frame embeddings (per video), BRISQUE and OCR scores (per
    frame) and image embeddings, from the run's work counters."""
    def counter(path):
        stage, name = path.split("/")
        return work.get(stage, {}).get(name, 0)
    return {stage: {"items": items, "cached": counter(cached), "computed": counter(computed)}
            for stage, items, cached, computed in CACHE_ITEMS
            if f"cache.{stage}" in work}


def _summary(cfg: ImageCodeConfig, rules: ImageCodeRules) -> str:
    encoder = rules.encoder_identity
    text = (
        f"Sets of {cfg.mining.set_size} similar images as in {PAPER} §3.1. Video sets: a frame "
        "joins the open set of its shot when its Euclidean distance to every frame already in "
        f"it is above {cfg.mining.distance_threshold}; blurry frames (BRISQUE) and frames with "
        "too much text (Tesseract OCR) never enter a set; a set still open when its shot ends "
        "is discarded; each set keeps its video's split. Static sets: a sampled query image and "
        f"its {cfg.static.neighbours} nearest neighbours (exact search). Descriptions (§3.2) are "
        "kept when retrievers found the target (§3.3: the one retriever in train, 2 of 3 in "
        f"valid and test).\n\nImages were embedded with **{_encoder_name(encoder)}**.")
    if rules.encoder.kind == "thumbnail":
        text += ("\n\n**This release used the offline stand-in encoder (a 16x16 thumbnail), not "
                 "CLIP.** It exists to exercise the pipeline without weights; do not use it as an "
                 "ImageCoDe release.")
    return text


def _thresholds(cfg: ImageCodeConfig, quality: QualityRule) -> dict:
    return {
        "mining.distance_threshold": {"value": cfg.mining.distance_threshold,
                                      "source": "§3.1 fn. 4 (0.35)"},
        "mining.set_size": {"value": cfg.mining.set_size, "source": "§3.1 (10)"},
        "quality.brisque.max_score": {
            "value": f"{quality.max_brisque} (BRISQUE/100)" if quality.brisque_enabled else "off",
            "source": "§3.1 (0.65)"},
        "quality.ocr.max_text_chars": {
            "value": quality.max_text_chars if quality.ocr_enabled else "off",
            "source": f"ours (§3.1 names Tesseract, no amount); min confidence {quality.min_confidence}"},
        "shots.backend": {"value": cfg.shots.backend,
                          "source": "issue default; the paper used ffmpeg's scene detection"},
        "decode.stride": {"value": cfg.decode.stride, "source": "§3.1 (every frame)"},
        "decode.truncation_tolerance": {
            "value": cfg.decode.truncation_tolerance,
            "source": "ours (share of the container's frames a video may miss)"},
        "sampling": {"value": _sampling(cfg), "source": "§3.1 / Table 1"},
        "static.sets": {"value": cfg.static.sets if cfg.static.images else "no static input",
                        "source": "§3.1 (4,845)"},
        "static.neighbours": {"value": cfg.static.neighbours, "source": "§3.1 (9)"},
        "crowd.targets_per_set": {"value": cfg.crowd.targets_per_set, "source": "§3.2 (3)"},
        "keep rule": {"value": "train 1/1, valid/test >= 2/3", "source": "§3.3"},
        "seed": {"value": cfg.seed, "source": "ours"},
    }


def _plots(cfg: ImageCodeConfig, quality: QualityRule, staging: str, tables: dict, brisque) -> dict:
    folder = FileSystems.join(staging, "plots")
    by_source = defaultdict(list)
    for table in ("video_sets", "static_sets"):
        if table in tables:
            rows = read_parquet_columns(FileSystems.join(staging, "parquet", table),
                                        ["source", "distance_mean"])
            for source, distance in zip(rows["source"], rows["distance_mean"]):
                by_source[source].append(distance)
    files = [plots.distance_histogram(dict(by_source), cfg.mining.distance_threshold,
                                      FileSystems.join(folder, "distances.png"))]
    if brisque:
        files.append(plots.brisque_histogram(brisque[0], quality.max_brisque,
                                             FileSystems.join(folder, "brisque.png")))
    if "descriptions" in tables:
        rows = read_parquet_columns(FileSystems.join(staging, "parquet", "descriptions"),
                                    ["split", "tokens"])
        lengths = defaultdict(list)
        for split, tokens in zip(rows["split"], rows["tokens"]):
            lengths[split].append(tokens)
        files.append(plots.lengths_by_split(dict(lengths), FileSystems.join(folder, "lengths.png")))
    captions = {"distances.png": "Mean within-set distance per set, by source; the line is "
                                 "mining.distance_threshold.",
                "brisque.png": "BRISQUE/100 of every frame the filter evaluated; the line is "
                               "quality.brisque.max_score.",
                "lengths.png": "Description length in tokens, per split."}
    return {"title": "Plots", "text": "\n\n".join(
        f"![{name}](plots/{name})\n\n{captions.get(name, '')}" for name in files)}


def _language_section(per_split: list, cfg: ImageCodeConfig) -> dict:
    rows = []
    for split, figures in sorted(per_split, key=lambda kv: ("train", "valid", "test").index(kv[0])
                                 if kv[0] in ("train", "valid", "test") else 9):
        depth = figures.get("mean_tree_depth")
        rows.append([split, figures["descriptions"], f"{figures['mean_tokens']:.1f}",
                     figures["word_types"], f"{figures['mean_sentences']:.1f}",
                     f"{depth:.1f}" if depth is not None else "not computed"])
    note = ("Tokens and sentences: spaCy's rule-based English tokenizer and sentencizer (no "
            "model). Word types: distinct lower-cased tokens that are not punctuation. ")
    note += (f"Tree depth: parsed with `{cfg.stats.parser}` (root = depth 1)." if cfg.stats.parser
             else "Tree depth needs a parser: set `stats.parser` to a spaCy pipeline name or path.")
    return {"title": "Language (§4.2, Table 4)", "text": note + "\n\n" + markdown_table(
        ["split", "descriptions", "mean tokens", "word types", "mean sentences", "mean tree depth"],
        rows)}


def _agreement_section(rows: list) -> dict:
    table = []
    for r in sorted(rows, key=lambda r: (r["split"], r["kind"])):
        alpha = r.get("alpha")
        table.append([r["split"], r["kind"], r["descriptions"], r["retrievals"],
                      _fmt(r["accuracy"]), _fmt(r.get("alpha_nominal")), _fmt(r.get("alpha_interval")),
                      f"{r.get('level', '')} {_fmt(alpha)}".strip() if alpha is not None else ""])
    return {"title": "Human accuracy and agreement (§4.1, Table 3)", "text": (
        "Accuracy: share of retrievals that found the target. Krippendorff's alpha over "
        "retrievers' guesses, nominal for static sets and interval for video sets (train has "
        "one retriever per description, so no alpha).\n\n" + markdown_table(
            ["split", "kind", "descriptions", "retrievals", "accuracy", "alpha nominal",
             "alpha interval", "alpha (paper's level)"], table))}


def _pools_section(report: dict) -> dict:
    rows = []
    for role, overlap in sorted(report["overlap"].items()):
        sizes = ", ".join(f"{k} {v}" for k, v in overlap["sizes"].items())
        jaccard = ", ".join(f"{k} {_fmt(v)}" for k, v in sorted(overlap["jaccard"].items()))
        seen = ", ".join(f"{k} {_fmt(v)}" for k, v in sorted(overlap["seen_elsewhere"].items()))
        rows.append([role, sizes, jaccard, seen])
    return {"title": "Annotator pools (§3.2, §3.3)", "text": (
        "The paper keeps the train and valid/test pools partly disjoint. Jaccard overlap of "
        "the worker sets per pair of splits, and the share of a split's workers also seen in "
        "another split (`stats/worker_pools.json` lists the workers).\n\n" + markdown_table(
            ["role", "workers per split", "Jaccard", "seen in another split"], rows))}


def _distance_section(stats: dict) -> dict:
    rows = [[source, v["sets"], _fmt(v["mean_distance"])]
            for source, v in sorted(stats["by_source"].items())]
    ratio = stats.get("static_over_video")
    verdict = (f"Static over video mean distance: **{_fmt(ratio)}** (paper: {PAPER_RATIO}; video "
               "frames are the more similar)." if ratio is not None
               else "The ratio needs both video and static sets.")
    return {"title": "Within-set distances (§4.3)", "text": "Mean pairwise Euclidean distance "
            "between the embeddings of a set's images, averaged per source.\n\n"
            + markdown_table(["source", "sets", "mean distance"], rows) + "\n\n" + verdict}


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _encoder_name(identity: dict) -> str:
    name = f"{identity.get('kind')} {identity.get('model_name', '')}".strip()
    sha = identity.get("weights_sha256")
    return f"{name} (weights sha256 {sha[:12]}…)" if sha else name


def _sampling(cfg: ImageCodeConfig) -> str:
    per_source = ", ".join(f"{k}: {v}" for k, v in sorted(cfg.sampling.sets_per_source.items()))
    default = "all" if cfg.sampling.default is None else cfg.sampling.default
    return f"{per_source + '; ' if per_source else ''}other sources: {default}"
