"""Every crowd round's worker page used as a worker would (issue 38, item 4): headless
Chromium (tests/release/chromium.py) opens the page of a sample release from disk, filled
with the round's first task row as the platform fills it (the release's preview page,
opened with the address parameters MTurk gives an accepted HIT), a script does what a
worker does (types a description, clicks an image, picks a relation), submits, and the
submitted form becomes an assignment of a batch results CSV in MTurk's own format
(tests/crowd/mturk_files.py). A rebuild then ingests that file as downloaded:

- ImageCoDe: the describe page's description, then its retrieve page's retrievals (as
  many retrievers as the task asks for, and one more assignment rejected on MTurk), each
  round a rebuild; the description is published, found by every retriever whose work
  was not rejected, and the approve/reject file approves them;
- NLVR2: each of the five rounds' results (the worker's assignment first, the sample's
  answers to the round's other tasks after it, all in MTurk's format) replaces that
  round's answers in a rebuild of the sample: every row of the file is read, and the
  worker's rows are used;
- VSR: the validation page's results, then the caption page's, each read before the
  sample's own answers in a rebuild: each row read, none rejected.

Every page first refuses a submit with nothing filled in (nothing is answered in advance:
NLVR2's "keep all" is a click), and NLVR2's image pages one with an image left
unanswered. Every page's preview, opened from disk with no network, shows every picture
it has (each <img> shown loaded: its bytes decoded).
Screenshots go to build/crowd-pages/. Slow (samples built and rebuilt) and needs Debian's
`chromium`: `make check-crowd-pages` runs it, as .ci/run does; plain `pytest` skips it.
"""
import csv
import json
import os
import shutil
import urllib.parse
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines import build as build_command
from pipelines.crowd import approvals
from tests.crowd.mturk_files import assignment, write_results
from tests.paths import ROOT
from tests.release.chromium import Browser
from transforms.crowd.answer_files import parse_file
from transforms.crowd.shown import FINGERPRINT

pytestmark = pytest.mark.skipif(os.environ.get("CROWD_BROWSER") != "1",
                                reason="the browser test: make check-crowd-pages")
SCREENSHOTS = ROOT / "build" / "crowd-pages"
SANDBOX = "https://workersandbox.mturk.com"
# after the page's own submit handler (the form's listener), keep what it would post
_CATCH_SUBMIT = """
window.__posted = null; window.__refused = 0;
window.addEventListener("submit", function (event) {
  if (event.defaultPrevented) { window.__refused += 1; return; }
  event.preventDefault();
  window.__posted = {action: event.target.action, fields: Array.from(new FormData(event.target).entries())};
});
"""
_SUBMIT = "document.getElementById('submit-button').click()"
_TYPED = "document.getElementById('%s').dispatchEvent(new Event('input', {bubbles: true}))"   # as typing does


def build(name, out, version, *sets):
    args = ["--config", "sample", "--output", str(out), "--version", version, "--quiet"]
    for s in sets:
        args += ["--set", s]
    return build_command.build(name, args)


@pytest.fixture(scope="module")
def browser():
    assert shutil.which("chromium"), "Debian's chromium is needed: make check-crowd-pages installs it"
    with Browser(width=1300, height=1000) as b:
        yield b


# what a preview shows: every <img> not in a hidden place, and how many of them the browser
# decoded (loaded from disk: this browser reaches no network)
_PICTURES = """(() => {
  const shown = Array.from(document.images).filter(i => !i.closest('.hidden'));
  return [shown.length, shown.filter(i => i.complete && i.naturalWidth > 0).length];
})()"""
PREVIEWS = {"imagecode": ("describe", "retrieve"),
            "nlvr2": ("pruning", "interest", "writing", "validation", "extra_validation"),
            "vsr": ("caption", "validation")}


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """Each crowd benchmark's sample release, 1.0.0: every round's page and preview."""
    out = tmp_path_factory.mktemp("samples")
    return {name: build(name, out / name, "1.0.0") for name in PREVIEWS}


@pytest.mark.parametrize("benchmark", sorted(PREVIEWS))
def test_every_preview_shows_its_pictures_from_disk(browser, samples, benchmark):
    release = samples[benchmark]
    for page in PREVIEWS[benchmark]:
        browser.open(f"file://{release}/crowd/pages/{page}.preview.html")
        browser.wait("document.body && document.body.dataset.ready === '1'")
        browser.wait("Array.from(document.images).every(i => i.complete)")
        shown, loaded = browser.evaluate(_PICTURES)
        assert shown > 0 and loaded == shown, f"{benchmark} {page}: {loaded} of {shown} pictures shown"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.screenshot(SCREENSHOTS / f"{benchmark}-{page}-preview.png", full_height=1400)


def first_row(path):
    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.DictReader(f))


def work(browser, release, page, worker, fill, n=1, partly=None):
    """Open `page` of `release` as worker `worker` on an accepted HIT, check that an
    untouched submit is refused (and one after `partly`, JavaScript that leaves a question
    unanswered, when given), run `fill` (JavaScript), submit; returns the posted fields
    (assignmentId left out)."""
    query = urllib.parse.urlencode({"assignmentId": f"3ASSIGN{n:05d}TEST", "hitId": f"3HIT{n:05d}TEST",
                                    "workerId": worker, "turkSubmitTo": SANDBOX})
    browser.open(f"file://{release}/crowd/pages/{page}.preview.html?{query}")
    browser.wait("document.body && document.body.dataset.ready === '1'")
    browser.evaluate(_CATCH_SUBMIT)
    for refused, step in enumerate(["", partly] if partly else [""], start=1):
        browser.evaluate(step)
        browser.evaluate(_SUBMIT)
        assert browser.evaluate("window.__refused") == refused and browser.evaluate("window.__posted") is None, \
            f"{page}: a submit with a question unanswered was not refused"
        assert browser.evaluate("document.getElementById('problem').textContent")
    browser.evaluate(fill)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    bench = os.path.basename(os.path.dirname(release))
    browser.screenshot(SCREENSHOTS / f"{bench}-{page}.png", full_height=1400)
    browser.evaluate(_SUBMIT)
    posted = browser.evaluate("window.__posted")
    assert posted is not None, f"{page}: the page did not submit"
    assert posted["action"] == f"{SANDBOX}/mturk/externalSubmit"
    fields = dict(posted["fields"])
    assert len(fields) == len(posted["fields"]), "a field submitted twice"
    assert fields.pop("assignmentId") == f"3ASSIGN{n:05d}TEST"
    return fields


def stages(release):
    with open(os.path.join(release, "MANIFEST.json")) as f:
        return json.load(f)["stages"]


def counts_out(release, stage):
    return stages(release)[stage]["line.out"]


def file_rejects(release, name):
    rows = pq.read_table(os.path.join(release, "rejects")).to_pylist()
    return [(r["reason"], r["detail"]) for r in rows if os.path.basename(r["file"]) == name]


# --- ImageCoDe: describe, rebuild, retrieve, rebuild --------------------------------------

def test_imagecode_describe_and_retrieve_pages_feed_a_rebuild(browser, samples, tmp_path_factory):
    out = Path(os.path.dirname(os.path.dirname(samples["imagecode"])))
    first = samples["imagecode"]
    task = first_row(os.path.join(first, "crowd", "describe_tasks.csv"))
    text = "The frame where the hand has just left the cup."
    answers = work(browser, first, "describe", "A1DESCRIBER",
                   f"document.getElementById('text').value = {json.dumps(text)};" + _TYPED % "text")
    assert answers == {FINGERPRINT: task[FINGERPRINT], "set_name": task["set_name"],
                       "target_index": task["target_index"], "text": text}   # who: MTurk's WorkerId
    described = out / "describe_results.csv"
    write_results(described, [assignment(1, "A1DESCRIBER", task, answers)], list(task))

    second = build("imagecode", out, "1.0.1", f"crowd.descriptions={described}", "crowd.retrievals=null")
    description_id = f"{task['set_name']}#{task['target_index']}#A1DESCRIBER"
    retrieve = first_row(os.path.join(second, "crowd", "retrieve_tasks.csv"))
    assert retrieve["description_id"] == description_id and retrieve["text"] == text
    assignments = []
    for n in range(1, int(retrieve["assignments"]) + 1):   # each retriever finds the target
        worker = f"A{n}RETRIEVER"
        click = ("var grid = document.getElementById('images');"
                 "var at = JSON.parse(grid.dataset.shownOrder).indexOf(%d);"
                 "grid.children[at].querySelector('img').click()" % int(task["target_index"]))
        answers = work(browser, second, "retrieve", worker, click, n)
        assert answers["guessed_index"] == task["target_index"] and "worker" not in answers
        assignments.append(assignment(n, worker, retrieve, answers))
    wrong = dict(answers, guessed_index=str((int(task["target_index"]) + 1) % 10))
    assignments.append(assignment(9, "A9RETRIEVER", retrieve, wrong, status="Rejected"))  # rejected on MTurk
    retrieved = out / "retrieve_results.csv"
    write_results(retrieved, assignments, list(retrieve))

    third = build("imagecode", out, "1.0.2", f"crowd.descriptions={described}", f"crowd.retrievals={retrieved}")
    published = pq.read_table(os.path.join(third, "parquet", "descriptions"),
                              columns=["description_id", "description", "retrievers", "correct"]).to_pylist()
    retrievers = int(retrieve["assignments"])
    assert published == [{"description_id": description_id, "description": text,
                          "retrievers": retrievers, "correct": retrievers}]
    assert file_rejects(third, "describe_results.csv") == []
    assert file_rejects(third, "retrieve_results.csv") == [
        ("rejected_assignment", "assignment 3ASSIGN00009EXAMPLE of worker A9RETRIEVER was rejected on Mechanical Turk")]
    # what MTurk takes back: every retriever approved, the rejected one left as it is
    assert approvals.main([third, str(retrieved), "--output", str(out / "approvals.csv")]) == 0
    with open(out / "approvals.csv", newline="") as f:
        decided = [(r["WorkerId"], r["Approve"], r["Reject"]) for r in csv.DictReader(f)]
    assert decided == [(f"A{n}RETRIEVER", "x", "") for n in range(1, retrievers + 1)] + [("A9RETRIEVER", "", "")]


# --- NLVR2: each round's results in a rebuild ------------------------------------------------

_REST = "document.querySelector('button[data-rest=\"%s\"]').click();"   # "keep all" and the like: a click
# what a worker of an image page does first (the page refuses it alone: the other images
# are unanswered), then the click that answers the rest
_PARTLY = {"pruning": "document.querySelector('input[name=\"verdict@1\"][value=\"inappropriate\"]').click()",
           "interest": "document.querySelector('input[name=\"duplicate@2\"][value=\"yes\"]').click();"
                       "document.querySelector('input[name=\"interesting@2\"][value=\"no\"]').click()"}
NLVR2_ROUNDS = [  # page, the round's input, its stage, what the worker does
    ("pruning", "pruning_answers", "crowd_pruning_answers", _REST % "verdict"),
    ("interest", "interest_answers", "set_construction_answers", _REST % "duplicate" + _REST % "interesting"),
    ("writing", "sentences", "writing_answers",
     "document.querySelector('.pair[data-pair=\"0\"] img').click();"
     "document.querySelector('.pair[data-pair=\"2\"] img').click();"
     "document.getElementById('sentence').value = 'One image shows exactly two cups.';" + _TYPED % "sentence"),
    ("validation", "validations", "validation_answers",
     "document.querySelector('input[name=\"judgement\"][value=\"True\"]').click()"),
    ("extra_validation", "extra_validations", "extra_validation_answers",
     "document.querySelector('input[name=\"judgement\"][value=\"False\"]').click()"),
]
TASK_ID = {"pruning": "set", "interest": "set", "writing": "task", "validation": "example",
           "extra_validation": "example"}
WORKER = {"writing": "writer", "validation": "worker", "extra_validation": "worker"}


@pytest.fixture(scope="module")
def nlvr2(samples):
    release = samples["nlvr2"]
    return Path(os.path.dirname(os.path.dirname(release))), release


def the_rest_of_the_round(page, sample_file, tasks, answered):
    """The sample's answers of the round's other tasks as MTurk assignments (each on its
    task's row as posted; an item page's rows of one set as one assignment), so that the
    round, and the rounds after it, run as in the sample."""
    with open(sample_file, "rb") as f:
        rows = [r.fields for r in parse_file(sample_file, f, "csv" if sample_file.endswith(".csv") else "jsonl")
                if r.error is None]
    by_task = {}
    for row in rows:
        key = str(row.get(TASK_ID[page], ""))
        if key in tasks and key != answered:
            by_task.setdefault(key, []).append(row)
    out = []
    for key, answers in sorted(by_task.items()):
        groups = [answers] if page in ("pruning", "interest") else [[a] for a in answers]
        for group in groups:
            fields = {TASK_ID[page]: key, FINGERPRINT: tasks[key][FINGERPRINT]}
            for k, answer in enumerate(group):
                for column, value in answer.items():
                    if column in (FINGERPRINT, TASK_ID[page]):
                        continue
                    value = ",".join(map(str, value)) if isinstance(value, list) else value
                    fields[f"{column}@{k}" if page in ("pruning", "interest") else column] = value
            worker = fields.pop(WORKER[page]) if page in WORKER else f"S{len(out)}"   # MTurk's WorkerId
            out.append(assignment(len(out) + 2, str(worker), tasks[key], fields))
    return out


@pytest.mark.parametrize("page, round_input, stage, fill", NLVR2_ROUNDS, ids=[r[0] for r in NLVR2_ROUNDS])
def test_an_nlvr2_page_feeds_its_round_in_a_rebuild(browser, nlvr2, page, round_input, stage, fill):
    out, first = nlvr2
    with open(os.path.join(first, "crowd", "pages", f"{page}.csv"), newline="", encoding="utf-8") as f:
        tasks = {row[TASK_ID[page]]: row for row in csv.DictReader(f)}
    task = first_row(os.path.join(first, "crowd", "pages", f"{page}.csv"))
    answers = work(browser, first, page, "A1WORKER", fill, partly=_PARTLY.get(page))
    assert answers[FINGERPRINT] == task[FINGERPRINT]
    mine = 1
    if page in ("pruning", "interest"):   # a row per image the set shows
        mine = sum(1 for k in range(16) if task.get(f"image_{k}_url"))
        assert sorted(int(c.split("@")[1]) for c in answers if c.startswith("image@")) == list(range(mine))
    with open(os.path.join(first, "MANIFEST.json")) as f:   # (paths relative to the sample's folder)
        sample_file = str(ROOT / "samples" / "nlvr2" / json.load(f)["config"]["collection"]["inputs"][round_input])
    results = out / f"{page}_results.csv"
    write_results(results, [assignment(1, "A1WORKER", task, answers)]
                  + the_rest_of_the_round(page, sample_file, tasks, task[TASK_ID[page]]), list(task))
    with open(results, "rb") as f:
        read = list(parse_file(str(results), f, "csv"))
    assert [r.line for r in read].count(2) == mine and all(r.error is None for r in read[:mine])
    version = f"1.0.{[r[0] for r in NLVR2_ROUNDS].index(page) + 1}"
    rebuilt = build("nlvr2", out, version, f"collection.inputs.{round_input}={results}")
    assert stages(rebuilt)[stage]["line.in"] == len(read)    # every row of the file read
    rejects = [r for r in pq.read_table(os.path.join(rebuilt, "rejects")).to_pylist()
               if os.path.basename(r["file"]) == results.name]   # (a reject names the file relative to the inputs)
    assert [r for r in rejects if r["line"] == 2] == []            # the worker's answer is used
    assert counts_out(rebuilt, stage) >= mine


# --- VSR: the caption and validation pages' results rows --------------------------------------

def test_vsr_pages_submit_the_rows_its_rounds_read(browser, samples):
    release = samples["vsr"]
    out = Path(os.path.dirname(os.path.dirname(release)))
    caption_task = first_row(os.path.join(release, "crowd", "pages", "caption.csv"))
    caption = work(browser, release, "caption", "A1WRITER",
                   "document.getElementById('relation').value = 'near';"
                   "document.getElementById('relation').dispatchEvent(new Event('input', {bubbles: true}));"
                   "document.querySelector('#images figure img').click()")
    assert caption == {FINGERPRINT: caption_task[FINGERPRINT], "pair_id": caption_task["pair_id"],
                       "true_image": caption_task["image_0"], "relation": "near"}
    validation_task = first_row(os.path.join(release, "crowd", "pages", "validation.csv"))
    vote = work(browser, release, "validation", "A2VALIDATOR",
                "document.querySelector('input[name=\"label\"][value=\"0\"]').click()")
    assert vote == {FINGERPRINT: validation_task[FINGERPRINT], "example_id": validation_task["example_id"],
                    "label": "0"}
    results = {}
    for name, worker, task, answers in [("caption_results.csv", "A1WRITER", caption_task, caption),
                                        ("validation_results.csv", "A2VALIDATOR", validation_task, vote)]:
        results[name] = out / name
        write_results(results[name], [assignment(1, worker, task, answers)], list(task))
    # each read first, then the sample's own answers; one rebuild each: a caption of a pair
    # supersedes the sample's (the sample's is then the duplicate), so the examples of the
    # sample's caption, and every vote on them, are gone from that build (stale_answer)
    before = stages(release)
    voted = build("vsr", out, "1.0.1", f"inputs.votes=[{results['validation_results.csv']},{ROOT}/samples/vsr/votes.jsonl]")
    assert stages(voted)["votes"]["line.in"] == before["votes"]["line.in"] + 1
    assert file_rejects(voted, "validation_results.csv") == []
    captioned = build("vsr", out, "1.0.2",
                      f"inputs.captions=[{results['caption_results.csv']},{ROOT}/samples/vsr/captions.jsonl]")
    assert stages(captioned)["captions"]["line.in"] == before["captions"]["line.in"] + 1
    assert file_rejects(captioned, "caption_results.csv") == []
    duplicates = [sum(r == "duplicate_caption" for r, _ in file_rejects(v, "captions.jsonl")) for v in (release, captioned)]
    assert duplicates[1] == duplicates[0] + 1   # the sample's caption of the pair, after the worker's
