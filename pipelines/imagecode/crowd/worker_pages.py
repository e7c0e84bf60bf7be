"""ImageCoDe's worker pages (§3.2 describe, §3.3 retrieve): crowd/pages/ of the release,
filled by the platform from one row of crowd/describe_tasks.csv or crowd/retrieve_tasks.csv
(those files are the batch input CSVs: their columns are the pages' placeholders).

    describe  the ten images in shown order, the target framed in green; the worker types
              a description. Submits set_name, target_index, text, task_fingerprint.
    retrieve  the description and the ten images; the worker clicks one. Submits set_name,
              description_id, guessed_index (the clicked position mapped through shown_order
              to the canonical index, records.py), task_fingerprint.

The round's `worker` is MTurk's WorkerId (transforms/crowd/mturk.py), never a field of the page.

Images are addressed as `crowd.image_base_url` + the row's release-relative image_k path
(transforms/crowd/pages.py); the preview pages load them from the release itself.
"""
from __future__ import annotations

import os
from typing import List

import apache_beam as beam

from pipelines.imagecode.crowd.rounds import task_row
from transforms.crowd.pages import Page, WritePages
from transforms.crowd.task_files import image_base

_TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pages")
DESCRIBE, RETRIEVE = "describe", "retrieve"


def _body(name: str) -> str:
    with open(os.path.join(_TEMPLATES, f"{name}.html"), encoding="utf-8") as f:
        return f.read()


def pages() -> List[Page]:
    """The two rounds' pages: the task CSVs of crowd/ are their batch input."""
    return [Page(DESCRIBE, "ImageCoDe: describe the target image", _body(DESCRIBE)),
            Page(RETRIEVE, "ImageCoDe: find the described image", _body(RETRIEVE))]


def write_worker_pages(folder: str, image_base_url, describe_tasks, retrieve_tasks=None):
    """crowd/pages/ from the describe tasks and, once the describe round is in, the
    retrieve tasks (transforms/crowd/pages.py)."""
    rows = [describe_tasks | "Describe page rows" >> beam.Map(lambda t: (DESCRIBE, (t.task_id, task_row(t))))]
    if retrieve_tasks is not None:
        rows.append(retrieve_tasks | "Retrieve page rows" >> beam.Map(
            lambda t: (RETRIEVE, (t.task_id, task_row(t)))))
    return (rows | "Page rows" >> beam.Flatten()
            | "Write worker pages" >> WritePages(folder, pages(), image_base(image_base_url)))
