"""What DATACARD.md (and the manifest) say about a VSR release, beyond the generic card.

Reads the summaries the pipeline wrote under stats/ (agreement, counts, zero-shot
concepts, leakage) and the split columns of parquet/examples, draws the relation and
concept frequency plots into plots/, and returns the card's sections plus the figures
the manifest records.
"""
from __future__ import annotations

import collections
import logging
import math

from apache_beam.io.filesystems import FileSystems

from pipelines.release.cards import plots
from pipelines.release.cards.datacard import markdown_table
from pipelines.release.cards.hf_card import CardFacts
from pipelines.release.write.manifest import count_rows_by, read_stats
from pipelines.vsr.config import VsrConfig
from pipelines.vsr.relations import CATEGORIES, RELATIONS, relation_category

PAPER = "Liu et al. 2023, Visual Spatial Reasoning (TACL)"
log = logging.getLogger("pipelines.vsr.pipeline")
# the paper's column of the agreement table (§4.1, §3.5)
PAPER_FIGURES = {"examples": 12809, "validation_labels": 39507, "all_agree_share": 0.691,
                 "kept_share": 0.856, "kept": 10972, "fleiss_kappa": 0.895, "human_accuracy": 0.954}


CARD = CardFacts(
    main_table="examples",
    language=("en",),
    # is the caption's spatial relation true of the image: a yes/no question on an image
    task_categories=("visual-question-answering", "image-text-to-text"),
    license="apache-2.0",
    license_source=("the public repository github.com/cambridgeltl/visual-spatial-reasoning is "
                    "licensed under the Apache License 2.0 (its LICENSE file); the images are "
                    "COCO 2017's, under COCO's terms of use, and not in this release"),
    citation="""@article{Liu2022VisualSR,
  title = {Visual Spatial Reasoning},
  author = {Fangyu Liu and Guy Edward Toh Emerson and Nigel Collier},
  journal = {Transactions of the Association for Computational Linguistics},
  year = {2023}
}""",
    homepage="https://github.com/cambridgeltl/visual-spatial-reasoning")
# Rejects whose item stays in the release (the data card counts them apart).
KEPT_REJECTS = {
    "concepts_across_splits": "the example stays in the random split; only the concept "
                              "zero-shot split leaves it out",
    "uncaptioned_pair": "the pair stays in image_pairs; no caption was written for it",
}


def describe(cfg: VsrConfig, facts: dict) -> dict:
    staging = facts["staging"]
    tables = facts["counts"]["tables"]
    stats = {name: read_stats(staging, name)
             for name in ("agreement", "counts", "zeroshot_concepts", "leakage", "sampling")}
    sections = []
    if stats["sampling"]:
        sections.append(_sampling_section(stats["sampling"][0]))
    splits = None
    if "examples" in tables:
        splits = _split_counts(staging)
        sections.append(_splits_section(splits, stats["zeroshot_concepts"] or []))
    counts = {r["name"]: r["counts"] for r in (stats["counts"] or [])}
    if counts:
        sections += _relations_sections(counts, cfg, staging)
    if stats["agreement"]:
        sections.append(_agreement_section(stats["agreement"][0], cfg))
    if stats["leakage"]:
        sections.append(_leakage_section(stats["leakage"][0]))
    manifest = {name: value[0] if name in ("agreement", "leakage", "sampling") else value
                for name, value in stats.items() if value}
    if splits is not None:
        manifest["splits"] = splits
    top = {"leakage_check": _leakage_verdict(stats["leakage"][0])} if stats["leakage"] else {}
    return {"summary": _summary(cfg, tables), "thresholds": _thresholds(cfg),
            "sections": sections, "manifest": manifest, "manifest_top": top,
            "dataset_card": CARD, "kept_rejects": KEPT_REJECTS}


def _sampling_section(s: dict) -> dict:
    text = (f"Pairs requested (`sampling.pairs`): {s['pairs_requested']}; sampled: "
            f"**{s['pairs_sampled']}**, in {s['draws']} draws ({s['pool_exhausted_draws']} hit a "
            f"used-up pool, `pool_exhausted`), from {s['pools']} concept-pair pools with room for "
            f"{s['pool_capacity']} pairs. Drawing stopped: {s['stopped']}.")
    if s["shortfall"]:
        log.warning("sampled %d of %d requested pairs (%s)", s["pairs_sampled"],
                    s["pairs_requested"], s["stopped"])
        text += (f"\n\n**Shortfall: {s['shortfall']} pairs fewer than requested** "
                 "(the COCO input has too few eligible images).")
    return {"title": "Image-pair sampling (§3.1)", "text": text}


def _summary(cfg: VsrConfig, tables: dict) -> str:
    parts = [f"Visual Spatial Reasoning as in {PAPER} §3."]
    if "image_pairs" in tables:
        parts.append(
            f"Image pairs (§3.1): concept pairs drawn from the 80 COCO categories; each image of a "
            f"pair holds exactly {cfg.sampling.max_instances} instance of both concepts, each of "
            f"area >= {cfg.sampling.min_area:g} px. Caption tasks for them are in `tasks/`.")
    if "examples" in tables:
        parts.append(
            f"Examples: one caption on one image, True or False. Kept when at least "
            f"{cfg.validation.min_agreeing} validators and at least {cfg.validation.min_agreement} "
            "of them agree with the writer's label (§3.2, §4.1). `split` is the random split "
            "(§3.4, 70/10/20 of the examples), `zeroshot_split` the concept zero-shot split "
            "(50/20/30 of the concepts; empty when subject and object fell into different parts). "
            "`compat/` holds the public file layout.")
    if cfg.inputs.annotations and not cfg.inputs.coco:
        parts.append("This build validated annotations given in the public raw layout; it sampled "
                     "no image pairs.")
    return " ".join(parts)


def _thresholds(cfg: VsrConfig) -> dict:
    v = cfg.validation
    return {
        "sampling.min_area": {"value": cfg.sampling.min_area, "source": "§3.1 (30,000 px)"},
        "sampling.max_instances": {"value": cfg.sampling.max_instances, "source": "§3.1 (1)"},
        "sampling.pairs": {"value": cfg.sampling.pairs if cfg.inputs.coco else "no COCO input",
                           "source": "ours (§4.1: 12,809 raw data points)"},
        "validation.min_agreeing": {"value": v.min_agreeing, "source": "§3.2 (2)"},
        "validation.min_agreement": {"value": v.min_agreement, "source": "§4.1 (2/3)"},
        "vote rules": {"value": f"writer {v.writer_votes}, duplicates {v.duplicate_votes}, "
                                f"both lists {v.conflicting_votes}",
                       "source": "ours; count = as the public release (pipelines/vsr/README.md)"},
        "crowd.aggregation": {"value": cfg.crowd.aggregation,
                              "source": "majority = the keep rule's count (§3.2, §4.1); "
                                        "dawid_skene = ours (transforms/crowd/aggregation.py)"},
        "splits.random": {"value": _ratios(cfg.splits.random), "source": "§3.4 (70/10/20)"},
        "splits.zeroshot": {"value": _ratios(cfg.splits.zeroshot),
                            "source": "§3.4 (50/20/30 of the concepts)"},
        "relations": {"value": f"{len(RELATIONS)} distinct of Table 1's 71"
                               + (f" + {', '.join(sorted(cfg.captions.extra_relations))}"
                                  if cfg.captions.extra_relations else ""),
                      "source": "Table 1"},
        "seed": {"value": cfg.seed, "source": "ours"},
    }


def _ratios(ratios: dict) -> str:
    return "/".join(f"{name} {share:g}" for name, share in ratios.items())


def _split_counts(staging: str) -> dict:
    rows = count_rows_by(FileSystems.join(staging, "parquet", "examples"), ["split", "zeroshot_split"])
    random, zeroshot = collections.Counter(), collections.Counter()
    for (split, zs), n in rows.items():
        random[split] += n
        zeroshot[zs or "(not in zero-shot)"] += n
    return {"random": dict(sorted(random.items())), "zeroshot": dict(sorted(zeroshot.items()))}


def _splits_section(splits: dict, concepts: list) -> dict:
    names = ["train", "dev", "test"]
    rows = [["random"] + [splits["random"].get(s, 0) for s in names] + [sum(splits["random"].values())],
            ["zero-shot"] + [splits["zeroshot"].get(s, 0) for s in names]
            + [sum(v for k, v in splits["zeroshot"].items() if k in names)]]
    by_part = collections.defaultdict(list)
    for c in concepts:
        by_part[c["split"]].append(c["concept"])
    concept_rows = [[part, len(by_part[part]), ", ".join(sorted(by_part[part]))] for part in names]
    dropped = splits["zeroshot"].get("(not in zero-shot)", 0)
    return {"title": "Splits (§3.4, Table 2)", "text": (
        "Examples per split (paper, Table 2: random 7,680 / 1,097 / 2,195; zero-shot "
        "4,713 / 231 / 616).\n\n" + markdown_table(["split", "train", "dev", "test", "total"], rows)
        + f"\n\n{dropped} examples have their two concepts in different zero-shot parts and are "
        "not in the zero-shot split (`rejects/`, reason `concepts_across_splits`).\n\n"
        "Concepts per zero-shot part:\n\n"
        + markdown_table(["part", "concepts", "names"], concept_rows))}


def _relations_sections(counts: dict, cfg: VsrConfig, staging: str) -> list:
    relations = {key.split("|")[0]: n for key, n in counts.get("relations", {}).items()}
    extra = cfg.captions.extra_relations
    by_category = collections.Counter()
    for rel, n in relations.items():
        by_category[relation_category(rel, extra)] += n
    rel_rows = [[rel, relation_category(rel, extra), n]
                for rel, n in sorted(relations.items(), key=lambda kv: (-kv[1], kv[0]))]
    unused = [r for r in RELATIONS if r not in relations]
    cat_rows = [[c, by_category.get(c, 0)] for c in list(CATEGORIES) + sorted(set(extra.values()))]
    concepts = collections.defaultdict(lambda: [0, 0])
    for key, n in counts.get("concepts", {}).items():
        name, role = key.split("|")
        concepts[name][0 if role == "subj" else 1] += n
    concept_rows = [[name, s, o, s + o] for name, (s, o) in
                    sorted(concepts.items(), key=lambda kv: (-sum(kv[1]), kv[0]))]
    folder = FileSystems.join(staging, "plots")
    rel_png = plots.frequency_bars(relations, FileSystems.join(folder, "relations.png"),
                                   "relation", "examples")
    concept_png = plots.frequency_bars({k: sum(v) for k, v in concepts.items()},
                                       FileSystems.join(folder, "concepts.png"),
                                       "concept (subject or object)", "mentions")
    return [
        {"title": "Relations (§4.1, Figure 5)", "text": (
            f"![relation frequencies](plots/{rel_png})\n\n"
            f"{len(relations)} relations are used" + (f"; unused from Table 1: {', '.join(unused)}"
                                                      if unused else "") + ".\n\n"
            + markdown_table(["category", "examples"], cat_rows) + "\n\n"
            + markdown_table(["relation", "category", "examples"], rel_rows))},
        {"title": "Concepts (§4.1, Figure 6)", "text": (
            f"![concept frequencies](plots/{concept_png})\n\n"
            + markdown_table(["concept", "as subject", "as object", "total"], concept_rows))},
    ]


def _agreement_section(a: dict, cfg: VsrConfig) -> dict:
    paper = PAPER_FIGURES
    rows = [
        ["examples validated", a["examples"], f"{paper['examples']:,}"],
        ["validation labels (counted votes)", a["validation_labels"], f"{paper['validation_labels']:,}"],
        ["all validators agree with the label", _pct(a["all_agree_share"]),
         _pct(paper["all_agree_share"])],
        [(f"kept (>= {cfg.validation.min_agreeing} and >= {cfg.validation.min_agreement} agree)"
          if cfg.crowd.aggregation == "majority"
          else f"kept (the validators' {cfg.crowd.aggregation} label is the writer's)"),
         f"{a['kept']} ({_pct(a['kept_share'])})", f"{paper['kept']:,} ({_pct(paper['kept_share'])})"],
    ]
    extra = a.get("extra_labels")
    if extra:
        rows += [["Fleiss' kappa, label + extra labels (§3.5)", _fmt(extra["fleiss_kappa"]),
                  _fmt(paper["fleiss_kappa"])],
                 ["extra annotators' accuracy (§3.5)", _pct(extra["human_accuracy"]),
                  _pct(paper["human_accuracy"])]]
    anomalies = a.get("vote_anomalies") or {}
    rules = a.get("vote_rules") or {}
    anomaly_rows = [[reason, anomalies.get(reason, 0), rules.get(rule, "")] for reason, rule in
                    (("writer_vote", "writer_votes"), ("duplicate_vote", "duplicate_votes"),
                     ("conflicting_votes", "conflicting_votes"))]
    disagreement = sorted(a["disagreement_by_relation"].items(), key=lambda kv: -kv[1]["probability"])
    d_rows = [[rel, d["examples"], _fmt(d["probability"])] for rel, d in disagreement]
    return {"title": "Validation and agreement (§3.2, §4.1, §4.2)", "text": (
        "Over every example that reached validation (before the keep rule).\n\n"
        + markdown_table(["figure", "this release", "paper"], rows)
        + "\n\nVotes that break the rules of pipelines/vsr/README.md, and what this build did with them "
        "(`count`: counted as listed, as the public release did; `drop`: in `rejects/`):\n\n"
        + markdown_table(["kind", "votes", "rule"], anomaly_rows)
        + "\n\nProbability that two annotators (the writer's label and the validators' votes) "
        "drawn at random disagree, per relation (Figure 7):\n\n"
        + markdown_table(["relation", "examples", "P(disagree)"], d_rows))}


def _leakage_verdict(leak: dict) -> dict:
    return {"passed": not leak["leakage"],
            "zeroshot_concepts_in_several_splits": leak["zeroshot_concepts_in_several_splits"],
            "examples_in_several_rows": leak["examples_in_several_rows_count"]}


def _leakage_section(leak: dict) -> dict:
    verdict = ("**Passed: no concept is in two zero-shot parts and no example is in two splits.**"
               if not leak["leakage"] else
               f"**FAILED**: concepts in several zero-shot parts: "
               f"{leak['zeroshot_concepts_in_several_splits']}; examples in several rows: "
               f"{leak['examples_in_several_rows_count']}")
    return {"title": "Leakage check", "text": verdict + (
        f"\n\n{leak['zeroshot_concepts']} concepts in the zero-shot split. Subject and object "
        "are COCO category names parsed from the caption (never by stripping characters), so "
        "one concept cannot appear under two spellings.")}


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)
