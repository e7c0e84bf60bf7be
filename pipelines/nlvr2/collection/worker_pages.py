"""NLVR2's worker pages (§3.1-§3.3): crowd/pages/ of the release, one per crowd round,
each with the batch input CSV it is filled from (crowd/pages/<round>.csv: the task files
of tasks/ hold lists, a platform's input CSV holds one value a column).

    pruning           the set's images (S4): per image keep, or why it goes
                      -> set, image@k, verdict@k: one answer row per image
    interest          the pruned set (S5): per image duplicate? interesting?
                      -> set, image@k, duplicate@k, interesting@k
    writing           the four pairs and the sentence rules (S7): select two pairs, write
                      -> task, sentence, selected ("0,2")
    validation        the sentence and one pair (S8): True, False or report
                      -> example, judgement
    extra_validation  the sentence and one pair (S9): True or False, nothing to report any
                      more (the validation template without its report parts)
                      -> example, judgement

The worker columns (writing's `writer`, the validations' `worker`) are MTurk's WorkerId
(transforms/crowd/mturk.py), never fields of the page.

Every page echoes task_fingerprint. Its preview shows the collected images themselves (the
task's URLs are paths beside the search results in a local collection: the preview
copies them, transforms/crowd/pages.py FilesUnder). `image@k` and the like are one item of a page that
answers several (transforms/crowd/mturk.py reads a results row into one row per image).
Image places: as many as a set can hold (collection.search.set_size, pairs from
collection.pruning.set_images); a smaller set leaves the rest empty and unsubmitted.
"""
from __future__ import annotations

import os
import re
from typing import Dict, List

import apache_beam as beam

from transforms.crowd.pages import FilesUnder, Page, WritePages
from transforms.crowd.shown import FINGERPRINT

_TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pages")
_REPEAT = re.compile(r"<!--repeat-->\n(.*?)<!--/repeat-->\n", re.S)
# A block written once per image place of the set (pruning, interest): only the place's
# own controls are in the template; the image, its id and the grid around them are here.
_EACH_IMAGE = re.compile(r"<!--each image-->\n(.*?)<!--/each image-->\n", re.S)
_IMAGE_PLACE = """<figure class="item" data-url="${{image_{k}_url}}">
<img src="${{image_{k}_url}}" alt="image {k}">
<input type="hidden" name="image@{k}" value="${{image_{k}}}">
<figcaption>
{controls}</figcaption>
</figure>
"""
# A set has fewer images than the page has places: the empty places are neither shown nor
# submitted. Every question of every image shown needs the worker's answer: nothing is
# answered in advance, a button (`data-rest`: a question, `data-value`: the answer) gives
# "keep all" and the like to the images not answered yet by one click, and a submit with
# an image left unanswered is refused (checkTask), so no untouched page posts as work.
_IMAGE_PLACES_SCRIPT = """<script>
document.addEventListener("DOMContentLoaded", function () {   // once the buttons below are there
  var places = [];
  Array.prototype.forEach.call(document.querySelectorAll("figure.item"), function (figure) {
    if (figure.dataset.url) { places.push(figure); return; }
    figure.classList.add("hidden");
    Array.prototype.forEach.call(figure.querySelectorAll("input"), function (input) { input.disabled = true; });
  });
  var questions = {};
  places.forEach(function (figure) {
    Array.prototype.forEach.call(figure.querySelectorAll("input[type=radio]"), function (radio) {
      questions[radio.name.split("@")[0]] = true;
    });
  });
  var unanswered = function (question) {
    return places.filter(function (figure) {
      return !figure.querySelector("input[type=radio][name^='" + question + "@']:checked");
    });
  };
  Array.prototype.forEach.call(document.querySelectorAll("button[data-rest]"), function (button) {
    button.addEventListener("click", function () {
      unanswered(button.dataset.rest).forEach(function (figure) {
        figure.querySelector("input[type=radio][name^='" + button.dataset.rest + "@'][value='"
                             + button.dataset.value + "']").checked = true;
      });
    });
  });
  window.checkTask = function () {
    var left = Object.keys(questions).reduce(function (n, q) { return n + unanswered(q).length; }, 0);
    return left ? "Answer every image (" + left + " answer" + (left > 1 ? "s" : "") +
                  " missing), or use the buttons below the images." : "";
  };
});
</script>
"""
# the parts of the validation template only S8 has: S9's extra judgements take no report
# (splits.py), so its page never offers one
_REPORT = re.compile(r"<!--report-->.*?<!--/report-->", re.S)
# the task file of each round's tasks, and its page
PAGE_OF = {"pruning.jsonl": "pruning", "interest.jsonl": "interest", "writing.jsonl": "writing",
           "validation.jsonl": "validation", "extra_validation.jsonl": "extra_validation"}
_TEMPLATE_OF = {"extra_validation": "validation"}
_TITLES = {"pruning": "NLVR2: image pruning", "interest": "NLVR2: duplicates and interesting images",
           "writing": "NLVR2: write a sentence", "validation": "NLVR2: validate a sentence",
           "extra_validation": "NLVR2: validate a sentence"}


def _body(name: str, places: int) -> str:
    """The template with its repeated blocks written once per place (k = 0, 1, ...)."""
    with open(os.path.join(_TEMPLATES, f"{_TEMPLATE_OF.get(name, name)}.html"), encoding="utf-8") as f:
        text = f.read()
    text = _REPORT.sub("", text) if name == "extra_validation" else text.replace("<!--report-->", "").replace(
        "<!--/report-->", "")
    text = _REPEAT.sub(lambda m: "".join(m.group(1).replace("__K__", str(k)) for k in range(places)), text)
    return _EACH_IMAGE.sub(lambda m: _image_places(m.group(1), places), text)


def _image_places(controls: str, places: int) -> str:
    figures = "".join(_IMAGE_PLACE.format(k=k, controls=controls.replace("__K__", str(k)))
                      for k in range(places))
    return f'<div class="grid" id="images">\n{figures}</div>\n{_IMAGE_PLACES_SCRIPT}'


def columns(name: str, images: int, pairs: int) -> tuple:
    """The flat batch input's columns of a round's page."""
    if name in ("pruning", "interest"):
        return ("set", "synset") + tuple(c for k in range(images) for c in (f"image_{k}", f"image_{k}_url")) + (FINGERPRINT,)
    if name == "writing":
        return ("task", "synset") + tuple(c for n in range(pairs) for c in (f"pair_{n}_left", f"pair_{n}_right")) + (FINGERPRINT,)
    return ("example", "sentence", "left_url", "right_url", FINGERPRINT)


def pages(images: int, pairs: int) -> List[Page]:
    out = []
    for name in PAGE_OF.values():
        places = images if name in ("pruning", "interest") else pairs
        out.append(Page(name, _TITLES[name], _body(name, places),
                        columns(name, images, pairs)))
    return out


def flat_row(name: str, task: dict, images: int, pairs: int) -> Dict[str, object]:
    """A task of tasks/<round>.jsonl as one row of the page's batch input."""
    if name in ("pruning", "interest"):
        row = {"set": task["set"], "synset": task["synset"]}
        shown = task["images"]
        for k in range(images):
            row[f"image_{k}"] = shown[k]["image"] if k < len(shown) else ""
            row[f"image_{k}_url"] = shown[k]["url"] if k < len(shown) else ""
    elif name == "writing":
        row = {"task": task["task"], "synset": task["synset"]}
        shown = task["pairs"]
        for n in range(pairs):
            row[f"pair_{n}_left"] = shown[n]["left_url"] if n < len(shown) else ""
            row[f"pair_{n}_right"] = shown[n]["right_url"] if n < len(shown) else ""
    else:
        row = {c: task[c] for c in ("example", "sentence", "left_url", "right_url")}
    row[FINGERPRINT] = task[FINGERPRINT]
    return row


class WriteWorkerPages(beam.PTransform):
    """(task file, (key, task)) of the collection's rounds -> crowd/pages/ (a page for
    every round; the rounds reached get their preview and batch input rows). `images_root`:
    the folder of the search results, whose relative image paths the previews show."""

    def __init__(self, folder: str, images: int, pairs: int, images_root: str = ""):
        super().__init__()
        self._folder, self._images, self._pairs = folder, images, pairs
        self._local = FilesUnder(images_root)

    def expand(self, tasks):
        images, pairs = self._images, self._pairs

        def page_rows(item):
            file, (key, task) = item
            name = PAGE_OF.get(file)
            return [(name, (key, flat_row(name, task, images, pairs)))] if name else []

        return (tasks | "Page rows" >> beam.FlatMap(page_rows)
                | "Write" >> WritePages(self._folder, pages(images, pairs), local_image=self._local))
