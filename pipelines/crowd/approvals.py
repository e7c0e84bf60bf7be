"""`python -m pipelines approvals RELEASE RESULTS_CSV [--output FILE]`: the approve/reject
file Mechanical Turk takes back ("Upload CSV" on the batch's results page), for a batch
results file that RELEASE was built from (transforms/crowd/mturk.py `approvals`).

Each Submitted assignment is decided once, from everything the build did with its rows
(rejects/ by the row's file and line, and what the build's own reader finds in the row:
an oversized cell, a garbled line) and from whether the build has judged its round yet:

* rejected, when a reason of its rows is the worker's (worker_reasons.py REJECT): the
  Reject cell says why, in the sentences the worker reads;
* pending, when a reason is not judged yet or needs a person, or when the build has not
  judged the round at all (the config's `unjudged_answers`: ImageCoDe's descriptions
  until the retrieval round): both cells left empty, and the reason printed;
* approved otherwise (no reject, or only reasons that are the build's or the requester's
  doing: a task changed under the worker, a task posted twice).

Without --output the file goes to stdout; a summary goes to stderr. Exit 2 with one line
when RELEASE has no rejects/, is not a release, did not read RESULTS_CSV (none of its
answer files is that file), or the file is not a results file.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
from collections import Counter
from typing import Dict, List, Optional, Sequence, Set

from pipelines.crowd.worker_reasons import PENDING, REJECT, for_the_worker
from transforms.core.errors import InputError

MANIFEST = "MANIFEST.json"
SHOWN_PENDING = 20   # pending assignments listed one by one on stderr before a count


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines approvals",
                                     description="Mechanical Turk's approve/reject file for a batch "
                                                 "results CSV, from the rejects of the release built from it.")
    parser.add_argument("release", help="version folder, e.g. releases/imagecode/1.1.0")
    parser.add_argument("results", help="the batch results CSV the release ingested")
    parser.add_argument("--output", help="where to write the file (default: stdout)")
    args = parser.parse_args(argv)
    try:
        text, decided = approvals(args.release, args.results)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    _summary(decided)
    return 0


def approvals(release: str, results: str):
    """(the file to upload, the decisions) for `results` as `release` read it."""
    rejects_dir = os.path.join(release, "rejects")
    if not os.path.isdir(rejects_dir):
        raise InputError(f"{release} is not a release: it has no rejects/")
    if not os.path.isfile(results):
        raise InputError(f"no such file: {results}")
    key = _answer_key(release, results)
    awaiting = _unjudged(release).get(key)
    reasons_at = _reasons_by_line(rejects_dir, results)
    from transforms.crowd.mturk import Decision, approvals as write_back

    def decide(lines: Sequence[int]) -> Decision:
        found = [for_the_worker(r) for line in lines for r in sorted(reasons_at.get(line, ()))]
        if not found and awaiting:
            found = [for_the_worker(awaiting)]
        for verdict, approve in ((REJECT, False), (PENDING, None)):
            sentences = tuple(dict.fromkeys(f.sentence for f in found if f.verdict == verdict))
            if sentences:
                return Decision(approve, sentences)
        return Decision(True)

    return write_back(results, decide)


def _manifest(release: str) -> dict:
    try:
        with open(os.path.join(release, MANIFEST), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        raise InputError(f"{release} is not a release: no readable {MANIFEST}") from None


def _config(release: str):
    """The release's resolved config, as its benchmark's config type."""
    from pipelines import registry
    from pipelines.config import from_dict
    manifest = _manifest(release)
    name = manifest.get("benchmark")
    if name not in registry.names():
        raise InputError(f"{release}: {MANIFEST} names no benchmark this project builds ({name!r})")
    entry = registry.entry(name)
    return from_dict(entry.config_type, manifest.get("config") or {})


def _answer_key(release: str, results: str) -> str:
    """The config key under which the release read `results` (the same file, or one of
    the same name: a copy, a file of a glob); InputError when it read no such file, so no
    assignment is approved for work the build never judged."""
    from pipelines.config import InputFile, input_paths
    name, real = os.path.basename(results), os.path.realpath(results)
    for key, kind, paths in input_paths(_config(release)):
        if kind is InputFile and any(os.path.realpath(p) == real or fnmatch.fnmatchcase(name, os.path.basename(p))
                                     for p in paths):
            return key
    raise InputError(f"{release} did not read {results}: none of its answer files is named {name} "
                     "(give the results file the build was given)")


def _unjudged(release: str) -> Dict[str, str]:
    config = _config(release)
    method = getattr(config, "unjudged_answers", None)
    return method() if method else {}


def _reasons_by_line(rejects_dir: str, results: str) -> Dict[int, Set[str]]:
    """{line: reason codes} of the results file's rows: the release's rejects naming it,
    and the problems the build's reader finds in a row on its own (so an oversized cell
    or a garbled line is that row's reason even when the release was built elsewhere)."""
    import pyarrow.parquet as pq
    from transforms.crowd.answer_files import parse_file
    name = os.path.basename(results)
    found: Dict[int, Set[str]] = {}
    for r in pq.read_table(rejects_dir, columns=["file", "line", "reason"]).to_pylist():
        if r["file"] and os.path.basename(r["file"]) == name and r["line"]:
            found.setdefault(int(r["line"]), set()).add(r["reason"])
    with open(results, "rb") as stream:
        for row in parse_file(results, stream, "csv"):
            if row.error is not None:
                found.setdefault(row.line, set()).add(row.error[0])
    return found


def _summary(decided) -> None:
    verdicts = Counter("approved" if d.decision.approve else "rejected" if d.decision.approve is False
                       else "pending" for d in decided)
    print("approvals: " + ", ".join(f"{verdicts[v]} {v}" for v in ("approved", "rejected", "pending")),
          file=sys.stderr)
    pending = [d for d in decided if d.decision.approve is None]
    for d in pending[:SHOWN_PENDING]:
        print(f"  pending: assignment {d.assignment} of worker {d.worker} (line {d.lines[0]}): "
              + " ".join(d.decision.reasons), file=sys.stderr)
    if len(pending) > SHOWN_PENDING:
        print(f"  ... and {len(pending) - SHOWN_PENDING} more pending", file=sys.stderr)
    twice = [d for d in decided if len(d.lines) > 1]
    for d in twice:
        print(f"  assignment {d.assignment} is on lines {', '.join(map(str, d.lines))}: one decision, "
              f"on line {d.lines[0]}", file=sys.stderr)
