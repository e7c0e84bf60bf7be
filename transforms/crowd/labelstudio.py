"""Label Studio's files: a round's labeling config and tasks import, and its JSON export
read as downloaded.

Label Studio knows no benchmark and neither does this module: a benchmark hands it a
round's columns (RoundLayout: which task columns are images and texts, the answer
column, the choices or a free text, the worker column) and gets

* `labeling_config(layout)`: the project's XML config. A choice is shown by its label and
  recorded by its `alias`, the value the round's own answer files hold (VSR: "1"/"0"),
  so an export needs no translation;
* `tasks_json(layout, rows)`: the tasks to import, `[{"data": {...}}, ...]`, each `data`
  the task row as the round's task file holds it (its id and `task_fingerprint`
  included) plus `worker_column`, the answer column that names the worker.

Label Studio's JSON export ("Export" -> JSON, or GET /api/projects/<id>/export) is a list
of those tasks, each with `annotations`: `[{"id", "completed_by", "result": [{"from_name",
"type", "value": {"choices": [...]} | {"text": [...]}}], "was_cancelled", ...}]`.
`answer_rows` makes one answer row per annotation, of the round's own columns:

* the task's `data` as imported: `task_fingerprint` comes back with it, so the answer is
  bound to what its worker saw exactly as a row of a JSON Lines file is
  (transforms/crowd/shown.py), and a task changed since is a stale_answer;
* each result's `from_name` -> its value: the choice (its alias) or the text;
* `worker_column`'s column <- `completed_by`, Label Studio's own record of who did the
  work (the user's email when the export expands it, else the user's id);
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
from typing import Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple
from xml.sax.saxutils import quoteattr

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from transforms.core.errors import InputError
from transforms.crowd.task_files import WriteTaskFiles, task_lines

LABELSTUDIO_DIR = "labelstudio"   # crowd/labelstudio/ in a release: <round>.json, <round>.xml
WORKER_COLUMN = "worker_column"   # in each task's data: which answer column is the worker


@dataclasses.dataclass(frozen=True)
class RoundLayout:
    """What a round's page shows and asks, by the round's task and answer columns.

    images: task columns holding an image URL; texts: task columns shown as text;
    answer: the answer column; choices: (label shown, value recorded) pairs, or () for a
    free text (TextArea); worker: the answer column that names the worker."""
    images: Tuple[str, ...]
    texts: Tuple[str, ...]
    answer: str
    choices: Tuple[Tuple[str, str], ...]
    worker: str
    instructions: str = ""


def labeling_config(layout: RoundLayout) -> str:
    """The project's labeling config (XML) for a round."""
    shown = [f"  <Header value={quoteattr(layout.instructions)}/>"] if layout.instructions else []
    shown += [f"  <Image name={quoteattr(c)} value={quoteattr('$' + c)}/>" for c in layout.images]
    shown += [f"  <Text name={quoteattr(c)} value={quoteattr('$' + c)}/>" for c in layout.texts]
    target = (layout.texts or layout.images)[0]
    if layout.choices:
        asked = [f"  <Choices name={quoteattr(layout.answer)} toName={quoteattr(target)} "
                 f'choice="single" required="true">']
        asked += [f"    <Choice value={quoteattr(label)} alias={quoteattr(value)}/>"
                  for label, value in layout.choices]
        asked.append("  </Choices>")
    else:
        asked = [f"  <TextArea name={quoteattr(layout.answer)} toName={quoteattr(target)} "
                 f'maxSubmissions="1" required="true"/>']
    return "\n".join(["<View>"] + shown + asked + ["</View>"]) + "\n"


def _task(layout: RoundLayout, row: Mapping) -> dict:
    return {"data": {**row, WORKER_COLUMN: layout.worker}}


def tasks_json(layout: RoundLayout, rows: Iterable[Mapping]) -> str:
    """The tasks to import into the round's project, in the order given: a JSON array,
    one task a line, as WriteLabelStudioRound writes it."""
    name = "tasks.json"
    return "\n".join(task_lines(name, [_task(layout, row) for row in rows])) + "\n"


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


def answer_columns(tasks: Sequence[dict]) -> List[str]:
    """The columns the export's answer rows offer: the tasks' data columns, the worker
    column they name, and every result's from_name."""
    columns = {}
    for task in tasks:
        data = task["data"]
        columns.update(dict.fromkeys(c for c in data if c != WORKER_COLUMN))
        if isinstance(data.get(WORKER_COLUMN), str):
            columns[data[WORKER_COLUMN]] = None
        for annotation in annotations_of(task):
            for result in annotation.get("result") or ():
                if isinstance(result, dict) and isinstance(result.get("from_name"), str):
                    columns[result["from_name"]] = None
    return list(columns)


def answer_rows(path: str, tasks: Sequence[dict], row_type) -> Iterator:
    """A `row_type(path, line, fields, error)` per annotation of the export, as the module
    docstring says; `line` is the annotation's place in the file."""
    place = 0
    for task in tasks:
        for annotation in annotations_of(task):
            place += 1
            fields, error = _answer(task, annotation)
            yield row_type(path, place, fields, error)


def annotations_of(task: dict) -> list:
    """A task's annotations (the workers' answers; predictions are a model's)."""
    annotations = task.get("annotations")
    return [a for a in annotations if isinstance(a, dict)] if isinstance(annotations, list) else []


def _worker(completed_by) -> str:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("email") or completed_by.get("id")
    return "" if completed_by is None or isinstance(completed_by, bool) else str(completed_by)


def _answer(task: dict, annotation: dict) -> Tuple[Optional[dict], Optional[Tuple[str, str]]]:
    worker = _worker(annotation.get("completed_by"))
    who = f"annotation {annotation.get('id', '?')} of user {worker or '?'} on task {task.get('id', '?')}"
    if annotation.get("was_cancelled") is True:
        return None, (reasons.REJECTED_ASSIGNMENT, f"{who} was cancelled (skipped) in Label Studio")
    data = dict(task["data"])
    worker_column = data.pop(WORKER_COLUMN, "")
    answers = {}
    for result in annotation.get("result") or ():
        name, value = (result.get("from_name"), result.get("value")) if isinstance(result, dict) else (None, None)
        if not isinstance(name, str) or not isinstance(value, dict):
            return None, (reasons.BAD_FIELD, f"{who}: a result without from_name and value")
        given = value.get("choices", value.get("text"))
        if not isinstance(given, list) or len(given) != 1 or not isinstance(given[0], str):
            return None, (reasons.BAD_FIELD, f"{who}: {name} must hold one choice or one text, "
                                             f"not {json.dumps(given, ensure_ascii=False)[:80]}")
        if name in data:   # an answer never overwrites what the task showed
            return None, (reasons.BAD_FIELD, f"{who}: the result {name} is a column of the task")
        answers[name] = given[0]
    fields = {**data, **answers, "labelstudio_annotation": annotation.get("id"),
              "labelstudio_task": task.get("id")}
    if isinstance(worker_column, str) and worker_column:
        fields[worker_column] = worker
    return fields, None


# --- the round's files, written by a build ----------------------------------------------------

class WriteLabelStudioRound(beam.PTransform):
    """(sort key, task row) -> `<folder>/<name>.json` (tasks_json's tasks, in sort-key
    order: the same bytes on any runner and worker count) and `<folder>/<name>.xml`
    (labeling_config); both written even when the round has no task. The tasks reach
    their file through a GroupByKey as single rows (transforms/crowd/task_files.py), never
    gathered into one element: no list of every task crosses between stages."""

    def __init__(self, folder: str, name: str, layout: RoundLayout):
        super().__init__()
        self._folder, self._name, self._layout = folder, name, layout

    def expand(self, keyed):
        folder, layout = self._folder, self._layout
        tasks_file, config_file = self._name + ".json", self._name + ".xml"

        def write_config(_):
            with FileSystems.create(FileSystems.join(folder, config_file),
                                    mime_type="application/xml") as f:
                f.write(labeling_config(layout).encode("utf-8"))
            return config_file

        _ = (keyed.pipeline | "Labeling config" >> beam.Create([None])
             | "Write labeling config" >> beam.Map(write_config))
        return (keyed | "As Label Studio tasks" >> beam.MapTuple(
                    lambda key, row: (tasks_file, (key, _task(layout, row))))
                | "Write tasks" >> WriteTaskFiles(folder, always=[tasks_file]))
