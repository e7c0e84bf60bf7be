"""How a benchmark's tables look in the release explorer (pipelines/release/explorer/write.py).

A benchmark declares one `ExplorerView` per table a person would browse, in its
`Benchmark.explorer(plan)`; the explorer renders every row as a card (images as
thumbnails, text, answer choices, figures) and indexes it to be searched, filtered
and sorted: the key and texts are searched, a scalar figure with few distinct values is
a filter, a numeric one a range and a sort order (pipelines/release/explorer/index.py).
Columns are named as in the table's Parquet schema; a joined table's columns as
"<table>.<column>".

    ExplorerView("descriptions", "Descriptions", images=("image_paths",),
                 target="target_index", text=("description",),
                 figures=("retrievers", "correct", "set_name"))

An image value is a path relative to the release folder (compat/...), a local path, or
an id that `image_index` maps to a local path. Anything else (a COCO file name whose
image is not on this machine, a URL) is shown by its name: the explorer never fetches.
`image_links` names, per images column, a column with each image's URL (VSR's COCO
links, NLVR2's): shown as a link the person may follow, and in place of the image where
the images column is empty (NLVR2's released files give URLs only).

`compat` says where a row is in the original layout's files (compat/): the row view
links each entry it finds (pipelines/release/explorer/compat.py), e.g. NLVR2's

    Compat(("compat/*.json", "compat/balanced/*.json"), (("identifier", "identifier"),))

`Explorer` is what `Benchmark.explorer(plan)` returns: its views and, optionally, how to
picture a reject whose image is not in the release (ImageCoDe decodes a rejected
frame from its video).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union


@dataclass(frozen=True)
class Join:
    """Add the row of `table` whose `key` column equals this row's `on` column; its
    columns become "<table>.<column>" (e.g. FG's similar set of a caption's image)."""
    table: str
    on: str
    key: str


@dataclass(frozen=True)
class ImageIndex:
    """Image ids to local files: `table`'s `id` column to its `path` column."""
    table: str
    id: str
    path: str


@dataclass(frozen=True)
class Compat:
    """A row's entries in the release's compat/ files: in the files matching `files`
    (glob patterns relative to the release folder), every entry whose fields equal the
    row's columns, `match` being (entry field, row column) pairs. An entry is a line of a
    JSON-lines file, a row of a CSV file, an item of a JSON list, or a member of a JSON
    object, whose name is the field "" (ImageCoDe's sets, FG's images)."""
    files: Tuple[str, ...]
    match: Tuple[Tuple[str, str], ...]


@dataclass(frozen=True)
class RejectsOfRows:
    """Rejects that judged an answer about one row of the view's table show that row's
    images: a reject whose item id matches `item` (its first group the row's key, e.g. a
    rejected description `<set name>#<target>#<worker>` names its set) gets the row's
    images (the view's first images column), marked by `marks`, (label, pattern) pairs:
    the places in the list that a pattern's numbers in the reject's detail name ("target
    3", "guesses 5, 7"), the first pattern's framed as the target, the others' labelled."""
    item: str
    marks: Tuple[Tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ExplorerView:
    """One table as cards. Every column field is optional; a view with none of them shows
    the row's key and its scalar columns as figures (the default for undeclared tables)."""
    table: str
    title: str = ""
    images: Tuple[str, ...] = ()          # columns holding an image or a list of them, in order
    image_links: Tuple[str, ...] = ()     # per images column, the column of its URL(s), or ()
    # list columns with one value per image (a frame's score), each a column or (label, column)
    image_notes: Tuple[Union[str, Tuple[str, str]], ...] = ()
    target: Union[str, int, None] = None  # column (or fixed index) of the target image or choice
    text: Tuple[str, ...] = ()            # columns shown as text (a caption, a description)
    choices: str = ""                     # column: a list of texts offered as answers
    choice_notes: str = ""                # column: one label per choice (e.g. decoy type)
    figures: Tuple[str, ...] = ()         # columns shown as "name: value" (lists comma-joined)
    join: Tuple[Join, ...] = ()
    image_index: Optional[ImageIndex] = None
    compat: Optional[Compat] = None
    rejects_of_rows: Optional[RejectsOfRows] = None

    def __post_init__(self):
        if self.image_links and len(self.image_links) != len(self.images):
            raise ValueError(f"explorer view {self.table}: image_links needs one column per "
                             f"images column ({len(self.images)}), not {len(self.image_links)}")

    @property
    def label(self) -> str:
        return self.title or self.table


# reject rows (REJECT_SCHEMA dicts) -> {item_id: a local image file or an RGB uint8 array,
# or a list of (name, file or array) shown in order (a frame beside the one it was near)}
RejectImages = Callable[[List[dict]], Dict[str, Any]]


@dataclass(frozen=True)
class Explorer:
    """A benchmark's explorer: its views; `reject_images` is asked once per build for
    the rejects on each reason's first page (a reject naming a local image file in its
    item id or detail shows it without help)."""
    views: Sequence[ExplorerView] = ()
    reject_images: Optional[RejectImages] = None
