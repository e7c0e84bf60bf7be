"""`python -m pipelines verify <release>`: a published release checked against its own
MANIFEST.json.

    python -m pipelines verify releases/imagecode/1.0.0

What holds for a release as its build published it (pipelines/release/manifest.py
writes the manifest last, with the sha256 of every other file):
  - every file the manifest lists is there, with the sha256 it lists;
  - every file below the version folder (MANIFEST.json aside) is listed;
  - each table's Parquet files (parquet/<table>/) hold the rows per split, and
    rejects/ the rows per reason, that the manifest's counts record;
  - `release_sha256`, the one digest of the whole release (release_sha256 below), is the
    digest of the checksums listed: two releases with the same digest hold the same
    files, byte for byte, so a rebuild or a mirror is checked by comparing it.
Exit 0 when all of that holds (the digest is printed); exit 1 with one line per file (or
table folder) that differs; exit 2 with one line when the folder is not a release (no MANIFEST.json).

`diff` verifies both releases, and a build that will compare itself with a previous
version (its RELEASE_NOTES.md) verifies that version before any work: a bit flipped on
disk is not a change of the data, so either stops with one line (exit 2) naming the
first file that differs, and `verify` names them all.

A local release is read with os and pyarrow only (Beam's FileSystems, which costs
seconds to import, only for a gs:// or other remote one), so `verify` starts at once.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import sys
from typing import BinaryIO, Callable, Dict, List, Optional, Sequence

from schemas.layout import MANIFEST, PARQUET_DIR, REJECTS_DIR
from transforms.core.errors import UserError

_BLOCK = 1 << 20
RELEASE_SHA256 = "release_sha256"   # MANIFEST.json: the digest of the whole release
DIGEST_SINCE_FORMAT = 2             # manifests of format 1 have no release_sha256


def release_sha256(files: Dict[str, str]) -> str:
    r"""One digest of a whole release (MANIFEST.json `release_sha256`): the sha256 of its
    files' `sha256sum` lines ("<sha256>  <path>\n", every file but MANIFEST.json, sorted by
    path as bytes), so that in the version folder

        find . -type f ! -name MANIFEST.json | sed 's|^\./||' | LC_ALL=C sort \
            | xargs -d '\n' sha256sum | sha256sum

    prints it too. Two releases with the same digest hold the same files, byte for byte."""
    ordered = sorted(files.items(), key=lambda kv: kv[0].encode("utf-8"))
    lines = "".join(f"{sha}  {path}\n" for path, sha in ordered)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


class NotARelease(UserError, ValueError):
    """A folder without MANIFEST.json: a wrong argument, not a damaged release."""


class ReleaseDiffers(UserError, ValueError):
    """A release a command reads is not the one its build published (one line, exit 2):
    restore it (a copy, a mirror) or rebuild it; `verify` lists every file."""


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

    def listing(self) -> List[str]:
        """Every file below the root, relative to it with '/', sorted."""
        if self.local:
            found = []
            for folder, _, names in os.walk(self.root):
                rel = os.path.relpath(folder, self.root)
                prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
                found += [prefix + name for name in names]
            return sorted(found)
        from apache_beam.io.filesystems import FileSystems
        matched = FileSystems.match([self.root + "/**"])[0].metadata_list
        return sorted(m.path[len(self.root) + 1:] for m in matched
                      if m.path.startswith(self.root + "/") and not m.path.endswith("/"))

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


def load_manifest(version_dir: str) -> dict:
    """The version's MANIFEST.json as published. NotARelease without one; ReleaseDiffers
    when it is not a manifest (not JSON, no `files` of checksums)."""
    files = _Files(version_dir)
    if not files.is_folder() or not files.exists(MANIFEST):
        raise NotARelease(f"not a release (no {MANIFEST}): {version_dir}")
    with files.open(MANIFEST) as f:
        raw = f.read()
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except ValueError as e:   # UnicodeDecodeError too
        raise ReleaseDiffers(f"{MANIFEST}: not JSON ({str(e)[:120]})") from None
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(listed, dict) or not all(isinstance(v, str) for v in listed.values()):
        raise ReleaseDiffers(f"{MANIFEST}: not a release manifest (no files "
                             "with their checksums)")
    return manifest


def release_problems(version_dir: str) -> List[str]:
    """One line per file (or table folder) of `version_dir` that differs from its
    manifest; [] when the release is as published. Raises NotARelease for a folder
    without MANIFEST.json, and gives the one problem of a manifest that is not one."""
    try:
        manifest = load_manifest(version_dir)
    except ReleaseDiffers as e:
        return [str(e)]
    files = _Files(version_dir)
    expected: Dict[str, str] = manifest["files"]
    actual = [rel for rel in files.listing() if rel != MANIFEST]
    problems = [f"missing: {rel}" for rel in sorted(expected.keys() - set(actual))]
    problems += [f"not in manifest: {rel}" for rel in actual if rel not in expected]
    problems += [f"checksum differs: {rel}" for rel in actual
                 if rel in expected and files.sha256(rel) != expected[rel]]
    named = {line.split(": ", 1)[1] for line in problems}
    return problems + digest_problems(manifest) + count_problems(
        files, manifest.get("counts", {}), actual, named)


def digest_problems(manifest: dict) -> List[str]:
    """The manifest's whole-release digest against the checksums it lists (each of which
    release_problems checks against its file): a manifest edited by hand, or a digest
    copied from another release, shows here."""
    recorded = manifest.get(RELEASE_SHA256)
    if recorded is None:
        fmt = manifest.get("format")
        if isinstance(fmt, int) and fmt >= DIGEST_SINCE_FORMAT:
            return [f"no digest: {MANIFEST} (format {fmt}) has no {RELEASE_SHA256}"]
        return []
    if recorded != release_sha256(manifest["files"]):
        return [f"digest differs: {MANIFEST}'s {RELEASE_SHA256} is not the digest of the "
                "files it lists"]
    return []


def count_problems(files: _Files, counts: dict, actual: Sequence[str], named: set) -> List[str]:
    """The rows of each table per split and of rejects/ per reason, read from the Parquet
    files, against the manifest's counts. A folder with a file already named (changed,
    missing or unlisted) is not counted: its line says enough."""
    folders = {f"{PARQUET_DIR}/{table}/": ("split", recorded.get("by_split", {}))
               for table, recorded in counts.get("tables", {}).items()}
    if "rejects" in counts:
        folders[f"{REJECTS_DIR}/"] = ("reason", counts["rejects"].get("by_reason", {}))
    problems = []
    for folder, (column, recorded) in folders.items():
        shards = [rel for rel in actual if rel.startswith(folder) and rel.endswith(".parquet")
                  and "/" not in rel[len(folder):] and not rel[len(folder):].startswith("_")]
        if any(rel.startswith(folder) for rel in named):
            continue
        try:
            found = rows_by(files, shards, column)
        except Exception as e:   # pyarrow's errors on a file that is not Parquet
            problems.append(f"unreadable: {folder} ({str(e).splitlines()[0][:120] if str(e) else type(e).__name__})")
            continue
        differing = sorted((k for k in found.keys() | recorded.keys()
                            if found.get(k, 0) != recorded.get(k, 0)), key=str)
        if differing:
            shown = ", ".join(f"{column} {k}: {found.get(k, 0)} rows, the manifest says "
                              f"{recorded.get(k, 0)}" for k in differing[:5])
            problems.append(f"rows differ: {folder} ({shown}{', ...' if len(differing) > 5 else ''})")
    return problems


def rows_by(files: _Files, shards: Sequence[str], column: str) -> Dict[str, int]:
    """{value of `column`: rows} over the given Parquet files, one file at a time."""
    import pyarrow.parquet as pq

    counts: collections.Counter = collections.Counter()
    for rel in shards:
        with files.open(rel) as f:
            parquet = pq.ParquetFile(f)
            if parquet.metadata.num_rows == 0:   # may lack columns: nothing to count
                continue
            table = parquet.read(columns=[column])
        for value in table.column(column).to_pylist():
            counts[value] += 1
    return dict(counts)


def require_as_published(version_dir: str, role: str = "release") -> None:
    """Raise ReleaseDiffers (one line) when `version_dir` differs from its manifest, for
    a command that must not read a damaged release as if its data had changed. `role`
    says which release it is to the command ("the previous version")."""
    problems = release_problems(version_dir)
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise ReleaseDiffers(f"{role} {version_dir} is not as published: {problems[0]}{more} "
                             f"(python -m pipelines verify {version_dir} lists them; restore "
                             "it or rebuild it)")


def main(argv: Optional[List[str]] = None, prog: str = "python -m pipelines verify",
         out: Callable[[str], None] = print) -> int:
    """`verify RELEASE`: exit 0 when the release is as published, 1 naming each file that
    differs, 2 when it is not a release."""
    parser = argparse.ArgumentParser(prog=prog, description="Check a release against its "
                                     "MANIFEST.json: every file's checksum, no file missing "
                                     "or unlisted, the rows of every table as counted.")
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
        print(f"{args.release}: {len(problems)} file(s) differ from {MANIFEST}", file=sys.stderr)
        return 1
    digest = load_manifest(args.release).get(RELEASE_SHA256)
    out(f"{args.release}: as published ({MANIFEST} checksums, files and counts)"
        + (f"; release sha256 {digest}" if digest else ""))
    return 0
