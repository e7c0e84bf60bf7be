"""`python -m pipelines htmlquestions RELEASE PAGE --output DIR [--batch CSV] [--frame-height N]`:
the HTMLQuestion of every HIT of a round, for MTurk's API route (transforms/crowd/
html_question.py): DIR/<page>-<n>.xml for the n-th row of the batch input, each the
release's `crowd/pages/<page>.html` filled with that row, ready as CreateHIT's `Question`.

The batch input is the one the requester UI route publishes: `crowd/pages/<page>.csv`, or
ImageCoDe's `crowd/<page>_tasks.csv`; `--batch` names another (a part of it, say). Exit 2
with one line for a page the release does not have, a batch file that is not there, or a
row the page cannot be filled from.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
from typing import List, Optional

from transforms.core.errors import InputError


def main(argv: Optional[List[str]] = None) -> int:
    from transforms.crowd.html_question import FRAME_HEIGHT
    parser = argparse.ArgumentParser(prog="python -m pipelines htmlquestions",
                                     description="MTurk's HTMLQuestion of each HIT of a round (the API route), "
                                                 "from the release's worker page and its batch input.")
    parser.add_argument("release", help="version folder, e.g. releases/imagecode/1.0.0")
    parser.add_argument("page", help="the round's page: crowd/pages/<page>.html (describe, retrieve, "
                                     "pruning, ..., caption, validation)")
    parser.add_argument("--output", required=True, help="folder for <page>-<n>.xml, one per batch row")
    parser.add_argument("--batch", help="the batch input CSV (default: the release's, for the page)")
    parser.add_argument("--frame-height", type=int, default=FRAME_HEIGHT,
                        help=f"the HIT frame's height in pixels (default {FRAME_HEIGHT})")
    args = parser.parse_args(argv)
    try:
        written = write_questions(args.release, args.page, args.output, args.batch, args.frame_height)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{len(written)} HTMLQuestion(s) in {args.output}", file=sys.stderr)
    return 0


def batch_input(release: str, page: str) -> str:
    """The release's batch input of a page: what the requester UI route publishes with it."""
    for relative in (os.path.join("crowd", "pages", f"{page}.csv"), os.path.join("crowd", f"{page}_tasks.csv")):
        if os.path.isfile(os.path.join(release, relative)):
            return os.path.join(release, relative)
    raise InputError(f"{release} has no batch input for the page {page} (crowd/pages/{page}.csv or "
                     f"crowd/{page}_tasks.csv): the round has no tasks yet, or give --batch")


def write_questions(release: str, page: str, output: str, batch: Optional[str] = None,
                    frame_height: Optional[int] = None) -> List[str]:
    """The paths of the HTMLQuestion files written for every row of the batch input."""
    from transforms.crowd.html_question import FRAME_HEIGHT, questions
    template_path = os.path.join(release, "crowd", "pages", f"{page}.html")
    if not os.path.isfile(template_path):
        pages = sorted(n[:-5] for n in os.listdir(os.path.dirname(template_path))
                       if n.endswith(".html") and not n.endswith(".preview.html")) \
            if os.path.isdir(os.path.dirname(template_path)) else []
        raise InputError(f"{release} has no worker page {page} (crowd/pages/{page}.html; it has: "
                         f"{', '.join(pages) or 'none'})")
    batch = batch or batch_input(release, page)
    if not os.path.isfile(batch):
        raise InputError(f"no such file: {batch}")
    with open(template_path, encoding="utf-8") as f:
        template = f.read()
    os.makedirs(output, exist_ok=True)
    written = []
    with open(batch, encoding="utf-8-sig", newline="") as f:
        for number, question in questions(template, csv.DictReader(f), frame_height or FRAME_HEIGHT):
            path = os.path.join(output, f"{page}-{number}.xml")
            with open(path, "w", encoding="utf-8") as out:
                out.write(question)
            written.append(path)
    if not written:
        raise InputError(f"{batch}: no rows below the header")
    return written
