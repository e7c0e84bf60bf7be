"""What changed between two releases of one benchmark: config, and the rows of every
table (added, removed, moved between splits, changed in content), with counts per split.

    python -m pipelines imagecode diff releases/imagecode/1.0.0 releases/imagecode/1.1.0

Every build also writes this comparison against the previous version as RELEASE_NOTES.md.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from typing import Dict, List, Optional, Tuple

from apache_beam.io.filesystems import FileSystems

from pipelines.release.manifest import read_parquet_columns
from schemas.layout import MANIFEST
from schemas.reasons import STALE_ANSWER

# The column that identifies a row of each table (the others use "set_name").
ROW_KEYS = {"descriptions": "description_id"}
VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(.*)$")


def load_manifest(version_dir: str) -> dict:
    path = FileSystems.join(version_dir, MANIFEST)
    if not FileSystems.exists(path):
        raise FileNotFoundError(f"not a release (no {MANIFEST}): {version_dir}")
    with FileSystems.open(path, compression_type="uncompressed") as f:
        return json.loads(f.read().decode("utf-8"))


def config_changes(old: dict, new: dict, prefix: str = "") -> List[Tuple[str, object, object]]:
    """(dotted key, old value, new value) for every leaf that differs."""
    changes = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            changes += config_changes(a, b, f"{prefix}{key}.")
        elif a != b:
            changes.append((prefix + key, a, b))
    return changes


def table_rows(version_dir: str, table: str) -> Dict[str, Tuple[str, str]]:
    """{row key: (split, content fingerprint)} of one table. The fingerprint covers every
    column but the split, so a set that kept its name but not its frames shows as changed."""
    folder = FileSystems.join(version_dir, "parquet", table)
    if not FileSystems.exists(folder):
        return {}
    key = row_key(folder, table)
    columns = read_parquet_columns(folder, _column_names(folder))
    names = [n for n in columns if n != "split"]
    out = {}
    for values in zip(*(columns[n] for n in names), columns["split"]):
        row = dict(zip(names, values))
        text = json.dumps(row, sort_keys=True, default=str)
        out[row[key]] = (values[-1], hashlib.sha256(text.encode("utf-8")).hexdigest())
    return out


def _column_names(folder: str) -> List[str]:
    import pyarrow.parquet as pq
    files = FileSystems.match([FileSystems.join(folder, "*.parquet")])[0].metadata_list
    if not files:
        return []
    with FileSystems.open(files[0].path, compression_type="uncompressed") as f:
        return pq.read_schema(f).names


def row_key(folder: str, table: str) -> str:
    """ROW_KEYS' column, else "set_name", else the table's first column (other benchmarks'
    tables lead with their id, e.g. VSR's example_id and pair_id)."""
    key = ROW_KEYS.get(table, "set_name")
    names = _column_names(folder)
    return key if key in names or not names else names[0]


def compare_tables(old_dir: str, new_dir: str, tables) -> dict:
    report = {}
    for table in tables:
        old_rows, new_rows = table_rows(old_dir, table), table_rows(new_dir, table)
        old = {k: split for k, (split, _) in old_rows.items()}
        new = {k: split for k, (split, _) in new_rows.items()}
        added = sorted(set(new) - set(old))
        removed = sorted(set(old) - set(new))
        kept = set(old) & set(new)
        moved = sorted(k for k in kept if old[k] != new[k])
        changed = sorted(k for k in kept if old_rows[k][1] != new_rows[k][1])
        splits = sorted(set(old.values()) | set(new.values()))
        before, after = Counter(old.values()), Counter(new.values())
        report[table] = {
            "added": added, "removed": removed, "changed": changed,
            "moved": [{"key": k, "from": old[k], "to": new[k]} for k in moved],
            "per_split": {s: {"before": before[s], "after": after[s],
                              "added": sum(new[k] == s for k in added),
                              "removed": sum(old[k] == s for k in removed),
                              "changed": sum(new[k] == s for k in changed),
                              "moved_in": sum(new[k] == s for k in moved),
                              "moved_out": sum(old[k] == s for k in moved)} for s in splits},
        }
    return report


def stale_answers(manifest: dict) -> Dict[str, int]:
    """{stage: crowd answers rejected as stale_answer} of a release, from the reject
    counts its manifest holds (rejects/_counts.json): answers whose worker saw something
    else than the release shows for their task (transforms/crowd/shown.py)."""
    by_stage = manifest.get("counts", {}).get("rejects", {}).get("by_stage", {})
    counts = {stage: sum(reasons.get(STALE_ANSWER, 0) for reasons in levels.values())
              for stage, levels in by_stage.items()}
    return {stage: n for stage, n in sorted(counts.items()) if n}


def _render_stale(diff: dict) -> List[str]:
    """The release notes' lines on stale answers (none when neither release has any)."""
    stale = diff.get("stale_answers", {})
    before, after = stale.get("from", {}), stale.get("to", {})
    if not before and not after:
        return []
    stages = ", ".join(f"{stage} {n}" for stage, n in after.items()) or "none"
    return ["", "## Stale crowd answers", "",
            f"{sum(after.values())} answers not used (`{STALE_ANSWER}`; {sum(before.values())} in "
            f"{diff['from']}): their workers saw something else than this release shows for "
            f"their task, or nothing shows what they saw. By stage: {stages}. rejects/ names, "
            "per answer, what changed."]


def diff_releases(old_dir: str, new_dir: str, new_manifest: Optional[dict] = None) -> dict:
    """Compare two version folders; `new_manifest` stands in for a manifest not yet
    written (a build writes its notes before its manifest, which checksums them)."""
    old = load_manifest(old_dir)
    new = new_manifest if new_manifest is not None else load_manifest(new_dir)
    if old.get("benchmark") != new.get("benchmark"):
        raise ValueError(f"different benchmarks: {old.get('benchmark')} and {new.get('benchmark')}")
    tables = sorted(set(old.get("counts", {}).get("tables", {}))
                    | set(new.get("counts", {}).get("tables", {})))
    return {"benchmark": new["benchmark"], "from": old["version"], "to": new["version"],
            "config": [{"key": k, "from": a, "to": b}
                       for k, a, b in config_changes(old.get("config", {}), new.get("config", {}))],
            "tables": compare_tables(old_dir, new_dir, tables),
            "stale_answers": {"from": stale_answers(old), "to": stale_answers(new)}}


def render(diff: dict, examples: int = 10) -> str:
    """The comparison as Markdown (RELEASE_NOTES.md and the CLI's output)."""
    lines = [f"# {diff['benchmark']} {diff['to']}: changes since {diff['from']}", "",
             "## Config", ""]
    if diff["config"]:
        lines += [f"- `{c['key']}`: {json.dumps(c['from'])} -> {json.dumps(c['to'])}"
                  for c in diff["config"]]
    else:
        lines.append("No config change.")
    for table, t in diff["tables"].items():
        lines += ["", f"## {table}", "",
                  f"{len(t['added'])} added, {len(t['removed'])} removed, "
                  f"{len(t['moved'])} moved between splits, {len(t['changed'])} changed "
                  "(same key, other content).", "",
                  "| split | before | after | added | removed | changed | moved in | moved out |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {s} | {c['before']} | {c['after']} | {c['added']} | {c['removed']} | "
                  f"{c['changed']} | {c['moved_in']} | {c['moved_out']} |"
                  for s, c in t["per_split"].items()]
        for label, keys in (("added", t["added"]), ("removed", t["removed"]),
                            ("changed", t["changed"]),
                            ("moved", [f"{m['key']} ({m['from']} -> {m['to']})" for m in t["moved"]])):
            if keys:
                shown = ", ".join(f"`{k}`" for k in keys[:examples])
                more = f" and {len(keys) - examples} more" if len(keys) > examples else ""
                lines.append(f"\n{label.capitalize()}: {shown}{more}.")
    lines += _render_stale(diff)
    return "\n".join(lines) + "\n"


def previous_version(benchmark_dir: str, version: str) -> Optional[str]:
    """The highest complete version below `version` in `benchmark_dir`, if any."""
    def parsed(name):
        m = VERSION.match(name)
        return (int(m[1]), int(m[2]), int(m[3]), m[4]) if m else None

    this = parsed(version)
    candidates = []
    if FileSystems.exists(benchmark_dir):
        for match in FileSystems.match([FileSystems.join(benchmark_dir, "*", MANIFEST)])[0].metadata_list:
            name = FileSystems.split(FileSystems.split(match.path)[0])[1]
            key = parsed(name)
            if key is not None and this is not None and key < this:
                candidates.append((key, FileSystems.split(match.path)[0]))
    return max(candidates)[1] if candidates else None


def main(argv: Optional[List[str]] = None, prog: str = "python -m pipelines BENCHMARK diff") -> int:
    """`diff OLD NEW [--json]`: the config and rows changed between two releases."""
    parser = argparse.ArgumentParser(prog=prog, description="What changed between two releases: "
                                     "config, and per table the rows added, removed, moved "
                                     "between splits or changed.")
    parser.add_argument("old", help="version folder, e.g. releases/imagecode/1.0.0")
    parser.add_argument("new", help="version folder, e.g. releases/imagecode/1.1.0")
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--examples", type=int, default=10, help="keys listed per change kind")
    args = parser.parse_args(argv)
    try:
        result = diff_releases(args.old, args.new)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1) if args.json else render(result, args.examples))
    return 0
