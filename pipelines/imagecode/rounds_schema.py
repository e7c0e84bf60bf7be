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

Exports (CSV with a header row, and JSON Lines; same columns in both)
-------------------------------------------------------------------
describe tasks (DESCRIBE_TASK_COLUMNS)::

    task_id, set_name, split, is_video, target_index, target_position, target_image,
    shown_order, image_0 .. image_9

retrieve tasks (RETRIEVE_TASK_COLUMNS; no target, the retriever must find it)::

    task_id, description_id, set_name, split, is_video, assignments, text,
    shown_order, image_0 .. image_9

``image_k`` is the path (relative to the release root) of the image shown at position k;
``target_position`` the position where the target is shown; ``assignments`` how many
retrievers the task needs (train 1, valid/test 3, §3.3). In CSV, ``is_video`` is
``true``/``false`` and ``shown_order`` a JSON list; in JSON Lines they are native.

Ingestion (CSV with a header row, or JSON Lines; extra columns are ignored)
--------------------------------------------------------------------------
describer output (DESCRIPTION_COLUMNS)::  set_name, target_index, text, worker
retriever output (RETRIEVAL_COLUMNS)::    set_name, description_id, worker, guessed_index

A file that cannot be used as a whole (no CSV header column or JSON Lines field of these,
not UTF-8, no rows) stops the build before any work (transforms/crowd/answer_files.py). A row
that cannot be parsed (including a runaway CSV quote, which costs only its own row), is
not UTF-8, lacks a column, names an unknown set or has an index outside 0..9 goes to
rejects/ with its reason (schemas/reasons.py), file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Tuple

SET_SIZE = 10                 # images per set (§3.1)
TARGETS_PER_SET = 3           # targets described per set (§3.2)
RETRIEVERS = {"train": 1, "valid": 3, "test": 3}   # retrievers per description (§3.3)
MIN_CORRECT = {"train": 1, "valid": 2, "test": 2}  # of them, how many must find the target

IMAGE_COLUMNS = tuple(f"image_{k}" for k in range(SET_SIZE))
DESCRIBE_TASK_COLUMNS = ("task_id", "set_name", "split", "is_video", "target_index",
                         "target_position", "target_image", "shown_order") + IMAGE_COLUMNS
RETRIEVE_TASK_COLUMNS = ("task_id", "description_id", "set_name", "split", "is_video",
                         "assignments", "text", "shown_order") + IMAGE_COLUMNS
DESCRIPTION_COLUMNS = ("set_name", "target_index", "text", "worker")
RETRIEVAL_COLUMNS = ("set_name", "description_id", "worker", "guessed_index")

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


@dataclass(frozen=True)
class AnnotationSet:
    """A set entering the rounds; `image_paths` in canonical order."""
    set_name: str
    source: str
    split: str
    is_video: bool
    image_paths: Tuple[str, ...]

    @classmethod
    def from_frame_set(cls, frame_set) -> "AnnotationSet":
        """A released video FrameSet (schemas.records) as a set for the rounds."""
        return cls(frame_set.set_name, frame_set.source, frame_set.split, True,
                   canonical_order(frame_set.image_paths))


@dataclass(frozen=True)
class DescribeTask:
    """One target of one set to describe; `image_paths` in canonical order."""
    task_id: str
    set_name: str
    target_index: int
    shown_order: Tuple[int, ...]
    split: str
    is_video: bool
    image_paths: Tuple[str, ...]


@dataclass(frozen=True)
class Description:
    """One describer answer. `split` is filled from the set at ingestion."""
    description_id: str
    set_name: str
    target_index: int
    text: str
    worker: str
    split: str = ""


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


@dataclass(frozen=True)
class Retrieval:
    """One retriever answer. `split` is filled from the set at ingestion."""
    set_name: str
    description_id: str
    worker: str
    guessed_index: int
    split: str = ""


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
