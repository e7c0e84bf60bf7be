"""`python -m pipelines verify <release>`: a published release checked against its own
MANIFEST.json, the manifest's own values included.

    python -m pipelines verify releases/imagecode/1.0.0

What holds for a release as its build published it (pipelines/release/write/manifest.py
writes the manifest last, with the sha256 of every other file):
  - every file below the version folder is a regular file of its own: a symlink, or a
    hard link (a second name for the file, outside the folder or in it), would let a
    change made elsewhere change a published release;
  - every file the manifest lists is there, with the sha256 it lists, and every file
    below the version folder (MANIFEST.json and BUILD.json aside) is listed;
  - every value of the manifest is the one it was published with: `values_sha256`
    records the sha256 of each top-level value, so an edited value is named by its key;
  - `release_sha256`, the one digest of the whole release (release_sha256 below), is the
    digest of the files' checksums and of the manifest's values: two releases with the
    same digest hold the same files and say the same of them, so a rebuild or a mirror
    is checked by comparing it;
  - what the files show agrees with what the manifest says of them: each table's rows
    per split and source (parquet/<table>/) and rejects/ per stage, level and reason
    against `counts`; the stage counters against rejects/ and against one another
    (in = out + rejected, and `reconciled`); `config_sha256` against `config`.
BUILD.json, the build's own record (when and from which code it ran, where its inputs
were, what the cache held), is known apart: not in the digest, since a warm cache or
another machine changes it and nothing of the release; it must still be a regular file
and name this release's digest.
Exit 0 when all of that holds (the digest is printed); exit 1 with one line per problem;
exit 2 with one line when the folder is not a release (no MANIFEST.json).

`diff` verifies both releases, and a build that will compare itself with a previous
version (its RELEASE_NOTES.md) verifies that version before any work: a bit flipped on
disk is not a change of the data, so either stops with one line (exit 2) naming the
first problem, and `verify` names them all.

A local release is read with os and pyarrow only (Beam's FileSystems, which costs
seconds to import, only for a gs:// or other remote one), so `verify` starts at once.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import stat
import sys
from typing import BinaryIO, Callable, Dict, List, Optional, Sequence, Tuple

from pipelines.config import dict_hash
from schemas.layout import BUILD_RECORD, MANIFEST, PARQUET_DIR, REJECTS_DIR
from transforms.core.counts import reconcile
from transforms.core.errors import UserError

_BLOCK = 1 << 20
RELEASE_SHA256 = "release_sha256"   # MANIFEST.json: the digest of the whole release
VALUES_SHA256 = "values_sha256"     # MANIFEST.json: {top-level key: sha256 of its value}
DIGEST_SINCE_FORMAT = 2             # manifests of format 1 have no release_sha256
VALUES_SINCE_FORMAT = 3             # manifests of format 2 keep their values outside the digest
# The manifest's keys that are not values of the release but the digest made of them
# (`files` are checked against the files themselves).
DIGEST_KEYS = ("files", RELEASE_SHA256, VALUES_SHA256)


def canonical_json(value) -> str:
    """One text per JSON value: sorted keys, no spaces, UTF-8 as it is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def values_sha256(manifest: dict) -> Dict[str, str]:
    """{key: sha256 of its value as canonical JSON} for every value of a manifest."""
    return {key: hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
            for key, value in manifest.items() if key not in DIGEST_KEYS}


def release_sha256(files: Dict[str, str], values: Optional[Dict[str, str]] = None) -> str:
    r"""One digest of a whole release (MANIFEST.json `release_sha256`): the sha256 of one
    `sha256sum` line ("<sha256>  <path>\n") per file but MANIFEST.json and BUILD.json,
    and one per value of the manifest ("<sha256>  MANIFEST.json#<key>\n", `values`:
    values_sha256), sorted by path as bytes. Two releases with the same digest hold the
    same files, byte for byte, and manifests that say the same of them. (Manifests of
    format 2 had no `values`: their digest is of the files alone.)"""
    lines = dict(files)
    lines.update({f"{MANIFEST}#{key}": sha for key, sha in (values or {}).items()})
    ordered = sorted(lines.items(), key=lambda kv: kv[0].encode("utf-8"))
    text = "".join(f"{sha}  {path}\n" for path, sha in ordered)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class NotARelease(UserError, ValueError):
    """A folder without MANIFEST.json: a wrong argument, not a damaged release."""


class ReleaseDiffers(UserError, ValueError):
    """A release a command reads is not the one its build published (one line, exit 2):
    restore it (a copy, a mirror) or rebuild it; `verify` lists every problem."""


class _Files:
    """The files of one version folder: listed and opened on a local disk with os, or
    elsewhere (gs://, s3://) through Beam's FileSystems."""

    def __init__(self, root: str):
        self.root = root.rstrip("/") or "/"
        self.local = "://" not in root

    def join(self, rel: str) -> str:
        return os.path.join(self.root, *rel.split("/")) if self.local else f"{self.root}/{rel}"

    def exists(self, rel: str) -> bool:
        if self.local:
            return os.path.isfile(self.join(rel))
        from apache_beam.io.filesystems import FileSystems
        return FileSystems.exists(self.join(rel))

    def is_folder(self) -> bool:
        return os.path.isdir(self.root) if self.local else True

    def listing(self) -> Tuple[List[str], List[str]]:
        """(every file below the root, relative to it with '/', sorted; a line per entry
        that is not a regular file of its own). Locally each entry is looked at with
        lstat, never followed: a symlink (to a file or a folder) and a hard link (a file
        with another name, st_nlink > 1) are named, since a change made through the
        other name would change this release; an object store has neither."""
        if not self.local:
            from apache_beam.io.filesystems import FileSystems
            matched = FileSystems.match([self.root + "/**"])[0].metadata_list
            return sorted(m.path[len(self.root) + 1:] for m in matched
                          if m.path.startswith(self.root + "/") and not m.path.endswith("/")), []
        found, odd = [], []
        for folder, folders, names in os.walk(self.root):   # never descends into a link
            rel = os.path.relpath(folder, self.root)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in folders:
                if os.path.islink(os.path.join(folder, name)):
                    odd.append(f"symlink: {prefix}{name}/ (a folder of a release is a folder "
                               "inside it, not a link to one elsewhere)")
            for name in names:
                found.append(prefix + name)
                problem = _not_its_own(os.lstat(os.path.join(folder, name)))
                if problem:
                    odd.append(f"{problem[0]}: {prefix}{name} ({problem[1]})")
        return sorted(found), sorted(odd)

    def open(self, rel: str) -> BinaryIO:
        if self.local:
            return open(self.join(rel), "rb")
        from apache_beam.io.filesystem import CompressionTypes
        from apache_beam.io.filesystems import FileSystems
        return FileSystems.open(self.join(rel), compression_type=CompressionTypes.UNCOMPRESSED)

    def sha256(self, rel: str) -> str:
        digest = hashlib.sha256()
        with self.open(rel) as f:
            for block in iter(lambda: f.read(_BLOCK), b""):
                digest.update(block)
        return digest.hexdigest()


def _not_its_own(st: os.stat_result) -> Optional[Tuple[str, str]]:
    """(what, why) for an entry that is no regular file of its own, else None."""
    if stat.S_ISLNK(st.st_mode):
        return "symlink", "a release holds its files, not links to files elsewhere"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file", "a release holds regular files only"
    if st.st_nlink > 1:
        return "hard link", (f"the file has {st.st_nlink} names: a change made through "
                             "another would change this release")
    return None


def _pairs_once(pairs: List[Tuple[str, object]]) -> dict:
    """A JSON object whose keys are each named once (json keeps the last of two values
    without a word: an edit could hide behind the first)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        twice = sorted(k for k, n in collections.Counter(k for k, _ in pairs).items() if n > 1)
        raise ValueError(f"the key {twice[0]!r} appears twice in one object")
    return obj


def _read_json(files: _Files, rel: str):
    """A JSON file of the release (MANIFEST.json, BUILD.json); ReleaseDiffers naming it
    when it is not JSON or names a key twice."""
    with files.open(rel) as f:
        raw = f.read()
    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=_pairs_once)
    except ValueError as e:   # UnicodeDecodeError too
        raise ReleaseDiffers(f"{rel}: not JSON ({str(e)[:120]})") from None


def load_manifest(version_dir: str) -> dict:
    """The version's MANIFEST.json as published. NotARelease without one; ReleaseDiffers
    when it is not a manifest (not JSON, no `files` of checksums)."""
    files = _Files(version_dir)
    if not files.is_folder() or not files.exists(MANIFEST):
        raise NotARelease(f"not a release (no {MANIFEST}): {version_dir}")
    manifest = _read_json(files, MANIFEST)
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(listed, dict) or not all(isinstance(v, str) for v in listed.values()):
        raise ReleaseDiffers(f"{MANIFEST}: not a release manifest (no files "
                             "with their checksums)")
    return manifest


def load_build_record(version_dir: str) -> dict:
    """The version's BUILD.json (the build's record, pipelines/release/write/assemble.py), or {}
    for a release built before builds kept one apart (their MANIFEST.json holds it)."""
    files = _Files(version_dir)
    if not files.exists(BUILD_RECORD):
        return {}
    record = _read_json(files, BUILD_RECORD)
    return record if isinstance(record, dict) else {}


def release_problems(version_dir: str) -> List[str]:
    """One line per problem of `version_dir` against its manifest (a file, a value of the
    manifest, a count); [] when the release is as published. Raises NotARelease for a
    folder without MANIFEST.json, and gives the one problem of a manifest that is not one."""
    try:
        manifest = load_manifest(version_dir)
    except ReleaseDiffers as e:
        return [str(e)]
    files = _Files(version_dir)
    expected: Dict[str, str] = manifest["files"]
    listing, problems = files.listing()
    actual = [rel for rel in listing if rel not in (MANIFEST, BUILD_RECORD)]
    problems += [f"missing: {rel}" for rel in sorted(expected.keys() - set(actual))]
    problems += [f"not in manifest: {rel}" for rel in actual if rel not in expected]
    problems += [f"checksum differs: {rel}" for rel in actual
                 if rel in expected and files.sha256(rel) != expected[rel]]
    named = {line.split(": ", 1)[1].split(" (", 1)[0] for line in problems}
    return (problems + value_problems(manifest) + digest_problems(manifest)
            + count_problems(files, manifest.get("counts", {}), actual, named)
            + stage_problems(manifest) + config_problems(manifest)
            + build_record_problems(files, manifest))


def value_problems(manifest: dict) -> List[str]:
    """Each value of the manifest against the sha256 it was published with
    (`values_sha256`): an edited value is named by its key, an added or removed one too."""
    recorded = manifest.get(VALUES_SHA256)
    if recorded is None:
        fmt = manifest.get("format")
        if isinstance(fmt, int) and fmt >= VALUES_SINCE_FORMAT:
            return [f"no values digest: {MANIFEST} (format {fmt}) has no {VALUES_SHA256}"]
        return []   # format 2: the manifest's values were outside the digest
    if not isinstance(recorded, dict):
        return [f"value differs: {MANIFEST} `{VALUES_SHA256}` is not a mapping of keys to sha256"]
    found = values_sha256(manifest)
    problems = [f"value differs: {MANIFEST} `{key}` (not the value the release was published with)"
                for key in sorted(found.keys() & recorded.keys()) if found[key] != recorded[key]]
    problems += [f"not in the digest: {MANIFEST} `{key}` (a value the release was not "
                 "published with)" for key in sorted(found.keys() - recorded.keys())]
    problems += [f"missing: {MANIFEST} `{key}`" for key in sorted(recorded.keys() - found.keys())]
    return problems


def digest_problems(manifest: dict) -> List[str]:
    """The manifest's whole-release digest against the checksums and value digests it
    lists (each of which is checked against its file or value): a digest edited by hand,
    or copied from another release, shows here."""
    recorded = manifest.get(RELEASE_SHA256)
    if recorded is None:
        fmt = manifest.get("format")
        if isinstance(fmt, int) and fmt >= DIGEST_SINCE_FORMAT:
            return [f"no digest: {MANIFEST} (format {fmt}) has no {RELEASE_SHA256}"]
        return []
    values = manifest.get(VALUES_SHA256)
    if recorded != release_sha256(manifest["files"], values if isinstance(values, dict) else None):
        return [f"digest differs: {MANIFEST} `{RELEASE_SHA256}` is not the digest of the "
                "files and values it lists"]
    return []


def table_record(rows: Dict[tuple, int]) -> dict:
    """A table's counts as MANIFEST.json `counts.tables.<table>` holds them, from its rows
    per (split, source)."""
    by_split: collections.Counter = collections.Counter()
    by_source: collections.Counter = collections.Counter()
    by_split_source: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for (split, source), n in rows.items():
        by_split[split] += n
        by_source[source] += n
        by_split_source[split][source] += n
    return {
        "total": sum(rows.values()),
        "by_split": dict(sorted(by_split.items())),
        "by_source": dict(sorted(by_source.items())),
        "by_split_source": {s: dict(sorted(c.items())) for s, c in sorted(by_split_source.items())},
    }


def rejects_record(rows: Dict[tuple, int]) -> dict:
    """rejects/ as MANIFEST.json `counts.rejects` holds it, from its rows per (stage,
    level, reason)."""
    by_stage: Dict[str, Dict[str, collections.Counter]] = collections.defaultdict(
        lambda: collections.defaultdict(collections.Counter))
    by_reason: collections.Counter = collections.Counter()
    for (stage, level, reason), n in rows.items():
        by_stage[stage][level][reason] += n
        by_reason[reason] += n
    return {
        "total": sum(rows.values()),
        "by_reason": dict(sorted(by_reason.items())),
        "by_stage": {st: {lv: dict(sorted(c.items())) for lv, c in sorted(levels.items())}
                     for st, levels in sorted(by_stage.items())},
    }


TABLE_COLUMNS = ("split", "source")
REJECT_COLUMNS = ("stage", "level", "reason")


def count_problems(files: _Files, counts: dict, actual: Sequence[str], named: set) -> List[str]:
    """Each table's rows per split and source, and rejects/ per stage, level and reason,
    counted in the Parquet files, against the manifest's `counts` (the figures it records:
    a release of format 1 has fewer). A folder with a file already named (changed, missing
    or unlisted) is not counted: its line says enough."""
    folders = {f"{PARQUET_DIR}/{table}/": (f"counts.tables.{table}", TABLE_COLUMNS, table_record, recorded)
               for table, recorded in counts.get("tables", {}).items()}
    if "rejects" in counts:
        folders[f"{REJECTS_DIR}/"] = ("counts.rejects", REJECT_COLUMNS, rejects_record, counts["rejects"])
    problems = []
    for folder, (key, columns, record, recorded) in folders.items():
        shards = [rel for rel in actual if rel.startswith(folder) and rel.endswith(".parquet")
                  and "/" not in rel[len(folder):] and not rel[len(folder):].startswith("_")]
        if any(rel.startswith(folder) for rel in named):
            continue
        recorded = recorded if isinstance(recorded, dict) else {}
        if key.startswith("counts.tables.") and not {"by_source", "by_split_source"} & recorded.keys():
            columns = ("split",)   # figures of the split alone: a table may have no source
        try:   # through JSON, as the manifest holds it: keys are text there
            rows = rows_by(files, shards, columns)
            if len(columns) == 1:
                rows = {(value, None): n for (value,), n in rows.items()}
            found = json.loads(json.dumps(record(rows)))
        except Exception as e:   # pyarrow's errors on a file that is not Parquet
            problems.append(f"unreadable: {folder} ({str(e).splitlines()[0][:120] if str(e) else type(e).__name__})")
            continue
        found = {figure: value for figure, value in found.items() if figure in recorded}
        differing = _differing(found, recorded, key)
        if differing:
            shown = ", ".join(f"`{path}` is {said}, {folder} holds {held}"
                              for path, held, said in differing[:5])
            problems.append(f"rows differ: {MANIFEST} {shown}{', ...' if len(differing) > 5 else ''}")
    return problems


def _differing(found, recorded, path: str) -> List[Tuple[str, object, object]]:
    """(dotted path, found value, recorded value) of every leaf where two records differ;
    a path one of them lacks counts as 0."""
    if isinstance(found, dict) or isinstance(recorded, dict):
        found = found if isinstance(found, dict) else {}
        recorded = recorded if isinstance(recorded, dict) else {}
        return [d for k in sorted(found.keys() | recorded.keys(), key=str)
                for d in _differing(found.get(k, 0), recorded.get(k, 0), f"{path}.{k}")]
    return [] if found == recorded else [(path, found, recorded)]


def rows_by(files: _Files, shards: Sequence[str], columns: Sequence[str]) -> Dict[tuple, int]:
    """{(value of each column): rows} over the given Parquet files, one file at a time."""
    import pyarrow.parquet as pq

    counts: collections.Counter = collections.Counter()
    for rel in shards:
        with files.open(rel) as f:
            parquet = pq.ParquetFile(f)
            if parquet.metadata.num_rows == 0:   # may lack columns: nothing to count
                continue
            table = parquet.read(columns=list(columns))
        counts.update(zip(*(table.column(c).to_pylist() for c in columns)))
    return dict(counts)


def stage_problems(manifest: dict) -> List[str]:
    """The stage counters against themselves and against rejects/ (as `counts.rejects`
    records it, which count_problems checks against the files): a build is published only
    when every stage and level reconciles (in = out + rejected) and every reject row was
    counted, so a counter edited by hand shows here by its stage and name."""
    stages = manifest.get("stages")
    if not isinstance(stages, dict):
        return []
    problems = []
    if manifest.get("reconciled", True) is not True:
        problems.append(f"not reconciled: {MANIFEST} `reconciled` is "
                        f"{json.dumps(manifest.get('reconciled'))}: a release is published only "
                        "when its counters reconcile")
    try:
        problems += [f"counters do not reconcile: {MANIFEST} `stages` {line}" for line in reconcile(stages)]
    except (AttributeError, TypeError):
        return problems + [f"value differs: {MANIFEST} `stages` is not {{stage: {{counter: n}}}}"]
    by_stage = manifest.get("counts", {}).get("rejects", {}).get("by_stage", {})
    rows = {(stage, f"{level}.rejected.{reason}"): n for stage, levels in by_stage.items()
            for level, reasons in levels.items() for reason, n in reasons.items()}
    counted = {(stage, name): n for stage, names in stages.items() for name, n in names.items()
               if ".rejected." in name}
    for stage, name in sorted(rows.keys() | counted.keys()):
        if rows.get((stage, name), 0) != counted.get((stage, name), 0):
            problems.append(f"counters differ: {MANIFEST} `stages.{stage}.{name}` is "
                            f"{counted.get((stage, name), 0)}, rejects/ holds "
                            f"{rows.get((stage, name), 0)} such rows")
    return problems


def config_problems(manifest: dict) -> List[str]:
    """`config_sha256` is the digest of the `config` beside it."""
    if "config_sha256" not in manifest or not isinstance(manifest.get("config"), dict):
        return []
    if dict_hash(manifest["config"]) != manifest["config_sha256"]:
        return [f"value differs: {MANIFEST} `config_sha256` is not the digest of its `config`"]
    return []


def build_record_problems(files: _Files, manifest: dict) -> List[str]:
    """BUILD.json, when there is one, is JSON and the record of this release (it names the
    digest of the release its build published); its values are the build's, outside the
    digest."""
    if not files.exists(BUILD_RECORD):
        return []
    try:
        record = _read_json(files, BUILD_RECORD)
    except ReleaseDiffers as e:
        return [str(e)]
    named = record.get(RELEASE_SHA256) if isinstance(record, dict) else None
    if named != manifest.get(RELEASE_SHA256):
        return [f"another build: {BUILD_RECORD} is the record of the release {named}, not of "
                f"this one ({manifest.get(RELEASE_SHA256)})"]
    return []


def require_as_published(version_dir: str, role: str = "release") -> None:
    """Raise ReleaseDiffers (one line) when `version_dir` is not a release as published
    (no MANIFEST.json, a file or value that differs), for a command that must not read a
    damaged release as if its data had changed. `role` says which release it is to the
    command ("the previous version")."""
    try:
        problems = release_problems(version_dir)
    except NotARelease:
        raise ReleaseDiffers(f"{role} {version_dir} has no {MANIFEST}: a version is published "
                             "whole, its manifest with it, so this folder is not one as "
                             "published (a copy cut short, files put there by hand); restore "
                             "it or move it away") from None
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise ReleaseDiffers(f"{role} {version_dir} is not as published: {problems[0]}{more} "
                             f"(python -m pipelines verify {version_dir} lists them; restore "
                             "it or rebuild it)")


def main(argv: Optional[List[str]] = None, prog: str = "python -m pipelines verify",
         out: Callable[[str], None] = print) -> int:
    """`verify RELEASE`: exit 0 when the release is as published, 1 naming each problem,
    2 when it is not a release."""
    parser = argparse.ArgumentParser(prog=prog, description="Check a release against its "
                                     "MANIFEST.json: every file's checksum, no file missing, "
                                     "unlisted or linked, every value of the manifest, the "
                                     "rows of every table and the stage counters as counted.")
    parser.add_argument("release", help="version folder, e.g. releases/imagecode/1.0.0")
    args = parser.parse_args(argv)
    try:
        problems = release_problems(args.release)
    except NotARelease as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for line in problems:
        out(line)
    if problems:
        print(f"{args.release}: {len(problems)} problem(s) against {MANIFEST}", file=sys.stderr)
        return 1
    manifest = load_manifest(args.release)
    digest = manifest.get(RELEASE_SHA256)
    covered = ("checksums, values, files and counts" if VALUES_SHA256 in manifest
               else "checksums, files and counts; its values predate the digest")
    out(f"{args.release}: as published ({MANIFEST} {covered})"
        + (f"; release sha256 {digest}" if digest else ""))
    return 0
