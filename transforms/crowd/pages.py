"""Worker pages: one self-contained HTML page per crowd round, in the release's
crowd/pages/, for a crowdsourcing platform to fill from one task row at a time.

    tasks | WritePages(folder, [Page("describe", ...)], image_base_url="https://cdn/.../")

A page is a template (a benchmark's `pipelines/<benchmark>/pages/<round>.html` body) in
the shell below: inline CSS and JavaScript, no request leaves it but the form's submit.
Its `${column}` placeholders are the columns of the round's task row, which Mechanical
Turk substitutes when it makes a HIT of each row of the batch input CSV. The form posts
to MTurk's externalSubmit (or the `turkSubmitTo` MTurk gives the page, e.g. the sandbox)
with the `assignmentId` of the page's address, and submits exactly the fields the round's
ingest reads: the task's `task_fingerprint` echoed and the round's answer fields. It
never submits who the worker is: MTurk's results name the worker (`WorkerId`), and the
reader fills the round's worker column from that alone (transforms/crowd/mturk.py). Until
a worker accepts the HIT (MTurk's preview) the submit button is off.

Per page the folder gets:

    <round>.html          the page to paste into MTurk (placeholders left for MTurk)
    <round>.preview.html  the page filled with the round's first task row (task id order),
                          every picture shown from disk (below): open it from disk
    <round>.preview/      the preview's pictures that are not in the release, copied
    <round>.csv           the batch input, when the round's task files are not flat CSV
                          (`Page.columns`: the flat row's columns, in that order)

Images: a column that holds a path relative to the release root (ImageCoDe's image_k)
stands after ${image_base} in the template: the page addresses it as `image_base_url` +
path, so the images can be hosted anywhere (`crowd.image_base_url`); the preview as
../../<path>, inside the release. Other benchmarks' tasks carry their images' URLs (NLVR2's
search results, VSR's COCO links): for the preview, `local_image(value)` names the file on
this machine that an image value shows (NLVR2's collected image, VSR's COCO image in
`inputs.coco_images`), and the preview shows a copy of it in `<round>.preview/`, so that
it opens from disk wherever the release is, with every picture (a value with no local
file stays the URL it is).

The preview substitutes values HTML-escaped; Mechanical Turk substitutes them as the
input CSV has them, so a template puts placeholders only in text and in quoted
attributes of values that hold no quote (ids, URLs, JSON lists of numbers).
"""
from __future__ import annotations

import html
import json
import os
import re
import string
from typing import Callable, Mapping, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.crowd.shown import FINGERPRINT
from transforms.crowd.task_files import csv_cell, task_lines

PAGES_DIR = "pages"             # under the release's crowd/
PREVIEW_BASE = "../../"         # from crowd/pages/ to the release root
PREVIEW_FOLDER = ".preview"     # <page>.preview/: the preview's pictures from outside the release
SUBMIT_URL = "https://www.mturk.com/mturk/externalSubmit"
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_IMAGE_SRC = re.compile(r"<img\b[^>]*\bsrc=\"(?:\$\{image_base\})?\$\{([A-Za-z_][A-Za-z0-9_]*)\}\"")


class Page(NamedTuple):
    """One round's page: `name` (crowd/pages/<name>.html), `title`, `body` (the template:
    task HTML with ${column} placeholders, ${image_base} before an image path, and an
    optional <script> defining `checkTask(form)`, which returns "" or what is missing),
    `columns` (the flat batch input's columns when the page writes its own CSV, else
    empty: the round's task CSV is the batch input)."""
    name: str
    title: str
    body: str
    columns: Tuple[str, ...] = ()


_SHELL = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1300px; }}
h1 {{ font-size: 1.3em; }}
.rules {{ background: #f4f6f8; border-left: 4px solid #5a7; padding: .6em 1em; margin: 1em 0; }}
.grid {{ display: grid; grid-template-columns: repeat(5, 1fr); gap: 8px; }}
.grid figure, .pairs figure {{ margin: 0; border: 4px solid transparent; cursor: pointer; position: relative; }}
.grid img, .pairs img, .single img {{ width: 100%; display: block; background: #ddd; min-height: 80px; }}
figcaption {{ font-size: .85em; text-align: center; }}
figure.target {{ border-color: #2a2; }}
figure.target figcaption {{ font-weight: bold; color: #2a2; }}
figure.chosen {{ border-color: #25c; }}
.pairs {{ display: grid; grid-template-columns: 1fr 1fr; gap: 14px; }}
.pair {{ display: grid; grid-template-columns: 1fr 1fr; gap: 4px; border: 2px solid #ccc; padding: 4px; }}
.pair.chosen {{ border-color: #25c; background: #eef3ff; }}
.single {{ max-width: 640px; }}
.statement {{ font-size: 1.25em; margin: .8em 0; }}
textarea {{ width: 100%; font-size: 1em; }}
.error {{ color: #b00; min-height: 1.2em; }}
.hidden {{ display: none; }}
button {{ font-size: 1.1em; padding: .4em 1.4em; }}
</style>
</head>
<body>
<form id="task" method="post" action="{submit_url}">
<input type="hidden" name="assignmentId" value="">
<input type="hidden" name="{fingerprint}" value="${{{fingerprint}}}">
{body}
<p class="error" id="problem"></p>
<p><button type="submit" id="submit-button">Submit</button> <span id="accept-first"></span></p>
</form>
<script>
(function () {{
  var query = new URLSearchParams(window.location.search);
  var form = document.getElementById("task");
  var assignment = query.get("assignmentId") || "";
  form.elements.assignmentId.value = assignment;
  var submitTo = query.get("turkSubmitTo");
  if (submitTo) {{ form.action = submitTo.replace(/\\/$/, "") + "/mturk/externalSubmit"; }}
  if (!assignment || assignment === "ASSIGNMENT_ID_NOT_AVAILABLE") {{
    document.getElementById("submit-button").disabled = true;
    document.getElementById("accept-first").textContent = "Accept the HIT to submit.";
  }}
  var clear = function () {{ document.getElementById("problem").textContent = ""; }};
  form.addEventListener("input", clear);   // the worker is at it: the last refusal is stale
  form.addEventListener("click", clear);
  form.addEventListener("submit", function (event) {{
    var problem = window.checkTask ? window.checkTask(form) : "";
    document.getElementById("problem").textContent = problem;
    if (problem) {{ event.preventDefault(); }}
  }});
  // ready once every script of the page has set itself up (a template's own run at DOMContentLoaded)
  document.addEventListener("DOMContentLoaded", function () {{ document.body.dataset.ready = "1"; }});
}})();
</script>
</body>
</html>
"""


def page_template(page: Page, image_base_url: str = "") -> str:
    """The page with MTurk's ${column} placeholders left in, images at `image_base_url`."""
    body = string.Template(page.body).safe_substitute(image_base=image_base_url)
    return _SHELL.format(title=html.escape(page.title), submit_url=SUBMIT_URL, fingerprint=FINGERPRINT,
                         body=body)


def placeholders(template: str) -> Tuple[str, ...]:
    """The ${column} names a template asks for, in order of first use."""
    return tuple(dict.fromkeys(_PLACEHOLDER.findall(template)))


def fill(template: str, row: Mapping[str, object]) -> str:
    """A page template filled from one task row as a platform does, each value
    HTML-escaped. Raises KeyError naming a placeholder the row lacks."""
    def value(match):
        name = match.group(1)
        if name not in row:
            raise KeyError(f"the page asks for ${{{name}}}, which the task row lacks")
        return html.escape(_cell(row[name]))
    return _PLACEHOLDER.sub(value, template)


def _cell(value) -> str:
    return "" if value is None else csv_cell(value)


def preview(page: Page, row: Mapping[str, object]) -> str:
    """The page filled with one task row, its release paths relative to the release root."""
    return fill(page_template(page, PREVIEW_BASE), row)


def image_columns(page: Page) -> Tuple[str, ...]:
    """The columns a page shows as pictures (an <img>'s src), in order of first use."""
    return tuple(dict.fromkeys(_IMAGE_SRC.findall(page.body)))


def with_local_images(page: Page, row: Mapping[str, object], local_image) -> Tuple[dict, dict]:
    """(the row with each image value that has a file on this machine replaced by the
    preview's copy of it, {copy's name in <page>.preview/: the file})."""
    shown, copies = dict(row), {}
    for column in image_columns(page):
        value = row.get(column)
        found = local_image(value) if isinstance(value, str) and value else None
        if found:
            name = column + (os.path.splitext(found)[1] or ".jpg")
            copies[name] = found
            shown[column] = f"{page.name}{PREVIEW_FOLDER}/{name}"
    return shown, copies


class FilesUnder:
    """`local_image` for tasks whose images are paths relative to an input folder (a local
    collection, as NLVR2's sample): the file under `root` a value names, if there is one."""

    def __init__(self, root: str):
        self._root = root

    def __call__(self, value: str) -> Optional[str]:
        if "://" in value or os.path.isabs(value) or not self._root:
            return None
        path = os.path.normpath(os.path.join(self._root, value))
        return path if os.path.isfile(path) else None


class WritePages(beam.PTransform):
    """(page name, (sort key, flat task row)) -> each page's files in `folder` (the
    module docstring); a page with no task still gets its template, and no preview.
    `local_image(value)`: the local file an image value shows, or None (the preview then
    shows the value as it is)."""

    def __init__(self, folder: str, pages: Sequence[Page], image_base_url: str = "",
                 local_image: Optional[Callable[[str], Optional[str]]] = None):
        super().__init__()
        self._folder, self._pages = folder, {page.name: page for page in pages}
        self._base, self._local = image_base_url, local_image

    def expand(self, keyed):
        folder, pages, base, local = self._folder, self._pages, self._base, self._local
        every = keyed.pipeline | "Every page" >> beam.Create([(name, None) for name in pages])

        def write(name, items):
            page = pages[name]
            rows = [row for _, row in sorted((i for i in items if i is not None), key=_by_key)]
            _write(folder, f"{name}.html", page_template(page, base))
            if rows:
                shown, copies = with_local_images(page, rows[0], local) if local else (rows[0], {})
                for copy, source in sorted(copies.items()):
                    _copy(source, FileSystems.join(folder, f"{name}{PREVIEW_FOLDER}", copy))
                _write(folder, f"{name}.preview.html", preview(page, shown))
            if page.columns:
                lines = task_lines(f"{name}.csv", rows, page.columns)
                _write(folder, f"{name}.csv", "\n".join(lines) + "\n")
            return name

        return ((keyed, every) | "Flatten" >> beam.Flatten()
                | "Group by page" >> beam.GroupByKey() | "Write" >> beam.MapTuple(write))


def _by_key(item):
    """By sort key; two rows under one key by their content (never arrival order)."""
    key, row = item
    return key, json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)


def _copy(source: str, target: str) -> None:
    with FileSystems.open(source, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        data = f.read()
    with FileSystems.create(target, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(data)


def _write(folder: str, name: str, text: str) -> None:
    with FileSystems.create(FileSystems.join(folder, name), mime_type="text/html") as f:
        f.write(text.encode("utf-8"))
