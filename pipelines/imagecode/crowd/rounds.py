"""The crowd rounds of ImageCoDe as Beam stages: describe (§3.2), retrieve and keep (§3.3).

    sets -> MakeDescribeTasks -> WriteTasks            (to the crowdsourcing tool)
    describer file (+ describe tasks) -> ReadDescriptions -> MakeRetrieveTasks -> WriteTasks
    retriever file (+ retrieve tasks) -> ReadRetrievals
    {descriptions, retrievals, sets} -> ApplyKeepRule -> KeptDescription | Reject (+ judged)

An answer is read against the task it answers as this build shows it: one whose worker saw
other content (the set behind a name changed with a threshold, say) is a stale_answer
reject naming what changed, never re-attached (transforms/crowd/shown.py; the evidence
is the row's task_fingerprint, else the task files of `crowd.tasks_release`).

Formats, ids and the meaning of every index: records.py beside this file. Reading answer
files (whole-file checks, bad rows, runaway quotes): transforms/crowd/answer_files.py; counting
rows, per-row rejects and dropping duplicate rows: transforms/crowd/answer_rows.py. Every random
choice is a hash of (seed, key) (transforms.core.sampling.priority), never arrival order.
Counters: stage "describe" (levels set, line) and stage "retrieve" (levels line, task,
description, retrieval); each level reconciles: in = out + rejected.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from typing import Dict, List, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.imagecode import reasons
from pipelines.imagecode.crowd.records import (DESCRIBE_TASK_COLUMNS, DESCRIPTION_COLUMNS, IMAGE_COLUMNS,
                                               MIN_CORRECT, RETRIEVAL_COLUMNS,
                                               RETRIEVE_TASK_COLUMNS, RETRIEVERS, SET_SIZE,
                                               TARGETS_PER_SET, WORKER, AnnotationSet, DescribeTask,
                                               Description, JudgedDescription, KeptDescription,
                                               Retrieval, RetrieveTask, describe_row_labels,
                                               description_id, in_canonical_order,
                                               retrieve_row_labels)
from transforms.core.sampling import priority
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo
from transforms.crowd.answer_rows import (ReadAnswerRows, RowProblem, Shown, answer_patterns, cell_text,
                                          whole_number)
from transforms.crowd.labelstudio import Ask, Items, RoundLayout
from transforms.crowd.task_files import WriteTaskFiles

JUDGED = "judged"   # ApplyKeepRule's third output: every judged description (for agreement)


# --- seeded choices ---------------------------------------------------------------------

def choose_targets(seed: int, set_name: str, n_images: int = SET_SIZE,
                   k: int = TARGETS_PER_SET) -> Tuple[int, ...]:
    """k distinct canonical indices: those of lowest priority(seed, set/index)."""
    ranked = sorted(range(n_images), key=lambda i: priority(seed, f"target/{set_name}/{i}"))
    return tuple(sorted(ranked[:k]))


def shown_order(seed: int, key: str, is_video: bool, n_images: int = SET_SIZE) -> Tuple[int, ...]:
    """Video sets keep temporal (canonical) order; static sets a seeded shuffle per task."""
    if is_video:
        return tuple(range(n_images))
    return tuple(sorted(range(n_images), key=lambda i: priority(seed, f"order/{key}/{i}")))


# --- describe tasks ---------------------------------------------------------------------

class MakeDescribeTasks(beam.PTransform):
    """AnnotationSet -> DescribeTask (targets_per_set per set) | Reject (level "set")."""

    def __init__(self, seed: int, targets_per_set: int = TARGETS_PER_SET):
        super().__init__()
        self._seed, self._k = seed, targets_per_set

    def expand(self, sets):
        return sets | stage_pardo(_DescribeTasksFn(self._seed, self._k))


class _DescribeTasksFn(StageFn):
    """A set in; out once, as its targets' tasks (counted as task.created)."""
    stage, level = "describe", "set"
    counts_out = False  # one set gives several tasks: counted out once, below

    def __init__(self, seed, k):
        self._seed, self._k = seed, k

    def judge(self, s: AnnotationSet):
        reject = dict(item_id=s.set_name, source=s.source, split=s.split)
        if len(s.image_paths) != SET_SIZE:
            yield self.reject(reasons.WRONG_SET_SIZE, detail=f"{len(s.image_paths)} images", **reject)
            return
        try:  # indices only mean something over the canonical order
            tasks = describe_tasks(s, self._seed, self._k)
        except ValueError as e:
            yield self.reject(reasons.BAD_FIELD, detail=str(e), **reject)
            return
        self.counts.count_out(level="set")
        for task in tasks:
            self.counts.note("task.created")
            yield task


def describe_tasks(s: AnnotationSet, seed: int, k: int = TARGETS_PER_SET) -> List[DescribeTask]:
    """The describe tasks of one set: its k seeded targets, each shown in its own order.
    Raises ValueError for paths that have no canonical order or no content id each."""
    paths, ids = in_canonical_order(s.image_paths, s.image_ids)
    tasks = []
    for target in choose_targets(seed, s.set_name, len(paths), k):
        task_id = f"{s.set_name}#{target}"
        tasks.append(DescribeTask(task_id, s.set_name, target,
                                  shown_order(seed, task_id, s.is_video, len(paths)),
                                  s.split, s.is_video, paths, ids))
    return tasks


# --- exports ----------------------------------------------------------------------------

def task_row(task) -> dict:
    """A DescribeTask or RetrieveTask as one export row (native JSON types)."""
    shown = [task.image_paths[i] for i in task.shown_order]
    images = {f"image_{k}": path for k, path in enumerate(shown)}
    common = dict(set_name=task.set_name, split=task.split, is_video=task.is_video,
                  shown_order=list(task.shown_order), **images,
                  task_fingerprint=task.view().fingerprint)
    if isinstance(task, DescribeTask):
        return dict(task_id=task.task_id, target_index=task.target_index,
                    target_position=task.shown_order.index(task.target_index),
                    target_image=task.image_paths[task.target_index], **common)
    return dict(task_id=task.task_id, description_id=task.description_id,
                assignments=task.assignments, text=task.text, **common)


# The rounds as Label Studio projects (transforms/crowd/labelstudio.py). Describe: the
# target, then the set in the order shown; the description typed in a TextArea.
DESCRIBE_LABELSTUDIO = RoundLayout(images=("target_image",) + IMAGE_COLUMNS, texts=(), asks=(Ask("text"),),
                                   instructions="Describe the first image so that it can be told from the others.")
# Retrieve: the description and the set in the order shown; the worker picks an image by
# its place on the page, which the export maps through shown_order to the canonical
# index the round reads, as the worker page does.
RETRIEVE_LABELSTUDIO = RoundLayout(
    images=(), texts=("text",),
    items=Items(len(IMAGE_COLUMNS), images=("image_{k}",), title="Image {n}"),
    asks=(Ask("guessed_index", tuple((f"Image {k + 1}", str(k)) for k in range(len(IMAGE_COLUMNS))),
              place_in="shown_order", title="Which image does the description describe?"),),
    instructions="Read the description, then pick the image it describes.")


class WriteTasks(beam.PTransform):
    """Tasks -> `<prefix>.csv` (header row) and `<prefix>.jsonl`, rows in task id order
    (transforms/crowd/task_files.py: the same bytes on any runner and any number of
    workers). Returns the written file names."""

    def __init__(self, path_prefix: str, task_type=DescribeTask):
        super().__init__()
        self._folder, self._name = FileSystems.split(path_prefix.rstrip("/"))
        columns = DESCRIBE_TASK_COLUMNS if task_type is DescribeTask else RETRIEVE_TASK_COLUMNS
        self._columns = {f"{self._name}.csv": columns, f"{self._name}.jsonl": columns}

    def expand(self, tasks):
        names = tuple(self._columns)
        return (tasks | "Row" >> beam.Map(lambda t: (t.task_id, task_row(t)))
                | "One per file" >> beam.FlatMap(lambda keyed: [(name, keyed) for name in names])
                | "Write" >> WriteTaskFiles(self._folder, columns=self._columns))


# --- ingestion --------------------------------------------------------------------------

def _index(row: dict, column: str, n_images: int):
    """(index, None) or (None, (reason, detail)) for an index column of a row."""
    value = whole_number(row[column])
    if value is None:
        shown = row[column][:40] if isinstance(row[column], str) else row[column]
        return None, (reasons.BAD_FIELD, f"{column}={shown!r} is not an integer")
    if not 0 <= value < n_images:
        return None, (reasons.INDEX_OUT_OF_RANGE, f"{column}={value} outside 0..{n_images - 1}")
    return value, None


def _in_known_set(build, row: dict, sets: Dict[str, tuple]):
    """A row's (key, record), or a RowProblem: its set must be in the rounds, then `build`
    reads it against that set."""
    known = sets.get(cell_text(row, "set_name"))
    if known is None:
        return RowProblem(reasons.UNKNOWN_SET, cell_text(row, "set_name"))
    keyed, error = build(row, known)
    return RowProblem(*error) if error is not None else keyed


def _set_fields(row, sets: Dict[str, tuple]) -> dict:
    """A bad row's Reject names the split and source of its set (none when unknown)."""
    known = sets.get(cell_text(row, "set_name")) if row is not None else None
    return {"split": known[0], "source": known[2]} if known else {}


def _placed(record, path: str, line: int):
    """A Description or Retrieval with the row it was read from (its keep-rule rejects name it)."""
    return dataclasses.replace(record, file=path, line=line)


def _split_of(record) -> dict:
    """A duplicate row's Reject names its record's split."""
    return {"split": record.split}


def _build_description(row: dict, known: tuple):
    split, n_images, _ = known
    target, error = _index(row, "target_index", n_images)
    worker = cell_text(row, "worker")
    if error is None and "#" in worker:
        error = (reasons.BAD_FIELD, f"worker {worker!r} contains '#'")
    if error is not None:
        return None, error
    set_name = cell_text(row, "set_name")
    d = Description(description_id(set_name, target, worker), set_name, target,
                    cell_text(row, "text"), worker, split)
    return (d.description_id, d), None  # keyed by what makes a duplicate


def _build_retrieval(row: dict, known: tuple):
    split, n_images, _ = known
    guess, error = _index(row, "guessed_index", n_images)
    if error is not None:
        return None, error
    r = Retrieval(cell_text(row, "set_name"), cell_text(row, "description_id"),
                  cell_text(row, "worker"), guess, split)
    return ((r.description_id, r.worker), r), None


def _set_info(sets):
    """name -> (split, number of images, source): all that ingestion needs of a set."""
    return beam.pvalue.AsDict(sets | "Set info" >> beam.Map(
        lambda s: (s.set_name, (s.split, len(s.image_paths), s.source))))


def _description_task(d: Description) -> str:
    return f"{d.set_name}#{d.target_index}"     # DescribeTask.task_id


def _retrieval_task(answer) -> str:
    """The retrieve task of a Description, or of a Retrieval of it."""
    return f"retrieve#{answer.description_id}"   # RetrieveTask.task_id


def task_views(tasks):
    """DescribeTask or RetrieveTask -> (task id, what it shows), for CheckShown."""
    return tasks | "What each task shows" >> beam.Map(lambda t: (t.task_id, t.view()))


class _ReadCrowdRows(beam.PTransform):
    """The answer files of one round (a file or glob, or a list of them), read against the
    sets in the rounds and the tasks this build shows (`tasks`); `then`: (task id,
    TaskView) of the release the tasks were exported in (route 2), or None."""

    def __init__(self, paths, known_sets, tasks, then, stage, columns, build, duplicate_reason,
                 task_of, labels_of, missing_reason, route):
        super().__init__()
        self._rows = dict(paths=answer_patterns(paths), stage=stage, columns=columns,
                          check=functools.partial(_in_known_set, build),
                          duplicate_reason=duplicate_reason, problem_fields=_set_fields,
                          duplicate_fields=_split_of, worker=WORKER, placed=_placed)
        self._sets, self._tasks, self._then = known_sets, tasks, then
        self._shown = dict(task_of=task_of, labels_of=labels_of, missing_reason=missing_reason,
                           route=route)

    def expand(self, p):
        shown = Shown(now=task_views(self._tasks), then=self._then, **self._shown)
        return p | "Rows" >> ReadAnswerRows(**self._rows, context=_set_info(self._sets), shown=shown)


class ReadDescriptions(_ReadCrowdRows):
    """Describer output (CSV or JSONL by extension; a glob is fine) -> Description | Reject.

    `known_sets`: the PCollection of AnnotationSets in the rounds (a side input);
    `tasks`: the DescribeTasks of this build; `then`: the describe tasks' views of the
    release named by crowd.tasks_release.descriptions (ReadTaskViews), or None.
    Returns {MAIN: descriptions, REJECTS: rejects}. Stage "describe", level "line".
    """

    def __init__(self, path: str, known_sets, tasks, then=None):
        super().__init__(path, known_sets, tasks, then, "describe", DESCRIPTION_COLUMNS,
                         _build_description, reasons.DUPLICATE_DESCRIPTION, _description_task,
                         describe_row_labels, reasons.STALE_ANSWER, "crowd.tasks_release.descriptions")


class ReadRetrievals(_ReadCrowdRows):
    """Retriever output -> Retrieval | Reject; like ReadDescriptions, stage "retrieve",
    against this build's RetrieveTasks (a retrieval of a description this build has no
    retrieve task for is unknown_description)."""

    def __init__(self, path: str, known_sets, tasks, then=None):
        super().__init__(path, known_sets, tasks, then, "retrieve", RETRIEVAL_COLUMNS,
                         _build_retrieval, reasons.DUPLICATE_RETRIEVAL, _retrieval_task,
                         retrieve_row_labels, reasons.UNKNOWN_DESCRIPTION,
                         "crowd.tasks_release.retrievals")


# --- retrieve tasks ---------------------------------------------------------------------

class MakeRetrieveTasks(beam.PTransform):
    """Description -> RetrieveTask (one per description) | Reject (level "task").

    Joined with `known_sets` by set name (CoGroupByKey), so no worker holds all sets.
    """

    def __init__(self, seed: int, known_sets, retrievers: Dict[str, int] = RETRIEVERS):
        super().__init__()
        self._seed, self._sets, self._retrievers = seed, known_sets, dict(retrievers)

    def expand(self, descriptions):
        return ({"sets": self._sets | "Set by name" >> beam.Map(lambda s: (s.set_name, s)),
                 "descriptions": descriptions | "By set" >> beam.Map(lambda d: (d.set_name, d))}
                | beam.CoGroupByKey()
                | stage_pardo(_RetrieveTasksFn(self._seed, self._retrievers)))


class _RetrieveTasksFn(StageFn):
    """A set's descriptions in (level "task", one each), a task per description out."""
    stage, level = "retrieve", "task"
    counts_in = False  # the element is a set's group: each description is counted in

    def __init__(self, seed: int, retrievers: Dict[str, int]):
        self._seed, self._retrievers = seed, retrievers

    def judge(self, kv):
        _, grouped = kv
        sets, described = grouped["sets"], grouped["descriptions"]
        for d in described:
            self.counts.seen(level="task")
            if not sets:
                yield self.reject(reasons.UNKNOWN_SET, d.description_id, split=d.split)
                continue
            yield retrieve_task(d, sets[0], self._seed, self._retrievers)


def retrieve_task(d: Description, s: AnnotationSet, seed: int,
                  retrievers: Dict[str, int] = RETRIEVERS) -> RetrieveTask:
    """The retrieve task of one description of set `s` (in its own seeded order)."""
    task_id = _retrieval_task(d)
    return RetrieveTask(task_id, d.description_id, s.set_name, s.split, s.is_video,
                        retrievers.get(s.split, 1), d.text,
                        shown_order(seed, task_id, s.is_video, len(s.image_paths)),
                        s.image_paths, s.image_ids)


# --- keep rule --------------------------------------------------------------------------

def keep_decision(split: str, correct: int, retrievers: int, min_correct: Dict[str, int] = MIN_CORRECT):
    """None to keep, else the reject reason.

    §3.3: train keeps a description its (single) retriever found; valid/test keep one
    that at least 2 of its 3 retrievers found. The rule counts correct answers, so a
    valid/test description with only 2 retrievals needs both.
    """
    if retrievers == 0:
        return reasons.NO_RETRIEVAL
    if split not in min_correct:
        return reasons.BAD_FIELD
    if correct >= min_correct[split]:
        return None
    return reasons.RETRIEVER_WRONG if split == "train" else reasons.TOO_FEW_CORRECT


class ApplyKeepRule(beam.PTransform):
    """{"descriptions", "retrievals", "sets"} -> KeptDescription | Reject | JudgedDescription.

    Joins descriptions to their set (CoGroupByKey on set name), then to their
    retrievals (CoGroupByKey on description id). Retrievals that cannot count (unknown
    description, another set, the describer's own) are rejected at level "retrieval";
    the others decide the description (level "description") by `keep_decision`.
    Returns {MAIN: kept, REJECTS: rejects, JUDGED: every description with a retrieval}.
    """

    def __init__(self, min_correct: Dict[str, int] = MIN_CORRECT):
        super().__init__()
        self._min_correct = dict(min_correct)

    def expand(self, inputs):
        joined = ({"sets": inputs["sets"] | "Set by name" >> beam.Map(lambda s: (s.set_name, s)),
                   "descriptions": inputs["descriptions"] | "By set" >> beam.Map(lambda d: (d.set_name, d))}
                  | "Join sets" >> beam.CoGroupByKey()
                  | "With set" >> stage_pardo(_WithSetFn()))
        decided = ({"described": joined[MAIN],
                    "retrievals": inputs["retrievals"] | "By description" >> beam.Map(
                        lambda r: (r.description_id, r))}
                   | "Join retrievals" >> beam.CoGroupByKey()
                   | "Decide" >> stage_pardo(_DecideFn(self._min_correct), outputs=(JUDGED,)))
        rejects = (joined[REJECTS], decided[REJECTS]) | "All rejects" >> beam.Flatten()
        return {MAIN: decided[MAIN], REJECTS: rejects, JUDGED: decided[JUDGED]}


class _WithSetFn(StageFn):
    """A set's descriptions, each keyed by its id with its set; one of no known set is
    counted in and rejected here (the rest are counted in by _DecideFn)."""
    stage, level = "retrieve", "description"
    counts_in = counts_out = False

    def judge(self, kv):
        _, grouped = kv
        sets = grouped["sets"]
        for d in grouped["descriptions"]:
            if sets:
                yield d.description_id, (d, sets[0])
            else:  # ingestion already checks this; kept so nothing can vanish here
                self.counts.seen(level="description")
                yield self.reject(reasons.UNKNOWN_SET, d.description_id, split=d.split)


class _DecideFn(StageFn):
    """A description's retrievals (level "retrieval") decide it (level "description")."""
    stage, level = "retrieve", "description"
    counts_in = False  # a description is counted in once its retrievals are sorted out

    def __init__(self, min_correct):
        self._min_correct = min_correct

    def judge(self, kv):
        desc_id, grouped = kv
        described, retrievals = grouped["described"], sorted(grouped["retrievals"], key=lambda r: r.worker)
        self.counts.seen(len(retrievals), level="retrieval")
        if not described:
            for r in retrievals:
                yield self._reject_retrieval(r, reasons.UNKNOWN_DESCRIPTION, "")
            return
        d, s = described[0]  # ingestion drops duplicate ids, so there is one
        used = []
        for r in retrievals:
            if r.set_name != d.set_name:
                yield self._reject_retrieval(r, reasons.SET_MISMATCH, f"description is of {d.set_name}")
            elif r.worker == d.worker:
                yield self._reject_retrieval(r, reasons.SELF_RETRIEVAL, "")
            else:
                self.counts.count_out(level="retrieval")
                used.append(r)
        correct = sum(r.guessed_index == d.target_index for r in used)
        self.counts.seen(level="description")
        reason = keep_decision(s.split, correct, len(used), self._min_correct)
        if used:
            yield beam.pvalue.TaggedOutput(JUDGED, JudgedDescription(
                desc_id, s.split, s.is_video, d.target_index,
                tuple((r.worker, r.guessed_index) for r in used), kept=reason is None))
        if reason is not None:   # at the describer's row: the judgement of their answer
            yield self.reject(reason, desc_id, source=s.source, split=s.split, file=d.file, line=d.line,
                              detail=keep_rule_detail(d, [r.guessed_index for r in used], correct))
            return
        yield KeptDescription(
            desc_id, d.set_name, d.target_index, d.text, s.split, s.source, s.is_video,
            s.image_paths, len(used), correct, d.worker)

    def _reject_retrieval(self, r: Retrieval, reason: str, detail: str):
        return self.reject(reason, f"{r.description_id}@{r.worker}", level="retrieval",
                           split=r.split, detail=detail, file=r.file, line=r.line)


SHOWN_TEXT = 1000   # characters of a description a reject's detail quotes (the longest public one has 710)


def keep_rule_detail(d: Description, guesses: List[int], correct: int) -> str:
    """What a keep-rule reject says: how many retrievers found the target, each one's
    guess (canonical indices, in retriever order), and the description itself, quoted
    (a person judging the reject reads what was written)."""
    text = d.text if len(d.text) <= SHOWN_TEXT else d.text[:SHOWN_TEXT] + "…"
    said = f"{correct} of {len(guesses)} retrievers found target {d.target_index}"
    if guesses:
        said += f"; guesses {', '.join(map(str, guesses))}"
    return f"{said}; description {json.dumps(text, ensure_ascii=False)}"
