"""Label Studio's files: a round's labeling config and tasks import, and its JSON export
read as downloaded.

Label Studio knows no benchmark and neither does this module: a benchmark hands it a
round's columns (RoundLayout: which task columns are images and texts, what is asked
(`Ask`: a choice, several choices or a free text, each recorded in an answer column), the
places of a round that answers per item (`Items`: NLVR2's pruning, a verdict per image),
the worker column) and gets

* `labeling_config(layout)`: the project's XML config. A choice is shown by its label and
  recorded by its `alias`, the value the round's own answer files hold (VSR: "1"/"0"),
  so an export needs no translation;
* `tasks_json(layout, rows, image_base)`: the tasks to import, `[{"data": {...}}, ...]`,
  each `data` the task row as the round's task file (or its page's batch input) holds it,
  `task_fingerprint` included, with its image columns prefixed by `image_base` (a
  release-relative path becomes a URL Label Studio can load), plus `labelstudio_answers`
  (how each control's result becomes its answer column's value) and, per item k, the
  item's task columns as `<column>@<k>`.

Label Studio's JSON export with its annotators (an export snapshot: POST
/api/projects/<id>/exports, docs/crowd.md) is a list of those tasks, each with
`annotations`: `[{"id", "completed_by": {"id", "email", ...}, "result": [{"from_name",
"type", "value": {"choices": [...]} | {"text": [...]}}], "was_cancelled", ...}]`.
`answer_rows` makes one answer row per annotation (per answered item, for a round with
items), of the round's own columns:

* the task's `data` as imported: `task_fingerprint` comes back with it, so the answer is
  bound to what its worker saw exactly as a row of a JSON Lines file is
  (transforms/crowd/shown.py), and a task changed since is a stale_answer;
* each result's `from_name` -> its value, by the control's form (`labelstudio_answers`):
  the choice (its alias); several choices, joined by ","; the text; the item of a task
  list at the chosen place (ImageCoDe: the clicked position through `shown_order`); or the
  task column the choice names (VSR: `image_1` -> that image's file name). A result of no
  control of the round, or not of its control's form, is bad_field naming the annotation;
* `<field>@<k>` results and data are item k's: one row per item with an answer, each with
  the annotation's other columns (as a Mechanical Turk results row, transforms/crowd/mturk.py);
* the round's worker column (`worker`, as the round names it) <- the email of
  `completed_by`, Label Studio's own record of who did the work. A user's number names
  another person on another server (every server's first user is 1), so an export that
  names annotators by number only is refused (`annotator_problem`); a result or task
  column that would name the worker is bad_field: the annotation cannot choose whose
  answer it is;
* a cancelled (skipped) annotation is a `rejected_assignment` reject: nothing of it
  reaches a release. Predictions are a model's, not a worker's: never read.

A JSON export has no line per answer: an answer row's `line` is the annotation's place in
the file (1 = the first annotation of the first task), so rejects still name one row each
and "the earliest row" is the file's order. answer_files.py tells an export from JSON
Lines by its first character, `[` (a JSON Lines line is an object).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple
from xml.sax.saxutils import quoteattr

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from transforms.core.errors import InputError
from transforms.crowd.items import item_field, split_items
from transforms.crowd.task_files import WriteTaskFiles, image_base, task_lines

LABELSTUDIO_DIR = "labelstudio"   # crowd/labelstudio/ in a release: <round>.json, <round>.xml
ANSWERS = "labelstudio_answers"   # in each task's data: {control name: its form (below)}
REPEATED = "{{idx}}"              # Label Studio's Repeater: an entry's index in names and values
# Task data of an earlier release named the worker column: never read (the round names it).
TASK_WORKER_COLUMN = "worker_column"

# The forms of an answer (ANSWERS' values): what a control's result becomes.
CHOICE, CHOICES, TEXT = "choice", "choices", "text"
PLACE_IN = "place in "            # + a task list column: the list's item at the chosen place
COLUMN_NAMED = "column named"     # the value of the task column the choice names


@dataclasses.dataclass(frozen=True)
class Ask:
    """One question of a round: its answer `column`; `choices` (label shown, value
    recorded) pairs, or () for a free text (TextArea); `several`: any number of choices,
    at least one, recorded joined by ","; `place_in`: the chosen value is a place (0, 1,
    ...) in that task list column, the answer that list's item; `names_column`: the
    chosen value names a task column, the answer that column's value; `to`: the shown
    column it belongs to (default: the round's first text, else image); `title`: a line
    above it; `groups`: (header, values) that show a long list of choices under headers,
    every value once (VSR's relations by Table 1's categories). An item's question
    (Items.asks) is named `<column>@<k>` and belongs to the item's first image."""
    column: str
    choices: Tuple[Tuple[str, str], ...] = ()
    several: bool = False
    place_in: str = ""
    names_column: bool = False
    to: str = ""
    title: str = ""
    groups: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()

    def form(self) -> str:
        if not self.choices:
            return TEXT
        if self.place_in:
            return PLACE_IN + self.place_in
        if self.names_column:
            return COLUMN_NAMED
        return CHOICES if self.several else CHOICE


@dataclasses.dataclass(frozen=True)
class Items:
    """The places of a round that shows (and maybe asks) per item, one of two kinds:

    * `count` fixed places k = 0, 1, ... (ImageCoDe's ten images, NLVR2's four pairs),
      shown only: `images` and `texts` are task columns with `{k}` in their names, `title`
      the header of a place (`{n}` its number from 1);
    * one place per entry of the task's list column `on` (NLVR2's images of a set, as many
      as the set holds: Label Studio's Repeater), each asking `asks`, every question
      required, so a worker answers every place the task has and no other: `images` and
      `texts` name the entry's fields shown, `columns` (answer column, entry field) what
      each item's answer row takes from its entry (NLVR2's pruning: the image's position).
    """
    count: int = 0
    images: Tuple[str, ...] = ()
    texts: Tuple[str, ...] = ()
    columns: Tuple[Tuple[str, str], ...] = ()
    asks: Tuple[Ask, ...] = ()
    title: str = "Item {n}"
    on: str = ""

    def places(self, row: Mapping) -> range:
        """The places of a task row."""
        listed = row.get(self.on) if self.on else None
        return range(len(listed) if isinstance(listed, list) else 0) if self.on else range(self.count)


@dataclasses.dataclass(frozen=True)
class RoundLayout:
    """What a round's page shows and asks, by the round's task and answer columns.

    images: task columns holding an image URL (or a path under `image_base`); texts: task
    columns shown as text; asks: the round's questions; items: the places of a round that
    shows (and maybe asks) per item. Who answered is Label Studio's to say, not the
    project's: the round's reader names its worker column (answer_rows)."""
    images: Tuple[str, ...]
    texts: Tuple[str, ...]
    asks: Tuple[Ask, ...]
    instructions: str = ""
    items: Optional[Items] = None

    def answers(self, row: Mapping) -> Dict[str, str]:
        """Each control's name -> its form (ANSWERS), for the places of a task row."""
        forms = {ask.column: ask.form() for ask in self.asks}
        if self.items:
            forms.update((f"{ask.column}@{k}", ask.form())
                         for k in self.items.places(row) for ask in self.items.asks)
        return forms

    def shown_images(self) -> List[str]:
        """The task columns holding an image (a fixed place's included)."""
        items = self.items
        per_item = [c.format(k=k) for k in range(items.count) for c in items.images] if items and not items.on else []
        return list(self.images) + per_item


def _control(ask: Ask, name: str, to: str, indent: str = "  ") -> List[str]:
    """A question, every one required (a Choices, or a TextArea for a free text); a long
    list of choices grouped under its groups' headers, as the worker page groups it."""
    head = [f"{indent}<Header value={quoteattr(ask.title)}/>"] if ask.title else []
    if not ask.choices:
        return head + [f"{indent}<TextArea name={quoteattr(name)} toName={quoteattr(to)} maxSubmissions=\"1\" "
                       f"required=\"true\"/>"]
    kind = "multiple" if ask.several else "single"
    label = dict((value, label) for label, value in ask.choices)

    def choices(values, inner):
        return [f"{inner}<Choice value={quoteattr(label[v])} alias={quoteattr(v)}/>" for v in values]

    if ask.groups:
        body = [line for group, values in ask.groups for line in (
            [f"{indent}  <Header value={quoteattr(group)} size=\"6\"/>",
             f"{indent}  <View style=\"display: flex; flex-wrap: wrap; column-gap: 1.5em\">"]
            + choices(values, indent + "    ") + [f"{indent}  </View>"])]
    else:
        body = choices([value for _, value in ask.choices], indent + "  ")
    return (head + [f"{indent}<Choices name={quoteattr(name)} toName={quoteattr(to)} choice=\"{kind}\" "
                    f"required=\"true\">"] + body + [f"{indent}</Choices>"])


def _shown(images: Iterable[str], texts: Iterable[str], entry: str = "") -> List[str]:
    """The Image and Text tags of task columns; with `entry` (a Repeater's `$list[{{idx}}]`),
    of that entry's fields, each named `<field>_{{idx}}`."""
    indent = "    " if entry else "  "
    name = (lambda c: f"{c}_{REPEATED}") if entry else (lambda c: c)
    value = (lambda c: f"{entry}.{c}") if entry else (lambda c: "$" + c)
    return ([f"{indent}<Image name={quoteattr(name(c))} value={quoteattr(value(c))}/>" for c in images]
            + [f"{indent}<Text name={quoteattr(name(c))} value={quoteattr(value(c))}/>" for c in texts])


def labeling_config(layout: RoundLayout) -> str:
    """The project's labeling config (XML) for a round."""
    lines = [f"  <Header value={quoteattr(layout.instructions)}/>"] if layout.instructions else []
    lines += _shown(layout.images, layout.texts)
    items = layout.items
    if items and items.on:   # a place per entry of the task's list: as many as the task has
        lines += [f"  <Repeater on={quoteattr('$' + items.on)} indexFlag={quoteattr(REPEATED)}>",
                  f"    <Header value={quoteattr(items.title.format(n=''))}/>"]
        lines += _shown(items.images, items.texts, entry=f"${items.on}[{REPEATED}]")
        shown = f"{(items.images + items.texts)[0]}_{REPEATED}"
        for ask in items.asks:
            lines += _control(ask, f"{ask.column}@{REPEATED}", shown, indent="    ")
        lines += ["  </Repeater>"]
    for k in range(items.count if items and not items.on else 0):
        images, texts = [c.format(k=k) for c in items.images], [c.format(k=k) for c in items.texts]
        lines += [f"  <Header value={quoteattr(items.title.format(n=k + 1))}/>"] + _shown(images, texts)
    first = (list(layout.texts) + list(layout.images) + layout.shown_images())[0]
    for ask in layout.asks:
        lines += _control(ask, ask.column, ask.to or first)
    return "\n".join(["<View>"] + lines + ["</View>"]) + "\n"


def _served(value, base: str):
    """A release-relative image path under the image base (a URL as it is)."""
    return base + value if base and isinstance(value, str) and value and "://" not in value else value


def _task(layout: RoundLayout, row: Mapping, base: str = "") -> dict:
    data = dict(row)
    for column in layout.shown_images():
        if column in data:
            data[column] = _served(data[column], base)
    items = layout.items
    if items and items.on:   # each entry's images served too; item k's answer columns beside
        entries = [dict(entry, **{c: _served(entry.get(c), base) for c in items.images if c in entry})
                   for entry in row.get(items.on) or ()]
        data[items.on] = entries
        for k, entry in enumerate(entries):
            data.update((f"{answer}@{k}", entry.get(field, "")) for answer, field in items.columns)
    return {"data": {**data, ANSWERS: layout.answers(row)}}


def tasks_json(layout: RoundLayout, rows: Iterable[Mapping], image_base_url: str = "") -> str:
    """The tasks to import into the round's project, in the order given: a JSON array,
    one task a line, as WriteLabelStudioRound writes it."""
    name = "tasks.json"
    base = image_base(image_base_url)
    return "\n".join(task_lines(name, [_task(layout, row, base) for row in rows])) + "\n"


# --- the export, read ------------------------------------------------------------------------

def is_export(head: bytes) -> bool:
    """True when a file starting with `head` is a JSON array (Label Studio's export)."""
    return head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"["


def load_export(path: str, data: bytes) -> list:
    """The export's tasks; InputError naming the file when it is not Label Studio's JSON."""
    try:
        tasks = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: byte 0x{data[e.start]:02x} at offset {e.start} is not UTF-8; "
                         f"a Label Studio export is UTF-8 JSON") from None
    except ValueError as e:
        raise InputError(f"{path}: not JSON ({e}); give Label Studio's JSON export as downloaded") from None
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and isinstance(t.get("data"), dict)
                                             for t in tasks):
        raise InputError(f"{path}: not a Label Studio JSON export (a list of tasks, each with \"data\")")
    return tasks


def answer_columns(tasks: Sequence[dict], worker: str = "") -> List[str]:
    """The columns the export's answer rows offer: the tasks' data columns, the round's
    worker column `worker` (from completed_by), and every result's from_name (an item's
    `<field>@<k>` as <field>)."""
    columns = dict.fromkeys([worker] if worker else [])
    for task in tasks:
        data = task["data"]
        columns.update(dict.fromkeys(item_field(c) for c in data if c not in (TASK_WORKER_COLUMN, ANSWERS)))
        for annotation in annotations_of(task):
            for result in annotation.get("result") or ():
                if isinstance(result, dict) and isinstance(result.get("from_name"), str):
                    columns[item_field(result["from_name"])] = None
    return list(columns)


def answer_rows(path: str, tasks: Sequence[dict], row_type, worker: str = "") -> Iterator:
    """`row_type(path, line, fields, error)`s of the export's annotations, as the module
    docstring says; `line` is the annotation's place in the file, `worker` the round's
    worker column ("" for a round that names none)."""
    place = 0
    for task in tasks:
        for annotation in annotations_of(task):
            place += 1
            rows, error = _answer(task, annotation, worker)
            if error is not None:
                yield row_type(path, place, None, error)
            for fields in rows or ():
                yield row_type(path, place, fields, None)


def annotations_of(task: dict) -> list:
    """A task's annotations (the workers' answers; predictions are a model's)."""
    annotations = task.get("annotations")
    return [a for a in annotations if isinstance(a, dict)] if isinstance(annotations, list) else []


def annotator(completed_by) -> str:
    """The worker id of an annotation: the email of its annotator as the export names them
    ("" when it names them by number only, or not at all)."""
    email = completed_by.get("email") if isinstance(completed_by, dict) else None
    return email.strip() if isinstance(email, str) else ""


def annotator_problem(path: str, tasks: Sequence[dict]) -> str:
    """Why the export at `path` cannot say who did its work ("" when it can): the first
    annotation whose annotator has no email (a bare user number, as Label Studio's plain
    export gives it, is the first user of every server)."""
    for task in tasks:
        for annotation in annotations_of(task):
            if not annotator(annotation.get("completed_by")):
                return (f"{path}: annotation {annotation.get('id', '?')} names its annotator as "
                        f"{json.dumps(annotation.get('completed_by'))[:60]}, a number another server gives "
                        "to someone else: export the project with its annotators' emails (an export "
                        "snapshot with annotations__completed_by, docs/crowd.md)")
    return ""


def _answer(task: dict, annotation: dict, worker_column: str) -> Tuple[Optional[List[dict]], Optional[Tuple[str, str]]]:
    completed_by = annotation.get("completed_by")
    worker = annotator(completed_by)
    user = worker or (completed_by.get("id") if isinstance(completed_by, dict) else completed_by)
    who = f"annotation {annotation.get('id', '?')} of user {user if user not in (None, '') else '?'} on task {task.get('id', '?')}"
    if annotation.get("was_cancelled") is True:
        return None, (reasons.REJECTED_ASSIGNMENT, f"{who} was cancelled (skipped) in Label Studio")
    if worker_column and not worker:
        return None, (reasons.BAD_FIELD, f"{who}: no email names the annotator, so nothing says who did the work")
    data = dict(task["data"])
    data.pop(TASK_WORKER_COLUMN, None)
    if worker_column and str(data.get(worker_column, "")).strip() not in ("", worker):
        return None, (reasons.BAD_FIELD, f"{who}: the task names the worker {str(data[worker_column])[:60]!r}, "
                                         f"but Label Studio says {worker!r}")
    forms = data.pop(ANSWERS, None)
    if forms is not None and not (isinstance(forms, dict) and all(isinstance(f, str) for f in forms.values())):
        return None, (reasons.BAD_FIELD, f"{who}: the task's {ANSWERS} is not a map of controls to forms")
    answers = {}
    for result in annotation.get("result") or ():
        name, value = (result.get("from_name"), result.get("value")) if isinstance(result, dict) else (None, None)
        if not isinstance(name, str) or not isinstance(value, dict):
            return None, (reasons.BAD_FIELD, f"{who}: a result without from_name and value")
        if name in data:   # an answer never overwrites what the task showed
            return None, (reasons.BAD_FIELD, f"{who}: the result {name} is a column of the task")
        if worker_column and item_field(name) == worker_column:
            return None, (reasons.BAD_FIELD, f"{who}: the result {name} would name the worker, "
                                             f"whom Label Studio names ({worker!r})")
        if forms is not None and name not in forms:
            return None, (reasons.BAD_FIELD, f"{who}: the result {name} answers no question of this round "
                                             f"({', '.join(sorted(forms))})")
        answer, problem = _value(forms.get(name, "") if forms is not None else "", value, data)
        if problem:
            return None, (reasons.BAD_FIELD, f"{who}: {name} {problem}")
        answers[name] = answer
    common = {**data, "labelstudio_annotation": annotation.get("id"), "labelstudio_task": task.get("id")}
    if worker_column:
        common[worker_column] = worker
    return _items(common, answers), None


def _value(form: str, value: dict, data: dict) -> Tuple[Optional[str], str]:
    """A result's answer by its control's form ("" for an export of no form: one choice
    or one text), or the problem with it."""
    given = value.get("choices", value.get("text"))
    shown = json.dumps(given, ensure_ascii=False)[:80]
    several = form == CHOICES and isinstance(given, list) and given and "choices" in value
    if several and all(isinstance(g, str) for g in given):
        return ",".join(given), ""
    if not isinstance(given, list) or len(given) != 1 or not isinstance(given[0], str):
        return None, (f"must hold one or more choices, not {shown}" if form == CHOICES
                      else f"must hold one choice or one text, not {shown}")
    if form and (form == TEXT) != ("text" in value and "choices" not in value):
        return None, f"must hold {'a text' if form == TEXT else 'a choice'}, not {shown}"
    chosen = given[0]
    if form.startswith(PLACE_IN):
        listed = data.get(form[len(PLACE_IN):])
        place = int(chosen) if chosen.isdigit() else -1
        if not isinstance(listed, list) or not 0 <= place < len(listed):
            return None, f"{chosen!r} is no place in the task's {form[len(PLACE_IN):]}"
        return str(listed[place]), ""
    if form == COLUMN_NAMED:
        if chosen not in data or isinstance(data[chosen], (dict, list)):
            return None, f"{chosen!r} names no column of the task"
        return str(data[chosen]), ""
    return chosen, ""


def _items(common: dict, answers: dict) -> List[dict]:
    """The annotation's rows: one per item k with an answered `<field>@<k>` (the task's
    `<column>@<k>` with it), or one row when the round asks nothing per item (or the
    worker answered no item: the round's missing_field)."""
    shown, shown_items = split_items(common)
    asked, answered = split_items(answers)
    plain = {**shown, **asked}
    return [{**plain, **shown_items.get(k, {}), **answered[k]} for k in sorted(answered)] or [plain]


# --- the round's files, written by a build ----------------------------------------------------

class WriteLabelStudioRound(beam.PTransform):
    """(sort key, task row) -> `<folder>/<name>.json` (tasks_json's tasks, in sort-key
    order: the same bytes on any runner and worker count) and `<folder>/<name>.xml`
    (labeling_config); both written even when the round has no task. The tasks reach
    their file through a GroupByKey as single rows (transforms/crowd/task_files.py), never
    gathered into one element: no list of every task crosses between stages.
    `image_base_url` (`crowd.image_base_url`): where the release's images are served, for
    the tasks' release-relative image paths."""

    def __init__(self, folder: str, name: str, layout: RoundLayout, image_base_url: Optional[str] = None):
        super().__init__()
        self._folder, self._name, self._layout = folder, name, layout
        self._base = image_base(image_base_url)

    def expand(self, keyed):
        folder, layout, base = self._folder, self._layout, self._base
        tasks_file, config_file = self._name + ".json", self._name + ".xml"

        def write_config(_):
            with FileSystems.create(FileSystems.join(folder, config_file),
                                    mime_type="application/xml") as f:
                f.write(labeling_config(layout).encode("utf-8"))
            return config_file

        _ = (keyed.pipeline | "Labeling config" >> beam.Create([None])
             | "Write labeling config" >> beam.Map(write_config))
        return (keyed | "As Label Studio tasks" >> beam.MapTuple(
                    lambda key, row: (tasks_file, (key, _task(layout, row, base))))
                | "Write tasks" >> WriteTaskFiles(folder, always=[tasks_file]))
