"""What DATACARD.md (and the manifest) say about an NLVR2 release, beyond the generic card.

Reads the reports the pipeline wrote under stats/ (table4, agreement, human, groups,
synsets, leakage, anomalies, compat, respelled) and returns the card's sections and the figures the
manifest records; each figure beside the paper's (Suhr et al. 2019: Table 4, §4, Table 6,
App. B Table 9).
"""
from __future__ import annotations

import os

from pipelines.nlvr2.analysis import split_order
from pipelines.nlvr2.config import Nlvr2Config
from pipelines.release.cards.datacard import markdown_table
from pipelines.release.cards.hf_card import CardFacts
from pipelines.release.write.manifest import read_stats

PAPER = "Suhr et al. 2019, A Corpus for Reasoning About Natural Language Grounded in Photographs (ACL)"
# Table 4 (examples, unique sentences); the public files name Test-P test1 and Test-U test2 (§3.4)
PAPER_TABLE4 = {"train": (86373, 23671), "dev": (6982, 2018), "test1": (6967, 1995),
                "test2": (6970, 1996)}
PAPER_AGREEMENT = {"before_rules": {"fleiss_kappa": 0.814, "krippendorff_alpha": 0.906},
                   "after_rules": {"fleiss_kappa": 0.889, "krippendorff_alpha": 0.912}}
PAPER_HUMAN = {"dev": (96.2, 2.1), "test1": (96.3, 2.9)}   # Table 6 (Test-P = test1)
LEAKAGE_NAMES = {"url": "image_urls", "ahash": "image_contents"}   # the leakage report's kinds
REPORTS = ("table4", "agreement", "human", "groups", "synsets", "leakage", "anomalies", "compat",
           "respelled")


CARD = CardFacts(
    main_table="examples",
    language=("en",),
    # is the sentence true of the image pair: a yes/no question on two images
    task_categories=("visual-question-answering", "image-text-to-text"),
    license="unknown",
    license_source=("the public repository github.com/lil-lab/nlvr has no license file for "
                    "nlvr2/ (commit 1892484); its README says the authors do not own the "
                    "images' copyright and give access to them for research under their terms "
                    "of service: the images are not in this release"),
    citation="""@inproceedings{suhr-etal-2019-corpus,
  title = "A Corpus for Reasoning about Natural Language Grounded in Photographs",
  author = "Suhr, Alane and Zhou, Stephanie and Zhang, Ally and Zhang, Iris and Bai, Huajun and Artzi, Yoav",
  booktitle = "Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics",
  month = jul,
  year = "2019",
  address = "Florence, Italy",
  publisher = "Association for Computational Linguistics",
  url = "https://aclanthology.org/P19-1644",
  doi = "10.18653/v1/P19-1644",
  pages = "6418--6428"
}""",
    homepage="https://lil.nlp.cornell.edu/nlvr/")


def describe(cfg: Nlvr2Config, facts: dict) -> dict:
    staging = facts["staging"]
    stats = {name: read_stats(staging, name) or [] for name in REPORTS}
    table4 = stats["table4"][0]["table4"] if stats["table4"] else {}
    sections = [_table4_section(table4), _rules_section(cfg, stats["anomalies"]),
                _agreement_section(stats["agreement"]), _human_section(cfg, stats["human"]),
                _groups_section(stats["groups"]), _subsets_section(stats["compat"]),
                _leakage_section(cfg, stats["leakage"]), _synsets_section(stats["synsets"]),
                _costs_section(cfg, table4)]
    declared = _stand_ins(cfg)
    if declared:
        sections.insert(0, {"title": "Stand-ins", "text": (
            "What this build used in place of the paper's tools. A stand-in makes the "
            "collection run offline; its queries and image sets are not the paper's.\n\n"
            + markdown_table(["part", "used instead"], sorted(declared.items())))})
    leakage = {r["kind"]: r for r in stats["leakage"]}
    manifest = {"table4": table4, "agreement": {r["when"]: r for r in stats["agreement"]},
                "human_performance": stats["human"][0] if stats["human"] else {},
                "anomalies": stats["anomalies"], "leakage": leakage,
                "compat_files": stats["compat"][0]["files"] if stats["compat"] else {},
                "respelled_lines": stats["respelled"][0] if stats["respelled"] else {"lines": 0, "first": []},
                "costs": costs(cfg, table4), "stand_ins": declared}
    top = {"leakage_check": {"passed": not any(r["in_several_splits"] for r in leakage.values()),
                             **{f"{LEAKAGE_NAMES[kind]}_in_several_splits": r["in_several_splits"]
                                for kind, r in leakage.items()}}}
    return {"summary": _summary(cfg, stats["respelled"]), "thresholds": _thresholds(cfg), "sections": sections,
            "manifest": manifest, "manifest_top": top, "dataset_card": CARD}


def _stand_ins(cfg: Nlvr2Config) -> dict:
    """{part: what was used instead} of the collection stages; none for released files."""
    if cfg.inputs.public:
        return {}
    from pipelines.nlvr2.collection.collect import stand_ins
    return stand_ins(cfg.collection)


def _summary(cfg: Nlvr2Config, respelled: list) -> str:
    text = (f"NLVR2 as in {PAPER}: one sentence on one pair of photographs, True or False. "
            "Tables `examples` (one row per example), `sets` (one per set of 8 images) and "
            "`sentences` (one per (set, sentence) group, the consistency groups); `compat/` "
            "holds the public layout (`<split>.json`, balanced / unbalanced subsets, hash files).")
    if cfg.inputs.public:
        text += (" This release was built from released files (`inputs.public`): the "
                 "collection stages (S1-S9) did not run; the examples are the released lines, "
                 "checked line by line and against the paper's rules, and each compat file "
                 "holds its split's lines in their input order, " + _byte_for_byte(respelled))
    return text


def _byte_for_byte(respelled: list) -> str:
    """What the card may say about the compat lines: byte for byte, or how many are not."""
    n = respelled[0]["lines"] if respelled else 0
    if not n:
        return "byte for byte."
    first = ", ".join(f"`{os.path.basename(path)}:{line}`" for path, line, _ in respelled[0]["first"])
    return (f"byte for byte except **{n} line{'s' if n != 1 else ''} not written in the public "
            "spelling** (keys in another order, other separators or escapes): those hold the "
            f"same values in the public spelling (the first: {first}; all counted in `stats/respelled.json`).")


def _thresholds(cfg: Nlvr2Config) -> dict:
    r = cfg.rules
    return {
        "rules.enforce": {"value": r.enforce, "source": "ours: false reports breaches, true rejects them"},
        "rules.extra_judgements": {"value": r.extra_judgements, "source": "§3.4 (4)"},
        "rules.min_extra_judgements": {"value": r.min_extra_judgements,
                                       "source": "ours (the public files hold 3 on 237 examples)"},
        "rules.remove_disagreeing": {"value": r.remove_disagreeing, "source": "§3.4 (>= 2 disagree)"},
        "crowd.aggregation": {"value": cfg.crowd.aggregation,
                              "source": "majority = §3.4's count; dawid_skene = ours "
                                        "(transforms/crowd/aggregation.py)"},
        "rules.true_pairs": {"value": f"{r.true_pairs} of {r.pairs_per_set}",
                             "source": "§3.2 (2 of 4 pairs)"},
        "analysis.min_worker_judgements": {"value": cfg.analysis.min_worker_judgements,
                                           "source": "§5, Table 6 (100)"},
        "leakage.forbid_shared_images": {"value": cfg.leakage.forbid_shared_images, "source": "ours"},
        "costs": {"value": f"${cfg.costs.per_sentence:.2f} per sentence, "
                           f"${cfg.costs.per_example:.2f} per example",
                  "source": "App. B, Table 9"},
        "seed": {"value": cfg.seed, "source": "ours"},
    }


def _splits(mapping) -> list:
    return sorted((s for s in mapping if s != "all"), key=split_order)


def _table4_section(table4: dict) -> dict:
    rows = []
    for split in _splits(table4):
        c = table4[split]
        paper = PAPER_TABLE4.get(split)
        rows.append([split, c.get("examples", 0), c.get("groups", 0), c.get("sentences", 0),
                     c.get("images", 0), c.get("sets", 0),
                     f"{paper[0]:,} / {paper[1]:,}" if paper else "–"])
    images = table4.get("all", {}).get("images", 0)
    return {"title": "Examples per split (Table 4)", "text": (
        "\"Unique sentences\" in Table 4 are (set, sentence) groups: the same string written "
        "for two sets counts twice (dev: 2,018 groups, 2,004 strings).\n\n"
        + markdown_table(["split", "examples", "unique sentences (groups)", "distinct strings",
                          "images (URLs)", "sets", "paper: examples / unique sentences"], rows)
        + f"\n\n{images:,} distinct image URLs over all splits (paper, all four splits: 127,502).")}


def _rules_section(cfg: Nlvr2Config, anomalies: list) -> dict:
    what = ("rejected (`rules.enforce: true`; in `rejects/`, stage paper_rules)" if cfg.rules.enforce
            else "reported and kept (`rules.enforce: false`)")
    r = cfg.rules
    removal = (f"{r.remove_disagreeing} or more disagree with the label (§3.4)"
               if cfg.crowd.aggregation == "majority" else
               f"their {cfg.crowd.aggregation} label is not the label (`crowd.aggregation`; "
               f"§3.4 removes when {r.remove_disagreeing} or more disagree)")
    text = (f"The paper's rules on examples: {r.extra_judgements} extra judgements per dev/test "
            f"example (at least {r.min_extra_judgements} accepted) and removal when "
            f"{removal}; at most "
            f"{r.true_pairs} True and {r.pairs_per_set - r.true_pairs} False examples per "
            f"(set, sentence) group (§3.2). Breaches are {what}.\n\n")
    if cfg.rules.enforce:
        text += "Breaches are counted in the rejects table below (reasons "
        text += "`extra_judgements_count`, `extra_validation_disagrees`, `group_labels`)."
    elif anomalies:
        rows = [[a["identifier"], a["reason"], a["detail"], f"{a['file']}:{a['line']}" if a["file"] else ""]
                for a in sorted(anomalies, key=lambda a: (a["identifier"], a["reason"]))]
        text += (f"{len(anomalies)} breaches, kept:\n\n"
                 + markdown_table(["example", "rule", "detail", "line"], rows))
    else:
        text += "No example breaks them."
    return {"title": "The paper's rules and the anomalies (§3.2, §3.4)", "text": text}


def _fmt(value, digits=3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _agreement_section(reports: list) -> dict:
    by_when = {r["when"]: r for r in reports}
    rows = []
    for when, title in (("before_rules", "before the rules (removal)"),
                        ("after_rules", "after the rules")):
        r, paper = by_when.get(when), PAPER_AGREEMENT[when]
        if r is None:
            continue
        rows.append([title, r["examples"], r["examples_with_all_labels"], _fmt(r["fleiss_kappa"]),
                     paper["fleiss_kappa"], _fmt(r["krippendorff_alpha"]), paper["krippendorff_alpha"]])
    return {"title": "Agreement (§4)", "text": (
        "Over the labels of each example: the writer-time judgement and the extra judgements. "
        "Fleiss' kappa over the examples with all 5 labels; Krippendorff's alpha (nominal) over "
        "every example with 2 labels or more. The paper does not say how it computed alpha; "
        "on the public dev + test1 the kappa (0.894) is close to the paper's, the alpha is not."
        "\n\n" + markdown_table(["", "examples", "with 5 labels", "Fleiss' kappa", "paper",
                                 "Krippendorff's alpha", "paper"], rows)
        + "\n\nExamples by number of labels (after the rules): "
        + ", ".join(f"{k}: {v:,}" for k, v in
                    sorted((by_when.get("after_rules") or {}).get("examples_by_labels", {}).items(),
                           key=lambda kv: -int(kv[0]))) + ".")}


def _human_section(cfg: Nlvr2Config, reports: list) -> dict:
    splits = reports[0]["splits"] if reports else {}
    rows = []
    for split in sorted(splits, key=split_order):
        h, paper = splits[split], PAPER_HUMAN.get(split)
        rows.append([split, h["workers"], h["workers_counted"], h["judgements_counted"],
                     f"{_fmt(h['mean'], 2)} ± {_fmt(h['sd'], 2)}",
                     f"{paper[0]} ± {paper[1]}" if paper else "–"])
    return {"title": "Human performance (§5, Table 6)", "text": (
        "Per worker, the share of their extra judgements that equal the label, the worker's "
        f"own sentences excluded, over workers with at least "
        f"{cfg.analysis.min_worker_judgements} such judgements; mean ± population sd, in percent "
        "(the paper truncates to one decimal).\n\n"
        + markdown_table(["split", "workers", "counted", "judgements", "accuracy", "paper"], rows))}


def _groups_section(reports: list) -> dict:
    shapes = reports[0]["shapes"] if reports else {}
    rows = []
    for split in sorted(shapes, key=split_order):
        for s in shapes[split]:
            rows.append([split, s["examples"], s["true"], s["examples"] - s["true"], s["groups"]])
    return {"title": "Consistency groups (S11)", "text": (
        "A group is one sentence on one set (split, set, sentence): a model is consistent on "
        "it when it is right on every example of it. Groups by size and labels:\n\n"
        + markdown_table(["split", "examples", "True", "False", "groups"], rows))}


def _subsets_section(reports: list) -> dict:
    files = reports[0]["files"] if reports else {}
    rows = [[name, n] for name, n in sorted(files.items())]
    return {"title": "Public layout and subsets (compat/)", "text": (
        "Lines per compat file. The balanced / unbalanced subsets hold the examples whose "
        "(left_url, right_url) occurs more than once in a split, with both labels (balanced) or "
        "one (unbalanced), as the public `data/filter_data.py` selects them.\n\n"
        + markdown_table(["file", "lines"], rows))}


def _leakage_section(cfg: Nlvr2Config, reports: list) -> dict:
    by_kind = {r["kind"]: r for r in reports}
    parts = []
    url = by_kind.get("url")
    if url:
        parts.append(
            f"**{url['in_several_splits']} image URLs occur in two or more splits** "
            f"({', '.join(f'{k}: {v}' for k, v in url['by_split_pair'].items()) or 'none'}); "
            f"{url['in_several_sets']} occur in two or more sets. The splits are set-disjoint "
            "(§3.4), but the same image came back in other sets.")
        if url["examples"]:
            parts.append(markdown_table(["image URL", "splits"], [
                [e["image"], ", ".join(e["splits"])] for e in url["examples"]]))
    ahash = by_kind.get("ahash")
    if ahash and not cfg.inputs.public:
        parts.append(f"Same content (aHash) in two or more splits: {ahash['in_several_splits']}; "
                     f"in two or more sets: {ahash['in_several_sets']}.")
    if cfg.inputs.public:
        parts.append("Content (aHash) leakage is not checked: a release built from released "
                     "files has URLs only, no image files.")
    parts.append("`leakage.forbid_shared_images: true` fails the build when any image is in two "
                 "splits; this build " + ("forbids it." if cfg.leakage.forbid_shared_images
                                          else "reports it."))
    return {"title": "Image-level leakage", "text": "\n\n".join(parts)}


def _synsets_section(reports: list) -> dict:
    synsets = reports[0]["synsets"] if reports else {}
    rows = [[name, c["sets"], c["examples"]] for name, c in
            sorted(synsets.items(), key=lambda kv: (-kv[1]["examples"], kv[0]))]
    return {"title": "Synsets (§3.1)", "text": (
        f"{len(synsets)} synsets (the paper keeps 124).\n\n"
        + markdown_table(["synset", "sets", "examples"], rows))}


def costs(cfg: Nlvr2Config, table4: dict) -> dict:
    """Round costs at the paper's rates (App. B, Table 9): writing per unique sentence,
    validation per example."""
    out = {}
    for split in _splits(table4):
        c = table4[split]
        writing = c.get("groups", 0) * cfg.costs.per_sentence
        validation = c.get("examples", 0) * cfg.costs.per_example
        out[split] = {"writing": round(writing, 2), "validation": round(validation, 2),
                      "total": round(writing + validation, 2)}
    return out


def _costs_section(cfg: Nlvr2Config, table4: dict) -> dict:
    by_split = costs(cfg, table4)
    rows = [[s, f"${c['writing']:,.2f}", f"${c['validation']:,.2f}", f"${c['total']:,.2f}"]
            for s, c in by_split.items()]
    total = sum(c["total"] for c in by_split.values())
    return {"title": "Round costs (App. B, Table 9)", "text": (
        f"At the paper's rates: ${cfg.costs.per_sentence:.2f} per unique sentence (writing) and "
        f"${cfg.costs.per_example:.2f} per example (validation), over what this release holds "
        "(rounds whose output was removed are not counted; the paper's total over all rounds "
        "is $19,132.99 for 167 workers).\n\n"
        + markdown_table(["split", "writing", "validation", "total"], rows)
        + f"\n\nTotal: ${total:,.2f}.")}
