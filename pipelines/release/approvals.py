"""`python -m pipelines approvals RELEASE RESULTS_CSV [--output FILE]`: the approve/reject
file Mechanical Turk takes back ("Upload CSV" on the batch's results page), for a batch
results file that RELEASE was built from (transforms/crowd/mturk.py `approvals`).

Each Submitted assignment gets "x" under Approve, or under Reject the reasons the build's
rules rejected its rows for (rejects/ of the release: reason and detail, by the row's
file and line), except reasons that say nothing of the work (stale_answer: the task
changed under the worker). Without --output the file goes to stdout. Exit 2 with one
line when RELEASE has no rejects/ or the file is not a results file.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from transforms.core.errors import InputError


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines approvals",
                                     description="Mechanical Turk's approve/reject file for a batch "
                                                 "results CSV, from the rejects of the release built from it.")
    parser.add_argument("release", help="version folder, e.g. releases/imagecode/1.1.0")
    parser.add_argument("results", help="the batch results CSV the release ingested")
    parser.add_argument("--output", help="where to write the file (default: stdout)")
    args = parser.parse_args(argv)
    rejects_dir = os.path.join(args.release, "rejects")
    try:
        if not os.path.isdir(rejects_dir):
            raise InputError(f"{args.release} is not a release: it has no rejects/")
        if not os.path.isfile(args.results):
            raise InputError(f"no such file: {args.results}")
        import pyarrow.parquet as pq
        from transforms.crowd.mturk import approvals
        columns = ["file", "line", "reason", "detail"]
        rejects = pq.read_table(rejects_dir, columns=columns).to_pylist()
        text = approvals(args.results, rejects)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0
