"""What every crowd round of every benchmark owes the people who do the work (issue 44), one
parametrised test each over the nine rounds (tests/crowd/rounds.py: ImageCoDe's describe
and retrieve, NLVR2's pruning, interest, writing, validation and extra validation, VSR's
caption and validation), each read by the round's own reader from Mechanical Turk's
results file and from Label Studio's export:

- a worker is who the platform says: MTurk's WorkerId, Label Studio's annotator; a
  posted field that names someone else is a bad_field reject, never someone's answer;
- no page answers for the worker: nothing is checked, selected or typed in advance, and
  each page has a check that refuses a submit with a question left unanswered (the
  refusal itself is seen in Chromium: tests/crowd/test_crowd_pages_browser.py);
- every answer a worker page or a Label Studio project can give is one its round
  accepts, and nothing else is: each form's and each labeling config's options are
  enumerated from the page and the config themselves and fed, one answer each, to the
  round's reader (a worker is never rejected, and never unpaid, for an option offered).
"""
import itertools
import json
import re
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser

import pytest

from tests.crowd.mturk_files import assignment, write_results
from tests.crowd.rounds import ROUNDS, choice, labelstudio_export, text
from transforms.crowd.labelstudio import CHOICE, CHOICES, COLUMN_NAMED, PLACE_IN, TEXT, labeling_config
from transforms.crowd.pages import fill, page_template

IDS = [r.id for r in ROUNDS]


def labelstudio_results(round_, answer: dict) -> list:
    """The results a Label Studio annotation holds for the answer a worker page submits
    (answer columns by the controls' forms: a place is where the page showed the value,
    a named column the one holding it)."""
    data = round_.labelstudio_task
    forms = round_.layout.answers(data)
    results = []
    for name, value in answer.items():
        form = forms.get(name)
        if form in (CHOICE, None) and name not in forms:
            continue   # the task's own columns, echoed by the page
        if form == CHOICE:
            results.append(choice(name, value))
        elif form == CHOICES:
            results.append(choice(name, *str(value).split(",")))
        elif form == TEXT:
            results.append(text(name, value))
        elif form.startswith(PLACE_IN):
            results.append(choice(name, list(data[form[len(PLACE_IN):]]).index(int(value))))
        elif form == COLUMN_NAMED:
            results.append(choice(name, next(c for c, v in data.items() if v == value)))
    return results


@pytest.mark.parametrize("round_", ROUNDS, ids=IDS)
def test_the_worker_is_who_mechanical_turk_says(round_, tmp_path):
    """One honest assignment, one from a page of an earlier release (it posted the worker
    column, as MTurk's WorkerId), one that posts another worker in the round's worker
    column, one that posts another WorkerId: the two forged are bad_field, and only the
    honest workers are credited with anything."""
    honest, earlier = "A1HONEST", "A4EARLIER"
    forged_worker = dict(round_.answer, **{round_.worker or "worker": "w01", "worker_column": round_.worker})
    forged_id = dict(round_.answer, WorkerId="A1HONEST")
    from_earlier_page = dict(round_.answer, **({round_.worker: earlier, "worker_column": round_.worker}
                                               if round_.worker else {}))
    path = tmp_path / "Batch_1_batch_results.csv"
    write_results(path, [assignment(1, honest, round_.task, round_.answer),
                         assignment(2, "A2POSER", round_.task, forged_worker),
                         assignment(3, "A3POSER", round_.task, forged_id),
                         assignment(4, earlier, round_.task, from_earlier_page)], list(round_.task))
    outcome = round_.read(str(path), tmp_path)
    assert outcome.accepted(2) and outcome.accepted(5), outcome.rejects
    if round_.worker:   # the forged worker column; a round that names no worker ignores it
        assert outcome.rejects.get(3) == ["bad_field"], outcome.rejects
    assert outcome.rejects.get(4) == ["bad_field"], outcome.rejects
    if round_.worker:
        assert honest in outcome.workers and set(outcome.workers) <= {honest, earlier}, outcome.workers


@pytest.mark.parametrize("round_", ROUNDS, ids=IDS)
def test_the_worker_is_who_label_studio_says(round_, tmp_path):
    """The annotator the export names (by email) is the worker; a result that names
    another worker is bad_field."""
    results = labelstudio_results(round_, round_.answer)
    assert results, "an honest answer holds a result"
    forged = results + [choice(round_.worker or "worker", "w01")]
    path = labelstudio_export(round_, [("h1@workers.example", results), ("p2@workers.example", forged)],
                              tmp_path / "project-1-export.json")
    outcome = round_.read(path, tmp_path)
    assert outcome.accepted(1) and outcome.rejects.get(2) == ["bad_field"], outcome.rejects
    if round_.worker:
        assert set(outcome.workers) == {"h1@workers.example"}, outcome.workers


# --- no answer without an action ---------------------------------------------------------------

@pytest.mark.parametrize("round_", ROUNDS, ids=IDS)
def test_no_page_answers_for_the_worker(round_):
    page = fill(page_template(round_.page), round_.task)
    answered = re.findall(r"<(?:input|option)\b[^>]*\s(?:checked|selected)(?=[\s=/>])[^>]*>", page)
    assert not answered, f"{round_.id} answers for the worker: {answered}"
    typed = re.findall(r"<textarea\b[^>]*>([^<]+)</textarea>", page)
    assert not typed, f"{round_.id} types for the worker: {typed}"
    assert "window.checkTask" in page, f"{round_.id} has no check that refuses an untouched submit"
    form = _Form()
    form.feed(page)
    assert not [name for name in _clicked(form) if form.echoed.get(name)], "a click's field filled in advance"


# --- every answer a page or a project can give -------------------------------------------------

NOT_OFFERED = "not-an-option"   # a value no page or project offers


class _Form(HTMLParser):
    """The questions of a filled worker page: radio groups and drop-downs with their values,
    text boxes, the hidden fields it echoes, and what its clicks can set (an image of the
    grid, a pair), skipping the image places the page hides (a smaller set)."""

    def __init__(self):
        super().__init__()
        self.options, self.texts, self.echoed, self.clicks = {}, [], {}, {}
        self._select, self._hidden_place = None, 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure" and "item" in (a.get("class") or "").split():
            self._hidden_place = 0 if a.get("data-url") else 1
        elif self._hidden_place and tag == "figure":
            self._hidden_place += 1
        if self._hidden_place:
            return
        if tag == "input" and a.get("type") == "radio":
            self.options.setdefault(a["name"], []).append(a["value"])
        elif tag == "input" and a.get("type") == "hidden" and a.get("name") != "assignmentId":
            if a.get("value"):
                self.echoed[a["name"]] = a["value"]
            else:
                self.clicks.setdefault(a["name"], [])
        elif tag == "textarea":
            self.texts.append(a["name"])
        elif tag == "select":
            self._select = a["name"]
            self.options[self._select] = []
        elif tag == "option" and self._select and a.get("value"):
            self.options[self._select].append(a["value"])
        for key in ("data-position", "data-image", "data-pair"):
            if key in a:
                self.clicks.setdefault(key, []).append(a[key])
        if "data-shown-order" in a:
            self.clicks["shown_order"] = json.loads(a["data-shown-order"])

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        elif tag == "figure" and self._hidden_place:
            self._hidden_place -= 1


def _clicked(form: _Form) -> dict:
    """What each hidden field a click fills can hold, by what the page's script puts there
    (pipelines/*/pages/*.html): the clicked image's canonical index through shown_order,
    the clicked image's file name, two of the pairs in ascending order."""
    values = {}
    for field in (f for f, v in form.clicks.items() if isinstance(v, list) and not v and "-" not in f):
        if field == "guessed_index":
            values[field] = [str(form.clicks["shown_order"][int(p)]) for p in form.clicks["data-position"]]
        elif field == "true_image":
            values[field] = form.clicks["data-image"]
        elif field == "selected":
            values[field] = [",".join(pair) for pair in itertools.combinations(sorted(form.clicks["data-pair"]), 2)]
        else:
            raise AssertionError(f"a field a click fills that this test cannot enumerate: {field}")
    return values


def page_answers(round_):
    """[(what it answers, answer fields, offered?)]: per question every option the page
    offers (the other questions at their first option), then one value it does not."""
    form = _Form()
    form.feed(fill(page_template(round_.page), round_.task))
    questions = {**form.options, **_clicked(form), **{t: ["A sentence the worker typed."] for t in form.texts}}
    assert questions, round_.id
    base = {**form.echoed, **{q: values[0] for q, values in questions.items()}}
    out = [(f"{q}={v}", dict(base, **{q: v}), True) for q, values in questions.items() for v in values]
    return out + [(f"{q}={NOT_OFFERED}", dict(base, **{q: "" if q in form.texts else NOT_OFFERED}), False)
                  for q in questions]


def labelstudio_answers(round_):
    """[(what it answers, the annotation's results, offered?)] from the project's labeling
    config as Label Studio shows it for the round's task (a Repeater's questions once per
    entry of its list): every control's every choice (every set of choices of a multiple
    one) and a text, the others at their first; then one choice the config does not offer.
    Every question is required, so each annotation answers them all."""
    config = ElementTree.fromstring(labeling_config(round_.layout))
    controls = {}

    def add(control, names):
        for name in names:
            if control.tag == "Choices":
                aliases = [c.get("alias") or c.get("value") for c in control.iter("Choice")]
                controls[name] = ([list(s) for n in range(1, len(aliases) + 1) for s in itertools.combinations(aliases, n)]
                                  if control.get("choice") == "multiple" else [[a] for a in aliases])
            elif control.tag == "TextArea":
                controls[name] = [None]

    for element in config:
        if element.tag == "Repeater":
            entries = round_.labelstudio_task[element.get("on").lstrip("$")]
            flag = element.get("indexFlag")
            for control in element:
                add(control, [control.get("name", "").replace(flag, str(k)) for k in range(len(entries))])
        else:
            add(element, [element.get("name")])
    asked = list(controls)
    first = []

    def results(values):
        return [text(name, "A sentence the worker typed.") if value is None else choice(name, *value)
                for name, value in values.items()]

    base = {name: controls[name][0] for name in asked + first}
    out = [(f"{name}={value}", results(dict(base, **{name: value})), True)
           for name, values in controls.items() for value in values]
    return out + [(f"{name}={NOT_OFFERED}", results(dict(base, **{name: [NOT_OFFERED]})), False)
                  for name in asked + first if controls[name][0] is not None]


def _judged(outcome, answers, line_of):
    wrongly = [(what, outcome.rejects.get(line_of(n))) for n, (what, _, offered) in enumerate(answers)
               if offered and not outcome.accepted(line_of(n))]
    assert not wrongly, f"rejected though offered: {wrongly}"
    let_in = [what for n, (what, _, offered) in enumerate(answers) if not offered and outcome.accepted(line_of(n))]
    assert not let_in, f"accepted though never offered: {let_in}"


@pytest.mark.parametrize("round_", ROUNDS, ids=IDS)
def test_every_answer_a_page_offers_is_accepted_and_nothing_else(round_, tmp_path):
    answers = page_answers(round_)
    path = tmp_path / "Batch_1_batch_results.csv"
    write_results(path, [assignment(n + 1, f"A{n + 1}WORKER", round_.task, fields)
                         for n, (_, fields, _) in enumerate(answers)], list(round_.task))
    _judged(round_.read(str(path), tmp_path), answers, lambda n: n + 2)


@pytest.mark.parametrize("round_", ROUNDS, ids=IDS)
def test_every_answer_a_label_studio_project_offers_is_accepted_and_nothing_else(round_, tmp_path):
    answers = labelstudio_answers(round_)
    path = labelstudio_export(round_, [(f"w{n}@workers.example", results) for n, (_, results, _) in enumerate(answers)],
                              tmp_path / "project-1-export.json")
    _judged(round_.read(path, tmp_path), answers, lambda n: n + 1)


# --- a round's answers from several exports ----------------------------------------------------

@pytest.mark.parametrize("round_", ROUNDS, ids=IDS)
def test_a_rounds_answers_come_from_a_list_of_files(round_, tmp_path):
    """The answer key takes a list: an MTurk batch and a Label Studio export of the same
    round, read together. The file listed first comes first, even where its name sorts
    after the other's: a second answer to the same task is the second file's duplicate."""
    batch = tmp_path / "zz_Batch_1_batch_results.csv"
    write_results(batch, [assignment(1, "A1HONEST", round_.task, round_.answer)], list(round_.task))
    export = labelstudio_export(round_, [("h1@workers.example", labelstudio_results(round_, round_.answer))],
                                tmp_path / "aa-project-1-export.json")
    outcome = round_.read([str(batch), export], tmp_path)
    assert (batch.name, 2) not in outcome.by_file, outcome.by_file           # the first listed: used
    assert all(r.startswith("duplicate_") for r in outcome.by_file.get(("aa-project-1-export.json", 1), ()))
    if round_.worker:
        assert "A1HONEST" in outcome.workers


def test_the_answer_keys_take_a_list_of_files(tmp_path):
    """ImageCoDe's crowd.descriptions and crowd.retrievals, NLVR2's collection.inputs.<round>
    (VSR's inputs take lists already), each file of a list checked before any work."""
    from pipelines.config import listed, load_config
    from pipelines.imagecode.config import ImageCodeConfig
    from pipelines.imagecode.preflight import check_imagecode
    from pipelines.nlvr2.config import Nlvr2Config
    from pipelines.registry import entry
    from transforms.core.errors import PreflightError
    good, bad = tmp_path / "a.csv", tmp_path / "b.csv"
    write_results(good, [assignment(1, "A1", {"task_fingerprint": "f" * 32}, {"set_name": "s", "target_index": "1",
                                                                             "text": "t"})], ["task_fingerprint"])
    bad.write_text("set_name,text\ns,t\n")
    videos = tmp_path / "videos.jsonl"
    videos.write_text('{"video": "v.mp4"}\n')
    imagecode = load_config(entry("imagecode").config_path("sample"),
                            [f"inputs.videos={videos}", "static.images=null",
                             f"crowd.descriptions=[{good},{bad}]", "crowd.retrievals=null"], ImageCodeConfig)
    assert listed(imagecode.crowd.descriptions) == [str(good), str(bad)]
    with pytest.raises(PreflightError, match=r"crowd.descriptions: .*b.csv.* lacks the column"):
        check_imagecode(imagecode)
    nlvr2 = load_config(entry("nlvr2").config_path("sample"), [f"collection.inputs.validations=[{good},{bad}]"],
                        Nlvr2Config)
    assert listed(nlvr2.collection.inputs.validations) == [str(good), str(bad)]
