"""DATACARD.md: what a user of a release reads first, rendered from a plain dict.

Generic over benchmarks; every key but `benchmark` and `version` is optional:

    {
      "benchmark": "ImageCoDe", "version": "v1.0.0",
      "summary": "One paragraph on what this release is.",
      "counts": release_counts(staging, tables),    # pipelines.release.write.manifest
      "thresholds": {"distance": {"value": 0.06, "source": "paper §3.1"}, "set_size": 10},
      "models": {"encoder": {"name": "ViT-B-32", "weights_sha256": "..."}},
      "stages": {"shots": {"shot.in": 9, "shot.out": 8, "shot.rejected.shot_too_short": 1}},
      "sections": [{"title": "Plots", "text": "![distances](plots/d.png)"},
                   {"title": "Anything", "table": {"key": "value"}}],
    }

`stages` holds the Beam counters of transforms.core.stage.StageCounts (per stage:
`<level>.in`, `<level>.out`, `<level>.rejected.<reason>`); the card shows whether each
level reconciles (in == out + rejected), and a stage's other counters (NLVR2's
`line.respelled`) as they are, beside them. Every figure of the card is read from
`counts` and `stages`, the manifest's own records, never counted again. The card
describes the release, not the build: what a build did (cache hits and misses, models
loaded, its time) follows the cache and the runner, so it is in BUILD.json and never
here (pipelines/release/write/assemble.py).

Optional too: `generated` (the sentence a build from generated inputs opens with, right
under the title: `generated_note`), `kept_rejects` ({reason: what stays in the release},
for rejects that drop less than a row: a vote not counted, an example outside a second
split scheme; the Rejects section counts them apart).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Sequence, Union

from apache_beam.io.filesystems import FileSystems

DATACARD = "DATACARD.md"


def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence]) -> str:
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |",
             "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def generated_note(package: str, made_by: str) -> str:
    """The sentence a release built from the embedded sample opens with: `made_by` is
    what generated it (Benchmark.sample_generator)."""
    return (f"**Built from generated sample data.** The inputs of this release were made by "
            f"`{made_by}` (the embedded sample, `samples/{package}/`), not "
            "collected for the benchmark: its rows, counts and figures show the pipeline at "
            "work, not the paper's data.")


def stage_levels(stages: Dict[str, Dict[str, int]]) -> List[dict]:
    """One row per (stage, level): in, out, rejected (by reason and total), balanced, and
    the level's other counters; a stage's counters of no level (`miss`, `written`) go
    with its first level, or make a row of their own when it has none."""
    rows = []
    for stage, counters in stages.items():
        levels: Dict[str, dict] = {}
        plain: Dict[str, int] = {}

        def level_row(level):
            return levels.setdefault(level, {"stage": stage, "level": level, "in": 0, "out": 0,
                                             "rejected": 0, "by_reason": {}, "counters": {}})
        for name, value in counters.items():
            level, dot, rest = name.partition(".")
            if not dot:
                plain[name] = value
            elif rest == "in" or rest == "out":
                level_row(level)[rest] += value
            elif rest.startswith("rejected."):
                row = level_row(level)
                row["rejected"] += value
                reason = rest[len("rejected."):]
                row["by_reason"][reason] = row["by_reason"].get(reason, 0) + value
            else:
                level_row(level)["counters"][rest] = value
        if plain:
            target = next(iter(levels.values()), None) or level_row("")
            target["counters"] = {**plain, **target["counters"]}
        for row in levels.values():
            row["balanced"] = row["in"] == row["out"] + row["rejected"]
            rows.append(row)
    return rows


def _rejects_section(rejects: dict, kept: Dict[str, str]) -> str:
    """The rejects per reason, those that leave their row in the release counted apart."""
    by_reason = rejects.get("by_reason", {})
    total = rejects.get("total", 0)
    staying = sum(n for reason, n in by_reason.items() if reason in kept)
    rows = [[reason, n, f"yes: {kept[reason]}" if reason in kept else "no"]
            for reason, n in sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))]
    text = f"## Rejects\n\n{total} records in `rejects/`, per reason"
    if staying:
        text += (f": {total - staying} name items that are not in the release; {staying} "
                 "(marked yes) name items that stay in it, left out of one part of it only")
    return (text + ".\n\n" + markdown_table(["reason", "records", "still in the release?"], rows))


def _counts_sections(counts: dict, kept: Dict[str, str] = None) -> List[str]:
    parts = []
    for table, sets in counts.get("tables", {}).items():
        by = sets.get("by_split_source", {})
        splits = sorted(by)
        sources = sorted({src for per in by.values() for src in per})
        rows = [[src] + [by[s].get(src, 0) for s in splits]
                + [sum(by[s].get(src, 0) for s in splits)] for src in sources]
        rows.append(["**total**"] + [sum(by[s].values()) for s in splits] + [sets["total"]])
        parts.append(f"## Counts: {table}\n\nRows of `parquet/{table}/` per split and source.\n\n"
                     + markdown_table(["source"] + splits + ["total"], rows))
    rejects = counts.get("rejects")
    if rejects is not None:
        parts.append(_rejects_section(rejects, kept or {}))
    return parts


def _value_table(title: str, mapping: dict) -> str:
    """A name/value table; values given as {"value": .., "source": ..} get a source column."""
    rows = []
    for name, value in mapping.items():
        if isinstance(value, dict) and "value" in value:
            rows.append([name, value["value"], value.get("source", "")])
        elif isinstance(value, dict):
            rows.append([name, ", ".join(f"{k}: {v}" for k, v in value.items()), ""])
        else:
            rows.append([name, value, ""])
    return f"## {title}\n\n" + markdown_table(["name", "value", "source"], rows)


def _stages_section(stages: dict, counts: dict) -> str:
    by_stage = counts.get("rejects", {}).get("by_stage", {})
    rows = []
    for r in stage_levels(stages):
        records = sum(by_stage.get(r["stage"], {}).get(r["level"], {}).values())
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(r["by_reason"].items()))
        others = ", ".join(f"{k} {v}" for k, v in r["counters"].items())
        rows.append([r["stage"], r["level"], r["in"], r["out"], r["rejected"], reasons,
                     records, "yes" if r["balanced"] else "**NO**", others])
    problems = [f"{r['stage']}/{r['level']}: in {r['in']} != out {r['out']} + rejected "
                f"{r['rejected']}" for r in stage_levels(stages) if not r["balanced"]]
    verdict = ("All stage counters reconcile (in = out + rejected)." if not problems
               else "Counters that do NOT reconcile: " + "; ".join(problems) + ".")
    return ("## Stages\n\nBeam counters per stage and level (MANIFEST.json `stages`); "
            "`records` counts the rows of `rejects/` for that stage and level; `other "
            "counters` are the stage's counters that are no in/out/rejected count. What the "
            "build did (cache hits and misses, models run) is in BUILD.json, not here: it "
            "follows the cache, not the data.\n\n"
            + markdown_table(["stage", "level", "in", "out", "rejected", "by reason",
                              "records", "reconciles", "other counters"], rows)
            + "\n\n" + verdict)


def render_datacard(context: dict) -> str:
    """The Markdown text of DATACARD.md for `context` (see the module docstring)."""
    parts = [f"# {context['benchmark']} {context['version']}"]
    if context.get("generated"):
        parts.append(context["generated"].strip())
    if context.get("summary"):
        parts.append(context["summary"].strip())
    counts = context.get("counts") or {}
    parts += _counts_sections(counts, context.get("kept_rejects"))
    if context.get("thresholds"):
        parts.append(_value_table("Thresholds", context["thresholds"]))
    if context.get("models"):
        parts.append(_value_table("Models", context["models"]))
    if context.get("stages"):
        parts.append(_stages_section(context["stages"], counts))
    for section in context.get("sections", []):
        body = section.get("text", "").strip()
        if "table" in section:
            body = (body + "\n\n" if body else "") + markdown_table(
                ["name", "value"], section["table"].items())
        parts.append(f"## {section['title']}\n\n{body}")
    return "\n\n".join(parts) + "\n"


def write_datacard(staging: str, card: Union[dict, str]) -> str:
    """Write `<staging>/DATACARD.md` (a context, rendered, or the rendered text); returns
    its path."""
    path = FileSystems.join(staging, DATACARD)
    text = render_datacard(card) if isinstance(card, dict) else card
    with FileSystems.create(path, mime_type="text/markdown",
                            compression_type="uncompressed") as f:
        f.write(text.encode("utf-8"))
    return path
