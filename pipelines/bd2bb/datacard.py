"""What DATACARD.md (and the manifest) say about a BD2BB release, beyond the generic card:
Table 1 per split (from the written samples table), the k curve with the elbow plot,
cluster sizes after review, target-position uniformity, the review sheet and the cache."""
from __future__ import annotations

import logging
import math

from apache_beam.io.filesystems import FileSystems

from pipelines.bd2bb.config import BD2BBConfig
from pipelines.bd2bb.stats import COLUMNS, table1
from pipelines.cache import cache_record
from pipelines.release.cards import plots
from pipelines.release.cards.datacard import markdown_table
from pipelines.release.cards.hf_card import CardFacts
from pipelines.release.write.manifest import read_parquet_columns, read_stats

PAPER = "Pezzelle et al. 2020, BD2BB"
POSITION_WARN_P = 0.01       # chi-square p-value under which the target positions are flagged
log = logging.getLogger("pipelines.bd2bb.pipeline")
PAPER_TABLE1 = {"train": (2102, 1517, 1683, 5063, 2102, 4228), "val": (4082, 2447, 2772, 6082, 3567, 4133),
                "test": (4081, 2425, 2720, 6108, 3561, 4138)}


CARD = CardFacts(
    main_table="samples",
    language=("en",),
    # the action that fits an image and an intention, out of a set of candidate actions
    task_categories=("multiple-choice", "text-classification"),
    license="unknown",
    license_source=("the public repository github.com/sandropezzelle/bd2bb has no license file "
                    "(commit eb1258a); the images are MS-COCO train2014's, under COCO's terms of "
                    "use, and not in this release"),
    citation="""@inproceedings{pezzelle-etal-2020-different,
  title = "{B}e {D}ifferent to {B}e {B}etter! {A} {B}enchmark to {L}everage the {C}omplementarity of {L}anguage and {V}ision",
  author = "Pezzelle, Sandro and Greco, Claudio and Gandolfi, Greta and Gualdoni, Eleonora and Bernardi, Raffaella",
  booktitle = "Findings of the Association for Computational Linguistics: EMNLP 2020",
  month = nov,
  year = "2020",
  address = "Online",
  publisher = "Association for Computational Linguistics",
  url = "https://www.aclweb.org/anthology/2020.findings-emnlp.248",
  pages = "2751--2767"
}""",
    homepage="https://sites.google.com/view/bd2bb/home")


def describe(cfg: BD2BBConfig, facts: dict, cache_root=None) -> dict:
    staging = facts["staging"]
    clusters = (read_stats(staging, "clusters") or [None])[0]
    sizes = read_stats(staging, "cluster_sizes") or []
    positions = (read_stats(staging, "target_positions") or [None])[0]
    stats = _table1(staging)
    sections = [_table1_section(stats)]
    if clusters:
        sections.append(_cluster_section(cfg, clusters, sizes, staging))
    sections.append(_codes_section(facts["stages"]))
    if positions:
        sections.append(_positions_section(positions))
        if positions["n"] and not positions["chi2_p"] > POSITION_WARN_P:
            log.warning("target positions are not uniform: chi-square p = %s (counts %s)",
                        _fmt(positions["chi2_p"]), positions["counts"])
    sections.append({"title": "Cluster review", "text": (
        "`review/cluster_review.csv` lists up to "
        f"{cfg.clusters.review_per_cluster} actions per cluster (drawn by hash of seed and action). "
        "Write decisions under the header and the `clustering` row of `review/decisions_template.csv` "
        f"(this clustering: `{clusters['fingerprint'] if clusters else '-'}`; decisions for another "
        "clustering stop the build) with `label`, `drop`, `move`, `remove` (pipelines/bd2bb/README.md), and rebuild with "
        "`--set clusters.review=decisions.csv`. "
        + (f"This build applied `{cfg.clusters.review}`." if cfg.clusters.review
           else "This build had no review decisions: every cluster was kept unlabelled."))})
    return {"summary": _summary(cfg, facts), "thresholds": _thresholds(cfg), "sections": sections,
            "manifest": {"table1": stats, "clusters": clusters, "target_positions": positions,
                         "no_main_verb": _no_main_verb(facts["stages"])},
            "build": cache_record(cache_root, staging, _cache_use(facts["stages"], facts["work"]))
            if cache_root else {}, "dataset_card": CARD}


def _cache_use(stages: dict, work: dict) -> dict:
    """Per cache stage (action embeddings, model parses): the actions looked up, cached
    and computed (the build record's `cache`)."""
    return {name[len("cache."):]: {"items": stages.get(name, {}).get("item.in", 0),
                                   "cached": c.get("hit", 0), "computed": c.get("miss", 0)}
            for name, c in sorted(work.items()) if name.startswith("cache.")}


def _table1(staging: str) -> list:
    columns = read_parquet_columns(FileSystems.join(staging, "parquet", "samples"),
                                   ["split", "image", "intention", "endings", "ending_types", "hard_test"])
    rows = [dict(zip(columns, values)) for values in zip(*columns.values())]
    stats = table1(rows)
    hard = [r for r in rows if r["hard_test"]]
    if rows:
        hard_row = table1(hard, splits=())[0] if hard else {"samples": 0}
        hard_row["split"] = "hard test (§7)"
        hard_row["share"] = round(100.0 * len(hard) / len(rows), 1)
        stats.append(hard_row)
    return stats


def _table1_section(stats: list) -> dict:
    rows = [[s.get(c, "") if s.get(c) is not None else "–" for c in COLUMNS] for s in stats]
    paper = [[split, *values] for split, values in PAPER_TABLE1.items()]
    return {"title": "Statistics per split (Table 1)", "text": (
        "As in the paper's Table 1: unique images, intentions, actions (all five candidates), "
        "target and decoy actions; mean lengths in characters (the public files show Table 1's "
        "lengths are characters, pipelines/bd2bb/stats.py).\n\n"
        + markdown_table(COLUMNS, rows)
        + "\n\nThe paper's figures (samples, images, intentions, actions, target, decoy actions):\n\n"
        + markdown_table(["split", "samples", "images", "intentions", "actions", "target", "decoy"], paper))}


def _cluster_section(cfg: BD2BBConfig, clusters: dict, sizes: list, staging: str) -> dict:
    plot = _elbow_plot(clusters, FileSystems.join(staging, "plots", "elbow.png"))
    curve = [[c["k"], f"{c['inertia']:.1f}", _fmt(c["silhouette"]), "**chosen**" if c["k"] == clusters["k"] else ""]
             for c in clusters["curve"]]
    size_rows = sorted(([s["cluster"], s["label"] or "(unlabelled)", s["datapoints"]] for s in sizes),
                       key=lambda r: (-r[2], r[0]))
    return {"title": "Topic clusters (§3.2, A.3)", "text": (
        f"k-means over {clusters['actions']} unique action embeddings for k in "
        f"{cfg.clusters.k_min}..{cfg.clusters.k_max} step {cfg.clusters.k_step}; k = **{clusters['k']}** "
        f"chosen by **{clusters['method']}** (elbow: the k farthest below the chord of the normalised "
        "inertia curve). The paper's k is 60 (USE embeddings, 12,457 actions). Silhouette (cosine) beside each k.\n\n"
        + (f"![elbow](plots/{plot})\n\n" if plot else "")
        + markdown_table(["k", "inertia", "silhouette", ""], curve)
        + "\n\nDatapoints per cluster after the review:\n\n"
        + markdown_table(["cluster", "label", "datapoints"], size_rows))}


def _elbow_plot(clusters: dict, path: str):
    if not clusters["curve"]:
        return None
    figure, axes = plots._figure()
    ks = [c["k"] for c in clusters["curve"]]
    axes.plot(ks, [c["inertia"] for c in clusters["curve"]], marker="o", color="tab:blue")
    axes.axvline(clusters["k"], color="tab:red", linestyle="--", label=f"chosen k = {clusters['k']}")
    axes.set_xlabel("k")
    axes.set_ylabel("k-means inertia", color="tab:blue")
    right = axes.twinx()
    right.plot(ks, [c["silhouette"] for c in clusters["curve"]], marker="s", color="tab:green")
    right.set_ylabel("silhouette (cosine)", color="tab:green")
    axes.legend(loc="upper right")
    axes.set_title("Elbow: inertia and silhouette per k")
    figure.tight_layout()
    return plots._save(figure, path)


def _no_main_verb(stages: dict) -> int:
    return int(stages.get("parse", {}).get("tuple.rejected.no_main_verb", 0))


def _codes_section(stages: dict) -> dict:
    n = _no_main_verb(stages)
    parsed = stages.get("parse", {}).get("tuple.in", 0)
    return {"title": "Argument codes (§3.2, Table 4)", "text": (
        f"Tuples whose action parse gives no main verb (no code1; `no_main_verb` rejects): **{n}** "
        f"of {parsed} tuples reaching the parse stage. Copular actions reach their verb (\"be able to talk\" -> talk) or "
        "take the copula as code1; a parse with neither is rejected, so no target enters the decoy "
        "step with empty codes (which would let every noun/verb exclusion pass).")}


def _positions_section(p: dict) -> dict:
    return {"title": "Target positions (§4)", "text": (
        "The decoys are shown in a seeded random order and the target is placed so that every "
        "split (and the hard test subset) has the same number of targets at each position, up "
        "to 1 when its size is not a multiple of 5 (the public release has 2,053 at each); "
        "`label` is the target's position. Targets per position 0..4: "
        + "; ".join(f"{name} {counts}" for name, counts in p.get("per_split", {}).items())
        + f"; all {p['counts']} (n = {p['n']}); chi-square test against "
        f"uniform: p = {_fmt(p['chi2_p'])}"
        + (" (no evidence of bias at p > 0.01)." if p["chi2_p"] > POSITION_WARN_P
           else " — **WARNING: not uniform (p <= 0.01)**, check the seed/shuffle."))}


def _summary(cfg: BD2BBConfig, facts: dict) -> str:
    encoder = facts["models"]["sentence_encoder"]
    parser = facts["models"]["parser"]
    text = (
        f"Multiple-choice samples as in {PAPER} §4: an image and an intention (\"If I ...\"), the "
        "target action (\"I will ...\") and four decoys: 2 language-based (most similar actions of "
        "other topics sharing no noun) and 2 vision-based (least similar actions of the same topic "
        "sharing no verb). Tuples were filtered (§3.1, A.1), their actions clustered into topics "
        "(§3.2) and annotated with 4 argument codes (Table 4); splits 20/40/40 (§4.1) with the hard "
        f"test subset (§7).\n\nActions were embedded with **{encoder['name']}** "
        f"(weights sha256 {encoder['weights_sha256'][:12]}…) and parsed by **{parser['backend']}**.")
    if cfg.embed.model is None:
        text += ("\n\nThe paper used the Universal Sentence Encoder (512-d); this release used the "
                 "bundled all-MiniLM-L6-v2 (384-d), so clusters and decoys differ from the paper's.")
    return text


def _thresholds(cfg: BD2BBConfig) -> dict:
    f, c = cfg.filters, cfg.clusters
    return {
        "filters.max_intention_chars / max_action_chars": {
            "value": f"{f.max_intention_chars} / {f.max_action_chars}", "source": "ours (public maxima 107 / 105)"},
        "filters.min_english_share": {"value": f.min_english_share, "source": "ours (§3.1 was semi-manual)"},
        "filters.min_english_probability": {
            "value": f"{f.min_english_probability} among {', '.join(f.languages)} (py3langid)",
            "source": "ours (§3.1 was semi-manual)"},
        "filters.intention_min_tokens": {"value": f"{f.intention_min_tokens} (opener counted: {f.count_opener})",
                                         "source": "A.1 (5)"},
        "caption noun frequency": {"value": "> 1", "source": "A.1"},
        "parser.backend": {"value": cfg.parser.backend, "source": "§3.2 (Stanford parser, manually fixed)"},
        "clusters.k": {"value": c.k if c.k else f"elbow over {c.k_min}..{c.k_max}", "source": "§3.2 fn. 5 (60); the k range is ours"},
        "decoys": {"value": "2 language + 2 vision", "source": "§4"},
        "decoys.pool_size": {"value": cfg.decoys.pool_size, "source": "ours (§4: 'a number')"},
        "splits.ratios": {"value": cfg.splits.ratios, "source": "§4.1 (20/40/40)"},
        "seed": {"value": cfg.seed, "source": "ours"},
    }


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)
