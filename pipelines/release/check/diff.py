"""What changed between two releases of one benchmark: config, and the rows of every
table, matched by the key the table declares (pipelines/release/write/tables.py), with counts
per split.

    python -m pipelines imagecode diff releases/imagecode/1.0.0 releases/imagecode/1.1.0

Each row of the old version is unchanged, changed (same key and split, other content),
moved to another split (its content may have changed too) or removed; each row of the
new version is unchanged, changed, moved or added. So per table, and per split:

    before = unchanged + changed + moved (out) + removed
    after  = unchanged + changed + moved (in)  + added

Every build also writes this comparison against the previous version as RELEASE_NOTES.md.
The keys come from the manifests ("table_keys"), the new version's where a key changed.
The diff never guesses a key: a table whose rows cannot be matched (neither release
records its key, as releases built before keys were recorded; the old version lacks a
column of the key or shares a key value between rows) is reported as not compared, with
its rows per split and the reason.

Both releases are verified against their manifests first (pipelines/release/check/verify.py):
one that is not as published (a flipped bit, a file missing or added) stops the diff with
one line (exit 2), rather than showing damage as changed rows.

It reads manifests and Parquet only, and imports no model, so `diff` starts quickly.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from typing import Dict, List, Optional, Sequence, Tuple

from apache_beam.io.filesystems import FileSystems

from pipelines.release.check.verify import ReleaseDiffers, require_as_published
from pipelines.release.write import runs
from pipelines.release.write.manifest import (built_from_of, iter_parquet_rows, parquet_column_names,
                                              read_parquet_columns)
from pipelines.release.write.tables import MANIFEST_KEYS, key_text, sort_key
from schemas.layout import MANIFEST, PARQUET_DIR
from schemas.reasons import STALE_ANSWER
from transforms.core.errors import UserError

SPLIT = "split"   # the main split column every release table has (pipelines/release/write/split_files.py)
VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(.*)$")


class DiffError(UserError, ValueError):
    """Two folders that cannot be compared: not releases, or releases of two benchmarks
    (one line and exit 2)."""


NO_KEY = ("neither release records the table's key (built before releases recorded "
          "them): rebuild one of them to compare its rows")


class Unmatched(ValueError):
    """The rows of a table cannot be matched by its key in one of the versions."""


def load_manifest(version_dir: str) -> dict:
    path = FileSystems.join(version_dir, MANIFEST)
    if not FileSystems.exists(path):
        raise DiffError(f"not a release (no {MANIFEST}): {version_dir}")
    with FileSystems.open(path, compression_type="uncompressed") as f:
        text = f.read().decode("utf-8", errors="replace")
    try:
        manifest = json.loads(text)
    except ValueError as e:
        raise DiffError(f"{path}: not JSON ({e})") from None
    if not isinstance(manifest, dict) or "version" not in manifest:
        raise DiffError(f"{path}: not a release manifest (no version)")
    return manifest


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


def table_rows(version_dir: str, table: str, key: Sequence[str]) -> Dict[tuple, Tuple[str, str]]:
    """{row key: (split, content fingerprint)} of one table. The fingerprint covers every
    column but the split, so a set that kept its name but not its frames shows as changed.
    Raises Unmatched when the table lacks a key column or two rows share a key."""
    folder = FileSystems.join(version_dir, PARQUET_DIR, table)
    names = parquet_column_names(folder)
    if not names:
        return {}
    missing = [c for c in key if c not in names]
    if missing:
        raise Unmatched(f"{version_dir} has no column {', '.join(missing)} of the key")
    content = [n for n in names if n != SPLIT]
    out = {}
    for row in iter_parquet_rows(folder, names):   # a batch at a time: rows may embed images
        row_key = tuple(row[c] for c in key)
        if row_key in out:
            raise Unmatched(f"{version_dir} has more than one row with the key {key_text(row_key)!r}")
        text = json.dumps({n: row[n] for n in content}, sort_keys=True, default=_fingerprint_of)
        out[row_key] = (row[SPLIT], hashlib.sha256(text.encode("utf-8")).hexdigest())
    return out


def _fingerprint_of(value) -> str:
    """What a row's fingerprint holds for a value JSON has no form for: an embedded
    image (bytes) by its sha256, not its repr (three times its size, then hashed:
    most of a same-config rebuild's diff), anything else as its str. Fingerprints are
    compared within one diff only, never stored."""
    if isinstance(value, (bytes, bytearray)):
        return "sha256:" + hashlib.sha256(value).hexdigest()
    return str(value)


def compare_table(old_dir: str, new_dir: str, table: str, key: Sequence[str]) -> dict:
    """One table's rows, old against new: each kind's keys (as key_text prints them),
    the counts of each kind, and the same per split."""
    if not key:   # never a guess: the rows are counted, not matched
        return _not_compared(old_dir, new_dir, table, key, NO_KEY)
    try:
        old_rows, new_rows = table_rows(old_dir, table, key), table_rows(new_dir, table, key)
    except Unmatched as e:
        return _not_compared(old_dir, new_dir, table, key, str(e))
    old = {k: split for k, (split, _) in old_rows.items()}
    new = {k: split for k, (split, _) in new_rows.items()}
    kept = old.keys() & new.keys()
    kinds = {
        "added": new.keys() - old.keys(),
        "removed": old.keys() - new.keys(),
        "moved": {k for k in kept if old[k] != new[k]},
        "changed": {k for k in kept if old[k] == new[k] and old_rows[k][1] != new_rows[k][1]},
        "unchanged": {k for k in kept if old[k] == new[k] and old_rows[k][1] == new_rows[k][1]},
    }
    ordered = {kind: sorted(keys, key=sort_key) for kind, keys in kinds.items()}
    splits = sorted(set(old.values()) | set(new.values()), key=str)
    before, after = Counter(old.values()), Counter(new.values())
    return {
        "key": list(key),
        "counts": {"before": len(old), "after": len(new),
                   **{kind: len(keys) for kind, keys in kinds.items()}},
        "added": [key_text(k) for k in ordered["added"]],
        "removed": [key_text(k) for k in ordered["removed"]],
        "changed": [key_text(k) for k in ordered["changed"]],
        "moved": [{"key": key_text(k), "from": old[k], "to": new[k],
                   "changed": old_rows[k][1] != new_rows[k][1]} for k in ordered["moved"]],
        "per_split": {s: {"before": before[s], "after": after[s],
                          "unchanged": sum(new[k] == s for k in kinds["unchanged"]),
                          "changed": sum(new[k] == s for k in kinds["changed"]),
                          "added": sum(new[k] == s for k in kinds["added"]),
                          "removed": sum(old[k] == s for k in kinds["removed"]),
                          "moved_in": sum(new[k] == s for k in kinds["moved"]),
                          "moved_out": sum(old[k] == s for k in kinds["moved"])} for s in splits},
    }


def _not_compared(old_dir: str, new_dir: str, table: str, key: Sequence[str], reason: str) -> dict:
    """A table whose rows cannot be matched: only its rows per split, and why."""
    def by_split(version_dir):
        folder = FileSystems.join(version_dir, PARQUET_DIR, table)
        if not parquet_column_names(folder):
            return Counter()
        return Counter(read_parquet_columns(folder, [SPLIT])[SPLIT])
    before, after = by_split(old_dir), by_split(new_dir)
    return {"key": list(key), "not_compared": reason,
            "counts": {"before": sum(before.values()), "after": sum(after.values())},
            "added": [], "removed": [], "changed": [], "moved": [],
            "per_split": {s: {"before": before[s], "after": after[s]}
                          for s in sorted(before.keys() | after.keys(), key=str)}}


def table_keys(old: dict, new: dict, tables: Sequence[str]) -> Dict[str, tuple]:
    """Each table's declared key from the manifests, the new version's first; () for a
    table that neither records (both built before keys were recorded)."""
    declared = {**old.get(MANIFEST_KEYS, {}), **new.get(MANIFEST_KEYS, {})}
    return {t: tuple(declared.get(t) or ()) for t in tables}


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


def diff_releases(old_dir: str, new_dir: str, new_manifest: Optional[dict] = None,
                  verify_old: bool = True) -> dict:
    """Compare two version folders; `new_manifest` stands in for a manifest not yet
    written (a build writes its notes before its manifest, which checksums them).
    Each published release is verified first (pipelines/release/check/verify.py): one that
    differs from its manifest raises DiffError, since a flipped bit is no change of
    data. `verify_old=False` is for a build that verified its previous version before
    its work."""
    old = load_manifest(old_dir)
    new = new_manifest if new_manifest is not None else load_manifest(new_dir)
    if old.get("benchmark") != new.get("benchmark"):
        raise DiffError(f"different benchmarks: {old.get('benchmark')} and {new.get('benchmark')}")
    try:
        if verify_old:
            require_as_published(old_dir, "the old release")
        if new_manifest is None:
            require_as_published(new_dir, "the new release")
    except ReleaseDiffers as e:
        raise DiffError(str(e)) from None
    tables = sorted(set(old.get("counts", {}).get("tables", {}))
                    | set(new.get("counts", {}).get("tables", {})))
    keys = table_keys(old, new, tables)
    kinds = unlike_inputs(old, old_dir, new, new_dir)
    compare = (lambda t: _not_compared(old_dir, new_dir, t, keys[t], kinds)) if kinds else (
        lambda t: compare_table(old_dir, new_dir, t, keys[t]))
    return {"benchmark": new["benchmark"], "from": old["version"], "to": new["version"],
            "config": [{"key": k, "from": a, "to": b}
                       for k, a, b in config_changes(old.get("config", {}), new.get("config", {}))],
            "tables": {t: compare(t) for t in tables},
            "stale_answers": {"from": stale_answers(old), "to": stale_answers(new)}}


def unlike_inputs(old: dict, old_dir: str, new: dict, new_dir: str) -> str:
    """Why two versions' rows are not compared, or "": one built from the generated sample
    and one from real inputs share no rows worth matching (a sample release left in the
    folder of a real one would otherwise read as thousands of changes)."""
    kinds = built_from_of(old, old_dir), built_from_of(new, new_dir)
    if None in kinds or kinds[0] == kinds[1]:
        return ""
    return (f"{old.get('version')} was built from {_kind_words(kinds[0])} and "
            f"{new.get('version')} from {_kind_words(kinds[1])}")


def _kind_words(kind: str) -> str:
    return "the generated sample" if kind == "sample" else "real inputs"


def summary(table: dict) -> str:
    """One table's change in one sentence; its numbers add up as the module says."""
    c = table["counts"]
    if table.get("not_compared"):
        return (f"{c['before']} rows before, {c['after']} after; rows not compared: "
                f"{table['not_compared']}.")
    return (f"{c['before']} rows before, {c['after']} after: {c['unchanged']} unchanged, "
            f"{c['changed']} changed (same key and split, other content), {c['moved']} moved "
            f"between splits, {c['added']} added, {c['removed']} removed.")


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
        key = ", ".join(f"`{c}`" for c in t["key"]) or "none recorded"
        lines += ["", f"## {table}", "", f"Key: {key}. " + summary(t)]
        if t.get("not_compared"):
            lines += ["", "| split | before | after |", "|---|---|---|"]
            lines += [f"| {s} | {c['before']} | {c['after']} |" for s, c in t["per_split"].items()]
            continue
        lines += ["", "| split | before | after | unchanged | changed | moved in | moved out "
                      "| added | removed |", "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {s} | {c['before']} | {c['after']} | {c['unchanged']} | {c['changed']} | "
                  f"{c['moved_in']} | {c['moved_out']} | {c['added']} | {c['removed']} |"
                  for s, c in t["per_split"].items()]
        moved = [f"{m['key']} ({m['from']} -> {m['to']}{', changed' if m['changed'] else ''})"
                 for m in t["moved"]]
        for label, keys in (("changed", t["changed"]), ("moved", moved),
                            ("added", t["added"]), ("removed", t["removed"])):
            if keys:
                shown = ", ".join(f"`{k}`" for k in keys[:examples])
                more = f" and {len(keys) - examples} more" if len(keys) > examples else ""
                lines.append(f"\n{label.capitalize()}: {shown}{more}.")
    lines += _render_stale(diff)
    return "\n".join(lines) + "\n"


def version_order(name: str) -> Optional[tuple]:
    """A sort key that ranks versions as semver does (None for a name that is no version):
    a pre-release below its release (1.0.0-rc.1 < 1.0.0), its dot-separated parts compared
    one by one, numbers as numbers and below words (rc.2 < rc.10 < rc.a), more parts
    above fewer when the shared ones are equal (rc < rc.1)."""
    m = VERSION.match(name)
    if not m or (m[4] and not m[4].startswith("-")):
        return None
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in m[4][1:].split(".")) \
        if m[4] else ()
    return (int(m[1]), int(m[2]), int(m[3]), 0 if parts else 1, parts)


def previous_version(benchmark_dir: str, version: str) -> Optional[str]:
    """The highest version below `version` in `benchmark_dir` (semver's order:
    version_order), if any: any folder named as a version, with or without MANIFEST.json
    (a version is published whole, so one without its manifest is damaged, and the
    caller's check of it says so rather than compare with an older one)."""
    this = version_order(version)
    candidates = []
    for name in runs.children(benchmark_dir):
        key = version_order(name)
        if key is not None and this is not None and key < this:
            candidates.append((key, FileSystems.join(benchmark_dir, name)))
    return max(candidates)[1] if candidates else None


def run(args) -> int:
    """`diff OLD NEW [--json] [--examples N]`, its arguments parsed by pipelines/cli.py
    parse_diff_args (before this module, and Beam, is imported): the config and rows
    changed between two releases; exit 2 with one line for what the user can fix."""
    try:
        result = diff_releases(args.old, args.new)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1) if args.json else render(result, args.examples))
    return 0
