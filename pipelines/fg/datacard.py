"""What DATACARD.md (and the manifest) say about an FG release, beyond the generic card:
the stand-ins used, Table 2 (pool sizes), the coarse share, the renovation funnel,
Table 3 (pipelines/fg/table3.py) and the length histograms before and after."""
from __future__ import annotations

import collections

from apache_beam.io.filesystems import FileSystems

from pipelines.fg.config import FgConfig
from pipelines.fg.tagger import NONE
from pipelines.release.cards import plots
from pipelines.release.cards.datacard import markdown_table
from pipelines.release.cards.hf_card import CardFacts
from pipelines.release.write.manifest import read_parquet_columns

PAPER = "Chen, Yao, Jin, Rethinking Benchmarks for Cross-modal Image-text Retrieval (SIGIR '23)"
NAMES = {"mscoco": "MSCOCO-FG (MSCOCO-Test-5K)", "flickr30k": "Flickr30K-FG (Flickr30K-Test-1K)"}
PAPER_TABLE_2 = {"mscoco": (5000, 31244), "flickr30k": (1000, 6867)}
PAPER_TABLE_3 = {"mscoco": "11,050 texts; length 10.23 -> 12.59; nouns 3.52 -> 4.08 and "
                           "adjectives 0.62 -> 1.28 per text",
                 "flickr30k": "2,156 texts; length 10.93 -> 13.91; nouns 7,587 -> 9,497, "
                              "adjectives 1,906 -> 2,726"}
FUNNEL = ("coarse", "prompts", "details", "filter1", "merge", "filter2", "pick")


def stand_ins(cfg: FgConfig) -> list:
    """[(part, what this build used, real or stand-in)]."""
    rows = []
    if cfg.embed.kind == "thumbnail":
        rows.append(["encoder (F2-F7, F11, F14)", "thumbnail image encoder + colour-word text side",
                     "STAND-IN for CLIP ViT-B/32 (§4.1)"])
    else:
        rows.append(["encoder (F2-F7, F11, F14)", f"open_clip {cfg.embed.model_name} ({cfg.embed.checkpoint})",
                     "real (§4.1: ViT-B/32)" if cfg.embed.model_name == "ViT-B-32" else "another CLIP"])
    rows.append(["nouns, parse (F8, F12)", "off" if cfg.nouns.tagger == NONE else f"spaCy {cfg.nouns.tagger}",
                 "stand-in for Stanford CoreNLP's POS tags (§3.2.2(1)); spaCy parse as in §3.2.3(1)"])
    details = {"file": ("the user's details file", "user's model output"),
               "standin": ("colour-naming stand-in (pipelines/fg/generators.py)", "STAND-IN for VinVL_base"),
               "model": (f"local image-to-text model {cfg.details.model_dir}", "labelled substitute for VinVL_base")}
    merge = {"file": ("the user's merged sentences", "user's model output"),
             "rules": ("rule-based inverse of F12 (merge_rules.merge_rule_based)", "STAND-IN for GPT-2 small"),
             "gpt2": (f"local GPT-2 {cfg.merge.model_dir}", "real kind (§3.2.3), weights the user's")}
    rows.append(["details (F10)", *details[cfg.details.kind]])
    rows.append(["merge (F13)", *merge[cfg.merge.kind]])
    return rows


CARD = CardFacts(
    main_table="captions",
    language=("en",),
    # cross-modal image-text retrieval, both ways (the Hub has no retrieval category that
    # spans images and texts; retrieval sets on the Hub carry these two)
    task_categories=("image-to-text", "text-to-image"),
    license="unknown",
    license_source=("the public repository github.com/cwj1412/MSCOCO-Flikcr30K_FG has no license "
                    "file (commit 6d98d41); by copyright it gives the pool's image file names "
                    "only (its README): the images are COCO's and Flickr30K's, under their terms, "
                    "and not in this release"),
    citation="""@inproceedings{chen2023rethinking,
  title = {Rethinking Benchmarks for Cross-modal Image-text Retrieval},
  author = {Chen, Weijing and Yao, Linli and Jin, Qin},
  booktitle = {Proceedings of the 46th International ACM SIGIR Conference on Research and Development in Information Retrieval (SIGIR '23)},
  year = {2023},
  doi = {10.1145/3539618.3591758}
}""",
    homepage="https://github.com/cwj1412/MSCOCO-Flikcr30K_FG")
# Rejects whose item stays in the release (the data card counts them apart).
KEPT_REJECTS = {
    "not_coarse": "the caption stays in captions, unchanged: it is fine-grained",
    "no_candidate": "the caption stays in captions, unchanged: no renovation survived",
    "no_prompt": "the caption stays in captions, unchanged: no prompt applies",
    "already_in_pool": "the image is in the pool once, through another similar set",
}


def describe(cfg: FgConfig, facts: dict) -> dict:
    staging, stages = facts["staging"], facts["stages"]
    columns = read_parquet_columns(FileSystems.join(staging, "parquet", "captions"),
                                   ["image_id", "caption_index", "original", "renovated", "changed", "coarse"])
    targets = stages.get("inputs", {}).get("target.out", 0)
    pool = stages.get("pool", {}).get("member.out", 0)
    captions = len(columns["image_id"])
    coarse = sum(columns["coarse"])
    changed = sum(columns["changed"])
    table3 = _table3(cfg, columns)
    lengths = {"before (changed captions)": [len(o.split()) for o, c in zip(columns["original"], columns["changed"]) if c],
               "after (changed captions)": [len(r.split()) for r, c in zip(columns["renovated"], columns["changed"]) if c]}
    png = plots.lengths_by_split(lengths, FileSystems.join(staging, "plots", "lengths.png"))
    paper_targets, paper_pool = PAPER_TABLE_2[cfg.configuration]
    sections = [
        {"title": "Stand-ins", "text": "What this build used for each model of the paper. A stand-in "
         "makes the pipeline run offline; its numbers are not the paper's.\n\n"
         + markdown_table(["part", "used", "real or stand-in"], stand_ins(cfg))},
        {"title": "Table 2: pool sizes (§3.1.3)", "text": markdown_table(
            ["", "targets", "new pool", "new images per target"],
            [["this release", targets, pool, f"{(pool - targets) / targets:.2f}" if targets else "–"],
             ["paper", paper_targets, paper_pool, f"{(paper_pool - paper_targets) / paper_targets:.2f}"]])},
        {"title": "Coarse texts and renovation (§3.2)", "text": (
            f"{coarse} of {captions} captions are coarse (their own image is not ranked first, "
            f"`coarse.pool` = {cfg.coarse.pool}); the paper: \"more than half\". {changed} captions "
            "were renovated (the paper's release changed 44%: a coarse caption whose candidates all "
            "fail the CLIPScore filters stays as it was, `no_candidate`).\n\n"
            + markdown_table(["stage", "level", "in", "out"], _funnel(stages)))},
        {"title": "Table 3: renovated texts", "text": table3 + f"\n\nPaper: {PAPER_TABLE_3[cfg.configuration]}."},
        {"title": "Caption lengths before and after", "text": f"![lengths](plots/{png})"},
    ]
    return {"summary": _summary(cfg), "thresholds": _thresholds(cfg), "sections": sections,
            "manifest": {"table2": {"targets": targets, "pool": pool}, "coarse": coarse,
                         "changed": changed, "stand_ins": stand_ins(cfg)},
            "dataset_card": CARD, "kept_rejects": KEPT_REJECTS}


def _funnel(stages: dict) -> list:
    rows = []
    for stage in FUNNEL:
        names = stages.get(stage, {})
        for level in sorted({k.split(".")[0] for k in names}):
            rows.append([stage, level, names.get(f"{level}.in", 0), names.get(f"{level}.out", 0)])
    return rows


def _table3(cfg: FgConfig, columns: dict) -> str:
    from pipelines.fg.table3 import load_tagger, table3
    original, renovated = collections.defaultdict(dict), collections.defaultdict(dict)
    for image, index, o, r in zip(columns["image_id"], columns["caption_index"],
                                  columns["original"], columns["renovated"]):
        original[image][index] = o
        renovated[image][index] = r
    as_lists = lambda d: {k: [t for _, t in sorted(v.items())] for k, v in d.items()}  # noqa: E731
    tagger = None if cfg.nouns.tagger == NONE else load_tagger(cfg.nouns.tagger)
    figures = table3(as_lists(original), as_lists(renovated), tagger=tagger, keep=cfg.release.keep,
                     html_escape=cfg.release.html_escape)
    rows = [[name, value] for name, value in _flatten(figures)]
    if tagger is None:
        rows += [["nouns, adjectives", "not computed (nouns.tagger: none)"]]
    return markdown_table(["figure", "value"], rows)


def _flatten(figures: dict, prefix: str = ""):
    for name, value in figures.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", (f"{value:.2f}" if isinstance(value, float) else value)


def _summary(cfg: FgConfig) -> str:
    return (f"{NAMES[cfg.configuration]}, rebuilt as in {PAPER} §3: a larger image pool of "
            "similar images (§3.1) and coarse captions renovated with details (§3.2). "
            "`parquet/captions` holds every caption before and after, `parquet/similar_sets` the "
            "similar set of each target, `parquet/pool` the new pool; `compat/` the public files "
            "(annotation JSON and image-name list); `review/review_sheet.jsonl` the sheet a "
            "correction round starts from; `merge_training/` the pairs a merger learns from. "
            "See the Stand-ins section before using the numbers.")


def _thresholds(cfg: FgConfig) -> dict:
    s, f = cfg.similar, cfg.filters
    return {
        "similar.image_k (k')": {"value": s.image_k, "source": "§3.1.2(2): unspecified in the paper"},
        "similar.text_k (k'')": {"value": s.text_k, "source": "§3.1.2(2): unspecified in the paper (per caption)"},
        "similar.set_size": {"value": s.set_size, "source": "§3.1.2(3): the target plus 9"},
        "similar.merge_rule": {"value": s.merge_rule, "source": "§3.1.2(3): unspecified in the paper"},
        "coarse.pool": {"value": cfg.coarse.pool, "source": "§3.2.1: unspecified in the paper"},
        "prompts.templates": {"value": cfg.prompts.templates, "source": "Table 1"},
        "details.max_new_tokens": {"value": cfg.details.max_new_tokens, "source": "§3.2.2(3): decoding unspecified"},
        "merge.max_new_tokens": {"value": cfg.merge.max_new_tokens, "source": "§3.2.3: decoding unspecified"},
        "filters.prefix / weight": {"value": f"{f.prefix!r} / {f.weight}", "source": "Hessel et al.'s CLIPScore"},
        "filters.ties_pass": {"value": f.ties_pass, "source": "§3.2.2(4): unspecified in the paper"},
        "corrections.review_size": {"value": cfg.corrections.review_size, "source": "§3.2.4 (100)"},
        "release.keep / html_escape": {"value": f"{cfg.release.keep or '(nothing)'} / {cfg.release.html_escape}",
                                       "source": "the public release's normalisation (pipelines/fg/captions.py)"},
        "seed": {"value": cfg.seed, "source": "ours"},
    }
