"""Records and file formats of the crowd rounds (ImageCoDe §3.2 describe, §3.3 retrieve).

Indices
-------
Every index in these records and files is a **canonical index**: the position of an
image in its set's canonical order, i.e. ``compat/image-sets/<set>/img<n>.jpg`` sorted
by ``n`` (temporal order for video sets, where ``n`` is the frame number; the stored
order for static sets). Workers may *see* the images in another order: each task
records ``shown_order``, a permutation of 0..9 where ``shown_order[k]`` is the canonical
index of the image shown at position ``k`` (static sets: seeded random order; video
sets: the identity, §3.2). A crowdsourcing tool must map what a worker clicked back
through ``shown_order`` before it returns ``target_index`` or ``guessed_index``.

Ids
---
* describe task: ``<set_name>#<target_index>``
* description:   ``<set_name>#<target_index>#<worker>`` (stable: one description per
  worker and target; a second one is a duplicate)
* retrieve task: ``retrieve#<description_id>``
Set names never contain ``#`` (schemas/names.py keeps them to ``[A-Za-z0-9._-]``).

Exports (CSV with a header row, and JSON Lines; same columns in both; rows in task id
order)
-------------------------------------------------------------------
describe tasks (DESCRIBE_TASK_COLUMNS)::

    task_id, set_name, split, is_video, target_index, target_position, target_image,
    shown_order, image_0 .. image_9, task_fingerprint

retrieve tasks (RETRIEVE_TASK_COLUMNS; no target, the retriever must find it)::

    task_id, description_id, set_name, split, is_video, assignments, text,
    shown_order, image_0 .. image_9, task_fingerprint

``image_k`` is the path (relative to the release root) of the image shown at position k;
``target_position`` the position where the target is shown; ``assignments`` how many
retrievers the task needs (train 1, valid/test 3, §3.3). In CSV, ``is_video`` is
``true``/``false`` and ``shown_order`` a JSON list; in JSON Lines they are native.

``task_fingerprint`` is the digest of what the task shows (transforms/crowd/shown.py), in
content terms: the images in shown order and the target (describe), the images in shown
order and the text (retrieve), each image as its content identity, ``video:<sha256 of the
video file>#frame<n>`` for a video frame and ``image:<sha256 of the file>`` for a static
picture, never its path. A set name can hold other frames after a rebuild with another
threshold; the fingerprint cannot.

Ingestion (CSV with a header row, or JSON Lines; extra columns are ignored)
--------------------------------------------------------------------------
describer output (DESCRIPTION_COLUMNS)::  set_name, target_index, text, worker
retriever output (RETRIEVAL_COLUMNS)::    set_name, description_id, worker, guessed_index

and, carried through from the task row as crowdsourcing platforms do, ``task_fingerprint``
(with the task's ``target_image`` and ``image_k`` columns, a stale answer's detail names
what the worker saw). A row without it is checked against the tasks of the release named
by ``crowd.tasks_release.<descriptions|retrievals>`` instead; a row whose worker saw
something else than this build shows is ``stale_answer`` (rounds.py).

A file that cannot be used as a whole (no CSV header column or JSON Lines field of these,
not UTF-8, no rows) stops the build before any work (transforms/crowd/answer_files.py). A row
that cannot be parsed (including a runaway CSV quote, which costs only its own row), is
not UTF-8, lacks a column, names an unknown set or has an index outside 0..9 goes to
rejects/ with its reason (schemas/reasons.py), file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence, Tuple

from transforms.crowd.shown import FINGERPRINT, TaskView, view

SET_SIZE = 10                 # images per set (§3.1)
TARGETS_PER_SET = 3           # targets described per set (§3.2)
RETRIEVERS = {"train": 1, "valid": 3, "test": 3}   # retrievers per description (§3.3)
MIN_CORRECT = {"train": 1, "valid": 2, "test": 2}  # of them, how many must find the target

IMAGE_COLUMNS = tuple(f"image_{k}" for k in range(SET_SIZE))
DESCRIBE_TASK_COLUMNS = ("task_id", "set_name", "split", "is_video", "target_index",
                         "target_position", "target_image", "shown_order") + IMAGE_COLUMNS + (
                         FINGERPRINT,)
RETRIEVE_TASK_COLUMNS = ("task_id", "description_id", "set_name", "split", "is_video",
                         "assignments", "text", "shown_order") + IMAGE_COLUMNS + (FINGERPRINT,)
DESCRIBE_TASKS, RETRIEVE_TASKS = "describe_tasks", "retrieve_tasks"   # crowd/<name>.{csv,jsonl}
WORKER = "worker"   # the worker column of both rounds: MTurk's WorkerId, Label Studio's annotator
DESCRIPTION_COLUMNS = ("set_name", "target_index", "text", WORKER)
RETRIEVAL_COLUMNS = ("set_name", "description_id", WORKER, "guessed_index")

_IMG_NUMBER = re.compile(r"img(\d+)\.[A-Za-z]+$")


def canonical_order(image_paths: Iterable[str]) -> Tuple[str, ...]:
    """Paths sorted by the number after "img": the order every index refers to."""
    def number(path: str) -> int:
        m = _IMG_NUMBER.search(path)
        if m is None:
            raise ValueError(f"not an img<n> path: {path!r}")
        return int(m.group(1))
    return tuple(sorted(image_paths, key=number))


def description_id(set_name: str, target_index: int, worker: str) -> str:
    return f"{set_name}#{target_index}#{worker}"


def frame_identity(video_sha256: str, frame_number: int) -> str:
    """The content identity of a video frame: the video's bytes and the frame number."""
    return f"video:{video_sha256}#frame{int(frame_number)}"


def image_identity(content_sha256: str) -> str:
    """The content identity of a still image: its file's bytes."""
    return f"image:{content_sha256}"


def in_canonical_order(image_paths: Sequence[str], image_ids: Sequence[str]):
    """(paths, content ids) both in the canonical order of the paths."""
    if len(image_ids) != len(image_paths):
        raise ValueError(f"{len(image_paths)} images but {len(image_ids)} content ids")
    by_path = dict(zip(image_paths, image_ids))
    paths = canonical_order(image_paths)
    return paths, tuple(by_path[p] for p in paths)


@dataclass(frozen=True)
class AnnotationSet:
    """A set entering the rounds; `image_paths` in canonical order and `image_ids` their
    content identities (frame_identity / image_identity), in the same order."""
    set_name: str
    source: str
    split: str
    is_video: bool
    image_paths: Tuple[str, ...]
    image_ids: Tuple[str, ...]

    @classmethod
    def from_frame_set(cls, frame_set) -> "AnnotationSet":
        """A released video FrameSet (pipelines.imagecode.records) as a set for the rounds."""
        if not frame_set.video_sha256:   # the manifest stage hashes every video it passes on
            raise ValueError(f"{frame_set.set_name}: no video content hash, so its frames have no identity")
        ids = [frame_identity(frame_set.video_sha256, n) for n in frame_set.frame_indices]
        paths, ids = in_canonical_order(frame_set.image_paths, ids)
        return cls(frame_set.set_name, frame_set.source, frame_set.split, True, paths, ids)

    @classmethod
    def from_static_row(cls, row: dict) -> "AnnotationSet":
        """A published static-set row (static/release.py) as a set for the rounds."""
        ids = [image_identity(sha) for sha in row["image_sha256s"]]
        paths, ids = in_canonical_order(row["image_paths"], ids)
        return cls(row["set_name"], row["source"], row["split"], False, paths, ids)


@dataclass(frozen=True)
class DescribeTask:
    """One target of one set to describe; `image_paths` and `image_ids` in canonical order."""
    task_id: str
    set_name: str
    target_index: int
    shown_order: Tuple[int, ...]
    split: str
    is_video: bool
    image_paths: Tuple[str, ...]
    image_ids: Tuple[str, ...]

    def view(self) -> TaskView:
        """What the describer sees: the images in shown order, the target marked."""
        return view({"images": [self.image_ids[i] for i in self.shown_order],
                     "target": self.image_ids[self.target_index]},
                    {"target": self.image_paths[self.target_index],
                     "images": [self.image_paths[i] for i in self.shown_order]})


@dataclass(frozen=True)
class Description:
    """One describer answer. `split` is filled from the set at ingestion; `file` and
    `line` say where it was read (what the keep rule's reject names, for approvals)."""
    description_id: str
    set_name: str
    target_index: int
    text: str
    worker: str
    split: str = ""
    file: str = ""
    line: int = 0


@dataclass(frozen=True)
class RetrieveTask:
    """One description to validate by retrieval; carries no answer."""
    task_id: str
    description_id: str
    set_name: str
    split: str
    is_video: bool
    assignments: int
    text: str
    shown_order: Tuple[int, ...]
    image_paths: Tuple[str, ...]   # canonical order
    image_ids: Tuple[str, ...]     # canonical order

    def view(self) -> TaskView:
        """What the retriever sees: the images in shown order and the description."""
        return view({"images": [self.image_ids[i] for i in self.shown_order], "text": self.text},
                    {"images": [self.image_paths[i] for i in self.shown_order], "text": self.text})


def describe_row_labels(row: dict) -> dict:
    """The labels of a describe task row (an exported one, or an answer row carrying its
    columns): as DescribeTask.view names them."""
    return {"target": row["target_image"], "images": [row[c] for c in IMAGE_COLUMNS]}


def retrieve_row_labels(row: dict) -> dict:
    """The labels of a retrieve task row, as RetrieveTask.view names them."""
    return {"images": [row[c] for c in IMAGE_COLUMNS], "text": row["text"]}


@dataclass(frozen=True)
class Retrieval:
    """One retriever answer. `split` is filled from the set at ingestion; `file` and
    `line` say where it was read."""
    set_name: str
    description_id: str
    worker: str
    guessed_index: int
    split: str = ""
    file: str = ""
    line: int = 0


@dataclass(frozen=True)
class KeptDescription:
    """A description that passed the keep rule (§3.3): one release example."""
    description_id: str
    set_name: str
    target_index: int
    text: str
    split: str
    source: str
    is_video: bool
    image_paths: Tuple[str, ...]   # canonical order
    retrievers: int
    correct: int
    worker: str = ""               # the describer (seen/unseen worker analyses, App. C)


@dataclass(frozen=True)
class JudgedDescription:
    """A description with all its retrievals, kept or not: the unit of agreement (§4.1).

    `guesses` holds (retriever worker, guessed index) pairs, sorted by worker.
    """
    description_id: str
    split: str
    is_video: bool
    target_index: int
    guesses: Tuple[Tuple[str, int], ...]
    kept: bool
