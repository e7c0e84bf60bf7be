"""What a crowd worker was shown, and the check that an answer was given on what this
build publishes (any benchmark with crowd rounds).

A crowd answer names its task by an id (a set name, a set and a target, a pair), but an
id is a name, not content: rebuild with another threshold and the set behind a name can
hold other frames, its target another frame. So every task row a build exports carries
`task_fingerprint`, a digest of exactly what the task puts in front of a worker, in
content terms (which image bytes or video frames, in which order, which text), never
names; the benchmark says what that is (`view`). A build then uses an answer only where
it can show that the worker saw what this build shows for that task:

  1. the answer row carries the fingerprint (crowdsourcing platforms carry a task's
     columns through to its answers), or the benchmark derives it from content the row
     itself carries (a correction names the text it corrected);
  2. else the release the tasks were exported in (the benchmark's `tasks_release` key)
     lists the task with its fingerprint (`ReadTaskViews`);
  3. else, where task ids are themselves digests of what the task shows
     (`ids_name_content`), naming an id this build shows is that proof.

An answer whose evidence differs from what this build shows for its task, or whose task
this build does not show at all while the evidence says the worker saw one, is a
`stale_answer` reject whose detail says what changed (labels: the paths, frames and
texts a person reads); never re-attached. With no evidence at all it is `stale_answer`
too. An answer naming a task this build does not show, with no evidence that any build
showed it, gets the caller's `missing_reason` (an unknown id).

    views = tasks | beam.Map(lambda t: (t.task_id, view(content_of(t), labels_of(t))))
    then = p | ReadTaskViews(earlier_task_file, "task_id", labels_of_row)       # route 2
    checked = answers | CheckShown("describe", "line", views, then, UNKNOWN_SET, "crowd.tasks_release")
    checked[MAIN]      # the answers' payloads
    checked[REJECTS]   # stale_answer (and missing_reason) rejects

`check_task_release` checks route 2's folder before any work.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from schemas.layout import MANIFEST
from transforms.core.errors import InputError
from transforms.core.stage import StageFn, stage_pardo
from transforms.io.lines import ReadNumberedLines, parse_json_object, read_numbered_lines

FINGERPRINT = "task_fingerprint"   # the column of every task row, and of answers that carry it
_SHOWN = 8   # list items a detail names before "and n more"

Label = Union[str, Tuple[str, ...]]
Labels = Tuple[Tuple[str, Label], ...]


def fingerprint(content: Mapping[str, Any]) -> str:
    """The digest of what a task shows: sha256 of its canonical JSON, 32 hex digits."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def labels(named: Mapping[str, Any]) -> Labels:
    """(name, text or tuple of texts) pairs, in the order given: how a person names what
    a task shows (paths, frame files, texts), for a stale answer's detail."""
    return tuple((name, tuple(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value))
                 for name, value in named.items())


class TaskView(NamedTuple):
    """What one task shows: the fingerprint of its content and the labels of it."""
    fingerprint: str
    labels: Labels = ()


def view(content: Mapping[str, Any], named: Mapping[str, Any]) -> TaskView:
    return TaskView(fingerprint(content), labels(named))


class Evidence(NamedTuple):
    """What an answer row says its worker saw: a fingerprint ("" when the row has none)
    and, when the row carries the task's columns too, their labels."""
    fingerprint: str = ""
    labels: Labels = ()


def carried(row: Mapping, labels_of: Optional[Callable[[Mapping], Mapping]] = None) -> Evidence:
    """The evidence an answer row carries: its `task_fingerprint` cell and, with
    `labels_of` (the benchmark's reader of a task row), the task columns it carries."""
    value = row.get(FINGERPRINT)
    value = value.strip() if isinstance(value, str) else ""
    named = ()
    if value and labels_of is not None:
        try:
            named = labels(labels_of(row))
        except (KeyError, TypeError, ValueError):   # the row carries the fingerprint alone
            named = ()
    return Evidence(value, named)


class Answer(NamedTuple):
    """One answer on its way through CheckShown: the task it answers, its evidence, the
    fields of its Reject should it be refused (item_id, file, line, split, ...), and what
    goes on when it stands."""
    task: str
    evidence: Evidence
    reject: dict
    payload: Any


# --- the detail of a stale answer ------------------------------------------------------

def _items(values: Sequence[str], strip: str = "") -> str:
    values = [v[len(strip):] if strip and v.startswith(strip) else v for v in values]
    shown = ", ".join(values[:_SHOWN])
    return shown + (f" and {len(values) - _SHOWN} more" if len(values) > _SHOWN else "")


def _text(value: Label, strip: str = "") -> str:
    return _items(list(value), strip) if isinstance(value, tuple) else _items([value], strip)


def _folder(values: Iterable[str]) -> str:
    """The folder every path-like value lies in ("" when they do not share one), so a
    detail names it once: "target: img61.jpg -> img57.jpg (in compat/image-sets/x/)"."""
    values = list(values)
    if not values or not all("/" in v for v in values):
        return ""
    first = values[0].rsplit("/", 1)[0] + "/"
    return first if all(v.startswith(first) and "/" not in v[len(first):] for v in values) else ""


def _flat(named: Labels) -> List[str]:
    return [v for _, value in named for v in (value if isinstance(value, tuple) else (value,))]


def change_detail(then: Labels, now: Labels) -> str:
    """What differs between what the worker saw (`then`) and what this build shows
    (`now`), label by label: "target: a -> b; images: removed x, y; added z, w"."""
    if not then:
        strip = _folder(_flat(now))
        shown = "; ".join(f"{name}: {_text(value, strip)}" for name, value in now)
        return (f"the worker saw other content; this build shows {shown}"
                + (f" (in {strip})" if strip else ""))
    before, changes = dict(then), []
    for name, value in now:
        old = before.get(name)
        if old is None or old == value:
            continue
        if isinstance(value, tuple) and isinstance(old, tuple):
            removed = tuple(v for v in old if v not in value)
            added = tuple(v for v in value if v not in old)
            changes.append((name, (("removed", removed), ("added", added)) if removed or added else ()))
        else:
            changes.append((name, ((None, old), (None, value))))
    if not changes:
        return "the same names, other content (e.g. another video or image file behind them)"
    strip = _folder(v for _, parts in changes for _, value in parts
                    for v in (value if isinstance(value, tuple) else (value,)))
    parts = []
    for name, pair in changes:
        if not pair:
            parts.append(f"{name}: the same, in another order")
        elif pair[0][0] is None:
            parts.append(f"{name}: {_text(pair[0][1], strip)} -> {_text(pair[1][1], strip)}")
        else:
            parts.append(f"{name}: " + "; ".join(f"{what} {_text(items, strip)}"
                                                 for what, items in pair if items))
    return "; ".join(parts) + (f" (in {strip})" if strip else "")


# --- the check ---------------------------------------------------------------------------

class CheckShown(beam.PTransform):
    """Answers -> {MAIN: the payloads of those whose worker saw what this build shows,
    REJECTS: stale_answer (and `missing_reason`) rejects at stage `stage`, level `level`}.

    `now`: (task id, TaskView) of the tasks as this build shows them; `then`: the same
    read from the release the tasks were exported in (route 2; None: none named);
    `route`: the config key of route 2, named in a reject's detail. Joined by task id
    (CoGroupByKey): no worker holds all tasks. Counts only its rejects (the caller counts
    its answers in and out)."""

    def __init__(self, stage: str, level: str, now, then=None,
                 missing_reason: str = reasons.STALE_ANSWER, route: str = "",
                 ids_name_content: bool = False):
        super().__init__()
        self._fn = _CheckShownFn(stage, level, missing_reason, route, ids_name_content,
                                 then is not None)
        self._now, self._then = now, then

    def expand(self, answers):
        groups = {"answers": answers | "By task" >> beam.Map(lambda a: (a.task, a)),
                  "now": self._now}
        if self._then is not None:
            groups["then"] = self._then
        return groups | "Join tasks" >> beam.CoGroupByKey() | "Check" >> stage_pardo(self._fn)


class _CheckShownFn(StageFn):
    counts_in = counts_out = False

    def __init__(self, stage: str, level: str, missing_reason: str, route: str,
                 ids_name_content: bool, has_then: bool):
        self.stage, self.level = stage, level
        self._missing, self._by_id, self._has_then = missing_reason, ids_name_content, has_then
        self._route = route or "the tasks release"

    def judge(self, joined):
        task, groups = joined
        now = _one(task, groups["now"], "this build")
        then = _one(task, groups.get("then", ()), self._route)
        for answer in groups["answers"]:
            problem = self.problem(task, answer.evidence, now, then)
            if problem is None:
                yield answer.payload
            else:
                yield self.reject(problem[0], **dict(answer.reject, detail=problem[1]))

    def problem(self, task: str, evidence: Evidence, now: Optional[TaskView],
                then: Optional[TaskView]) -> Optional[Tuple[str, str]]:
        return judge(task, evidence, now, then, missing_reason=self._missing, route=self._route,
                     has_then=self._has_then, ids_name_content=self._by_id)


def judge(task: str, evidence: Evidence, now: Optional[TaskView], then: Optional[TaskView] = None,
          missing_reason: str = reasons.STALE_ANSWER, route: str = "the tasks release",
          has_then: bool = False, ids_name_content: bool = False) -> Optional[Tuple[str, str]]:
    """None when an answer stands, else (reason, detail). `evidence`: what the answer row
    says its worker saw; `now`: the task as this build shows it (None: not at all);
    `then`: as the tasks release `route` lists it (None: not listed, or `has_then` False:
    no release named). The row's own evidence comes first; the tasks release stands in
    for a row without any."""
    seen, seen_labels, how = evidence.fingerprint, evidence.labels, "as its row says"
    if not seen and then is not None:
        seen, seen_labels, how = then.fingerprint, then.labels, f"as {route} lists it"
    elif seen and then is not None and then.fingerprint == seen and not seen_labels:
        seen_labels = then.labels
    if now is None:
        if seen:
            return reasons.STALE_ANSWER, (f"this build shows no task {task}; the worker "
                                          f"answered it as another build showed it ({how})")
        return missing_reason, f"this build shows no task {task}"
    if not seen:
        if ids_name_content:   # the id is a digest of what the task shows
            return None
        why = f"{route} does not list task {task}" if has_then else f"{route} is not set"
        return reasons.STALE_ANSWER, (f"nothing shows what the worker saw: the row has no "
                                      f"{FINGERPRINT} and {why}")
    if seen != now.fingerprint:
        return reasons.STALE_ANSWER, (f"task {task} changed since the worker saw it ({how}): "
                                      + change_detail(seen_labels, now.labels))
    return None


def _one(task: str, views: Iterable[TaskView], where: str) -> Optional[TaskView]:
    """The one view of a task; two different ones under one id is a bug upstream."""
    distinct = sorted(set(views))
    if len(distinct) > 1:
        raise ValueError(f"task {task} shows two different things in {where}: task ids must be unique")
    return distinct[0] if distinct else None


# --- route 2: the task files of an earlier release --------------------------------------

class ReadTaskViews(beam.PTransform):
    """An earlier release's task file(s) (JSON Lines) -> (task id, TaskView). `labels_of`
    reads a task row's labels (the benchmark's). Checked whole by check_task_release
    before any work, so every line here is a task row with its fingerprint."""

    def __init__(self, paths: Sequence[str], id_column: str, labels_of: Callable[[Mapping], Mapping]):
        super().__init__()
        self._paths, self._id, self._labels_of = list(paths), id_column, labels_of

    def expand(self, p):
        id_column, labels_of = self._id, self._labels_of

        def keyed(line):
            row = parse_json_object(line)
            return str(row[id_column]), TaskView(row[FINGERPRINT], labels(labels_of(row)))

        return p | "Read tasks" >> ReadNumberedLines(self._paths) | "Views" >> beam.Map(keyed)


def check_task_release(folder: str, benchmark: str, task_files: Sequence[str],
                       id_column: str) -> List[str]:
    """The paths of `task_files` (relative to the release `folder`) once they are known
    to be task files with fingerprints of a release of `benchmark`; raises InputError
    saying what is wrong otherwise (the caller names its config key)."""
    manifest = FileSystems.join(folder, MANIFEST)
    if not FileSystems.exists(manifest):
        raise InputError(f"{folder} is not a release folder (no {MANIFEST}): name the "
                         f"version folder the tasks were exported in, e.g. releases/{benchmark}/1.0.0")
    with FileSystems.open(manifest, compression_type="uncompressed") as f:
        try:
            named = json.loads(f.read().decode("utf-8")).get("benchmark")
        except (ValueError, AttributeError):
            raise InputError(f"{manifest} is not a release manifest (not a JSON object)") from None
    if named != benchmark:
        raise InputError(f"{folder} is a release of {named!r}, not {benchmark!r}")
    paths = []
    for relative in task_files:
        path = FileSystems.join(folder, *relative.split("/"))
        if not FileSystems.exists(path):
            raise InputError(f"{folder} has no {relative}: not the release these answers' tasks "
                             "were exported in")
        for line in read_numbered_lines(path):
            row = parse_json_object(line) if line.error is None else (None, line.error)
            if not isinstance(row, dict) or not str(row.get(id_column, "")).strip():
                raise InputError(f"{line.where}: not a task row with {id_column}")
            if not str(row.get(FINGERPRINT, "")).strip():
                raise InputError(
                    f"{line.where}: no {FINGERPRINT} (exported before tasks carried one): build "
                    "that release's config again under a new version with this code (the same "
                    "config and seed export the same tasks) and name that folder")
        paths.append(path)
    return paths


def check_evidence(answers: str, answers_key: str, release: Optional[str], release_key: str,
                   benchmark: str, task_files: Sequence[str], id_column: str) -> None:
    """Before any work: the answer file(s) `answers` can show what their workers saw.

    With `release` (route 2) its task files must be usable (check_task_release). Without
    it, every file must have the task_fingerprint column (route 1): a file that has none
    could only give stale_answer rows, so it stops the build here, naming both keys.
    Raises InputError (one line, exit 2)."""
    if release:
        try:
            check_task_release(release, benchmark, task_files, id_column)
        except InputError as e:
            raise InputError(f"{release_key}: {e}") from None
        return
    from transforms.crowd.answer_files import files_without_column
    lacking = files_without_column(answers, FINGERPRINT)
    if lacking:
        raise InputError(
            f"{answers_key}: {lacking[0]} has no {FINGERPRINT} column and {release_key} is not "
            f"set, so nothing shows which tasks its workers saw: name the release whose "
            f"{task_files[0]} they answered (--set {release_key}=<release folder>)")
