"""VSR's worker pages (§3.1 caption writing, §3.2 validation): crowd/pages/ of the release,
each with the batch input CSV it is filled from (crowd/pages/<round>.csv: the tasks of
tasks/ are nested JSON, a platform's input CSV holds one value a column).

    caption     both images of a pair and the two concepts; the writer picks a relation of
                the build's list (Table 1's, grouped by category, then the config's extra
                ones) and clicks the image the caption is true for
                -> pair_id, relation, true_image (tasks/caption_tasks.jsonl's answer)
    validation  the image and the caption; True or False
                -> example_id, label (1 or 0)

Both echo task_fingerprint. Their previews show COCO's images from `inputs.coco_images`
when the build has them (CocoImageFolder), else COCO's links. The writer's `annotator_id` and the validator's `validator_id`
are MTurk's WorkerId (transforms/crowd/mturk.py), never fields of the page. The images are COCO's links (the tasks carry them).
"""
from __future__ import annotations

import html
import os
import re
from typing import Dict, Iterable, List, Optional

import apache_beam as beam

from pipelines.vsr.release import relation_groups
from pipelines.vsr.records import coco_source
from schemas.coco import is_file_name, is_link, link_file_name
from transforms.crowd.pages import Page, WritePages
from transforms.crowd.shown import FINGERPRINT

_TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pages")
CAPTION, VALIDATION = "caption", "validation"
CAPTION_COLUMNS = ("pair_id", "subj", "obj", "image_0", "image_0_link", "image_1", "image_1_link", FINGERPRINT)
VALIDATION_COLUMNS = ("example_id", "image", "image_link", "caption", FINGERPRINT)


def _body(name: str) -> str:
    with open(os.path.join(_TEMPLATES, f"{name}.html"), encoding="utf-8") as f:
        return f.read()


def relation_options(relations: Iterable[str]) -> str:
    """<optgroup>s of Table 1's categories (in the paper's order, each relation once),
    then the build's other relations (release.relation_groups)."""
    groups = relation_groups(relations)
    return "\n".join(f'<optgroup label="{html.escape(c)}">'
                     + "".join(f'<option value="{html.escape(r)}">{html.escape(r)}</option>' for r in rs)
                     + "</optgroup>" for c, rs in groups)


def pages(relations: Iterable[str]) -> List[Page]:
    return [Page(CAPTION, "VSR: write a spatial caption",
                 _body(CAPTION).replace("__RELATIONS__", relation_options(relations)), CAPTION_COLUMNS),
            Page(VALIDATION, "VSR: is the caption true?", _body(VALIDATION), VALIDATION_COLUMNS)]


def caption_row(task: dict) -> Dict[str, object]:
    """A caption task (release.caption_task) as one row of the page's batch input."""
    row = {"pair_id": task["pair_id"], "subj": task["subj"], "obj": task["obj"]}
    for k, image in enumerate(task["images"]):
        row[f"image_{k}"], row[f"image_{k}_link"] = image["image"], image["image_link"]
    row[FINGERPRINT] = task[FINGERPRINT]
    return row


def validation_row(task: dict) -> Dict[str, object]:
    return {c: task[c] for c in VALIDATION_COLUMNS}


_SOURCE = re.compile(r"[a-z]+[0-9]{4}")   # train2017, val2014, ...: a folder name, never a path


class CocoImageFolder:
    """`local_image` for COCO's links: the image a link names in a local copy of COCO's
    images (`<folder>/<train2017|val2017>/<file>`, or `<folder>/<file>`), if it is there."""

    def __init__(self, folder: str):
        self._folder = folder

    def __call__(self, link: str) -> Optional[str]:
        if not self._folder or not is_link(link) or not is_file_name(link_file_name(link)):
            return None   # (a name that is no plain COCO file name never becomes a path)
        name, source = link_file_name(link), coco_source(link)
        folders = ([os.path.join(self._folder, source)] if _SOURCE.fullmatch(source) else []) + [self._folder]
        for path in (os.path.join(folder, name) for folder in folders):
            if os.path.isfile(path):
                return path
        return None


class WriteWorkerPages(beam.PTransform):
    """(page name, (key, flat row)) -> crowd/pages/ for the pages named; `coco_images`: a
    local copy of COCO's images, for the previews."""

    def __init__(self, folder: str, relations: Iterable[str], names: Iterable[str], coco_images: str = ""):
        super().__init__()
        self._folder, self._local = folder, CocoImageFolder(coco_images)
        self._pages = [page for page in pages(relations) if page.name in set(names)]

    def expand(self, rows):
        return rows | WritePages(self._folder, self._pages, local_image=self._local)
