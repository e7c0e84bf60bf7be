"""The release explorer: `<version>/explorer/`, static pages to search and look at a release.

    explorer/index.html, explorer.css, explorer.js   the app (assets/), one page
    explorer/data/index.js                           what there is: views, groups, columns
    explorer/data/items/<v>/cards/<c>.js             a view's cards, PAGE_SIZE a chunk
    explorer/data/items/<v>/rows/<c>.js              its rows whole, PAGE_SIZE a chunk: every
                                                     column, the Parquet file and row, the
                                                     compat/ entries (the row view)
    explorer/data/items/<v>/index/<col>/<c>.js       its search index (index.py)
    explorer/data/items/<v>/stats.js                 its per-column statistics (stats.py)
    explorer/data/rejects/...                        the rejects, as one more view
    explorer/data/diff/<t>.js, diff/<t>/before/<c>.js  the changes, and rows as they were
                                                     (a changed row's changed fields)
    explorer/thumbs/<k[:2]>/<k>.jpg                  thumbnails (thumbs.py)

It opens from disk (file://) with no server and no network: browsers refuse fetch() of
local files, so every piece of data is a script (`EXPLORER.data(id, value)`) that the app
adds to the document when it needs it. A view's rows are in one order, (split, source,
key) for a table and (reason, stage, level, item) for the rejects, and row i's card is
in cards chunk i // PAGE_SIZE; searching, filtering and sorting load only the index
columns they ask about, then the chunks of the cards they show. Three areas:

- items: each table a benchmark declares (views.ExplorerView; undeclared tables
  get a plain view), every row a card, its groups (split, source) contiguous; and every
  row whole, as its table holds it (binary values by their size), with its Parquet file
  and row number and its entries in compat/ (compat.py), for the row view; a
  column's ClassLabel names (schemas/columns.py, as the dataset card declares them) go
  with the view's columns;
- rejects: every reject as a card, with the figures of its detail ("brisque=0.69" ->
  brisque 0.69) and the images it names, when local; the first PAGE_SIZE of each reason
  pictured by the benchmark when it can (a frame decoded again from its video);
- diff: against the previous version, the comparison `release diff` prints
  (pipelines/release/check/diff.py): the keys added, moved and changed (their cards are the
  view's) and the cards of removed and changed rows as the previous version had them,
  a changed row's with the fields that changed (before, now). It names the version it
  compares with, and compares none where one release was built from the generated
  sample and the other from real inputs (MANIFEST.json `built_from`): their rows have
  nothing in common, and a list of every row "removed" and "added" would say otherwise.

Tables are read in batches (rows.py), so memory is bounded by a batch and a
chunk, not by the table. The files are written before MANIFEST.json, so the manifest
checksums them like any other file; table digests (pipelines/release/check/digest.py) never
read them. The content is a function of the release's rows and of the names of its
Parquet files (no clock, sorted keys, an order that does not depend on the runner's
shards; only the row view's "file and row" says where the runner put a row), so two
builds of the same release write the same explorer.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
from collections import Counter
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

from pipelines.release.check.diff import load_manifest, summary
from pipelines.release.explorer.compat import CompatEntries
from pipelines.release.explorer.index import ColumnIndex
from pipelines.release.explorer.rows import (RowStore, parquet_files, read_batches,
                                             read_located_batches, read_rows, read_schema)
from pipelines.release.explorer.stats import TableStats
from pipelines.release.explorer.thumbs import Thumbnails
from pipelines.release.explorer.views import ExplorerView, RejectImages
from pipelines.release.write.manifest import built_from_of
from pipelines.release.write.tables import key_text
from schemas.columns import class_names_of, description
from schemas.layout import PARQUET_DIR, REJECTS_DIR

log = logging.getLogger("pipelines.release.explorer.write")

EXPLORER_DIR = "explorer"
ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")
PAGE_SIZE = 24            # cards a page shows, and a cards chunk holds
RENDER_ROWS = 256         # rows whose thumbnails are made together (in parallel)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")
_FIGURE = re.compile(r"([A-Za-z_][\w.]*)=(\S+)")
REJECTS = "rejects"       # the rejects' view name (no table has it: rejects/ is no table)
# What a stored row carries beside its columns: its cells as the row view shows them,
# and where it is. "~" sorts after every column name, so rows that tie on their order
# (rows.RowStore) are still ordered by their columns' content first.
CELLS, AT = "~cells", "~at"


def write_explorer(release_dir: str, *, benchmark: str, version: str,
                   tables: Mapping[str, Sequence[str]],
                   views: Sequence[ExplorerView] = (),
                   diff: Optional[dict] = None, previous_dir: Optional[str] = None,
                   reject_images: Optional[RejectImages] = None,
                   input_root: Optional[str] = None, built_from: Optional[str] = None) -> dict:
    """Write `<release_dir>/explorer/`; returns {"files", "bytes", "thumbnails"}.
    `tables` are the release's tables with their key columns (pipelines/release/write/tables.py:
    a card is named by its row's key, as the diff names rows; a table without a declared
    view gets a plain one);
    `diff` is release_diff.diff_releases(previous_dir, release_dir) when there is a
    previous version; `reject_images` pictures rejects whose image the release lacks;
    `input_root` is where a path the release holds relative to the build's input root
    is found (pipelines/release/write/locations.py); `built_from` what this release was built
    from (MANIFEST.json's, which is written after the explorer)."""
    root = os.path.join(release_dir, EXPLORER_DIR)
    files = _Files(root)
    thumbs = Thumbnails(root, os.path.join(previous_dir, EXPLORER_DIR) if previous_dir else None)
    all_views = views_for(tables, views)
    index = {"benchmark": benchmark, "version": version, "page_size": PAGE_SIZE, "views": []}
    with RowStore() as store:
        images = _ImageLookup(store, release_dir, all_views, "now", input_root,
                              keys={v.table: tables[v.table] for v in all_views})
        for n, view in enumerate(all_views):
            render = _Renderer(view, release_dir, thumbs, store, images, "now",
                               key=tables[view.table])
            index["views"].append(_write_table(files, f"items/{n}", render))
        index["rejects"] = _write_rejects(files, release_dir, thumbs, store, images, reject_images)
        index["diff"] = (_write_diff(files, diff, all_views, release_dir, previous_dir, thumbs,
                                     store, input_root, built_from)
                         if diff and previous_dir else None)
    files.script("data/index.js", f"EXPLORER.index({_json(index)});\n")
    for name in sorted(os.listdir(ASSETS)):
        shutil.copyfile(os.path.join(ASSETS, name), os.path.join(root, name))
    count, size = _size(root)
    log.info("explorer: %d files, %d bytes (%d thumbnails made, %d reused)",
             count, size, thumbs.made, thumbs.reused)
    return {"files": count, "bytes": size,
            "thumbnails": {"made": thumbs.made, "reused": thumbs.reused,
                           "unreadable": thumbs.unreadable}}


def views_for(tables: Iterable[str], declared: Sequence[ExplorerView]) -> List[ExplorerView]:
    """The declared views of tables this release holds (a config may leave one out),
    then a plain view of every other table."""
    tables = list(tables)
    shown = [v for v in declared if v.table in tables]
    seen = {v.table for v in shown}
    return shown + [ExplorerView(t) for t in tables if t not in seen]


def table_key(columns: Sequence[str]) -> Tuple[str, Callable[[dict], str]]:
    """The name of a table's declared key (its column, or its columns joined by " / ")
    and a row's key as text: the one place the explorer depends on how a release names
    its rows, as the diff lists them (pipelines/release/write/tables.py, key_text)."""
    return " / ".join(columns), lambda row: key_text([row.get(c) for c in columns])


def diff_key(value) -> str:
    """A key as pipelines/release/check/diff.py lists it, as text (table_key's form)."""
    return _text(value)


# --- items ----------------------------------------------------------------------------

def _write_table(files: "_Files", path: str, render: "_Renderer") -> dict:
    """One view: every row's card and index values in (split, source, key) order
    (_Renderer.order), its groups, its statistics."""
    view = render.view
    stats = render.load_rows("rows", render.order)
    files.data(f"{path}/stats", stats)
    groups = _Groups(("split", "source"))
    cards, whole = _Chunks(files, f"{path}/cards"), _Chunks(files, f"{path}/rows")
    search = ColumnIndex(files.data, f"{path}/index", no_facet=(
        render.key_column, *render.text_names, "images", "choices", *render.note_ranges()))
    for card, values, row in render.cards_and_index("rows"):
        groups.add(card)
        cards.add(card)
        whole.add(render.whole_row(row))
        search.add(values)
    cards.flush()
    whole.flush()
    return {"table": view.table, "title": view.label, "path": path, "rows": cards.count,
            "key": render.key_column, "groups": groups.groups, "group_by": list(groups.columns),
            "text": render.text_names, "figures": render.figure_names, "index": search.close(),
            "columns": render.column_meta(), "files": render.files(),
            "compat": view.compat is not None}


class _Renderer:
    """Rows of one table as cards: {k, s, o, i (images), x (texts), c (choices),
    f (figures, in the view's order), m (more figures: name, value)}; and the values
    its row gives the search index."""

    def __init__(self, view: ExplorerView, release_dir: str, thumbs: Thumbnails,
                 store: RowStore, images: "_ImageLookup", tag: str, folder: str = "",
                 key: Sequence[str] = ()):
        self.view, self.release_dir, self.thumbs = view, release_dir, thumbs
        self.key_columns = tuple(key)   # the table's declared key (pipelines/release/write/tables.py)
        self.store, self.images, self.tag = store, images, tag
        self.folder = folder or os.path.join(release_dir, PARQUET_DIR, view.table)
        self.schema = read_schema(self.folder)
        self.key_column, self.key = self.describe_key()
        self.figure_names, self.text_names = self.describe_columns()
        self._load_joins()
        self.compat = (CompatEntries(store, release_dir, view.compat, tag)
                       if view.compat and tag == "now" else None)

    def describe_key(self) -> Tuple[str, Callable[[dict], str]]:
        return table_key(self.key_columns) if self.schema and self.key_columns else ("", _no_key)

    def order(self, row: dict) -> tuple:
        """Where a row's card goes: by split, source, then key in natural order
        (dev-9 before dev-10)."""
        key = self.key(row)
        return _text(row.get("split")), _text(row.get("source")), _natural(key), key

    def describe_columns(self) -> Tuple[List[str], List[str]]:
        """(figures, texts) a card shows: the declared ones, or for a plain view every
        scalar column but the key, split and source."""
        view = self.view
        declared = view.images or view.text or view.choices or view.figures
        figures = view.figures if declared else [
            f.name for f in self.schema or () if _scalar(f.type) and f.name not in ("split", "source")]
        return [c for c in figures if c not in (self.key_column, *self.key_columns)], list(view.text)

    # reading

    def columns(self) -> List[str]:
        """The table's columns a card needs (a joined table's come with the join)."""
        view = self.view
        named = [*self.key_columns, "split", "source", view.choices, view.choice_notes,
                 *view.images, *view.image_links, *self.text_names, *self.figure_names,
                 *(column for column, _ in self._notes()), *(j.on for j in view.join),
                 *(column for _, column in (view.compat.match if view.compat else ()))]
        if isinstance(view.target, str):
            named.append(view.target)
        joined = tuple(f"{j.table}." for j in view.join)
        return list(dict.fromkeys(c for c in named if c and not c.startswith(joined)))

    def load_rows(self, name: str, order: Callable[[dict], tuple],
                  keep: Callable[[dict], bool] = lambda row: True,
                  with_stats: bool = True) -> Optional[dict]:
        """Read the table once, in batches, into the store: the columns a card needs of
        the rows `keep` accepts, in `order`. With `with_stats`, returns the statistics of
        every column (stats.py; histograms read the numeric columns again)."""
        stats = TableStats(self.schema or pa.schema([]))
        columns = self.columns()

        def batches():
            for file, first, batch in read_located_batches(self.folder):
                if with_stats:
                    stats.add(batch)
                shown = batch.select([c for c in columns if c in batch.schema.names]).to_pylist()
                cells = _cells(batch, self.schema) if self.whole_rows else [None] * len(shown)
                kept = []
                for n, (row, whole) in enumerate(zip(shown, cells)):
                    if keep(row):
                        if self.whole_rows:
                            row[CELLS], row[AT] = whole, [file, first + n]
                        kept.append(row)
                yield kept

        self.store.load(self._rows_name(name), batches(), order=order)
        if not with_stats:
            return None
        if stats.second_pass_columns:
            for batch in read_batches(self.folder, stats.second_pass_columns):
                stats.add_second_pass(batch)
        return {"rows": stats.rows, "columns": stats.result()}

    def rows(self, name: str) -> Iterator[dict]:
        return self.store.rows(self._rows_name(name))

    # the row view

    whole_rows = True   # a table's rows are kept whole for the row view (the rejects' are cards)

    def column_meta(self) -> List[dict]:
        """The table's columns in order: name, type, description, ClassLabel names."""
        out = []
        for field in self.schema or ():
            meta = {"name": field.name, "type": str(field.type)}
            if description(field):
                meta["d"] = description(field)
            names = class_names_of(field)
            if names:
                meta["labels"] = names
            out.append(meta)
        return out

    def files(self) -> List[str]:
        """The table's Parquet files, relative to the release folder (a row's "p" numbers one)."""
        return [os.path.relpath(path, self.release_dir).replace(os.sep, "/")
                for path in parquet_files(self.folder)]

    def whole_row(self, row: dict) -> dict:
        """{v: every cell in the columns' order, p: [file number, row in the file],
        c: [[compat file, where in it], ...] when the view declares compat/ entries}."""
        whole = {"v": row.get(CELLS), "p": row.get(AT)}
        if self.compat:
            whole["c"] = self.compat.of(row)
        return whole

    def _rows_name(self, name: str) -> str:
        return f"{self.tag}:{self.view.table}:{name}"

    def _load_joins(self) -> None:
        for join in self.view.join:
            name = f"{self.tag}:join:{join.table}:{join.key}"
            if name not in self.store:
                self.store.load(name, read_rows(os.path.join(self.release_dir, PARQUET_DIR, join.table)),
                                key=lambda row, k=join.key: _text(row.get(k)))

    def with_joins(self, row: dict) -> dict:
        row = dict(row)
        for join in self.view.join:
            other = self.store.get(f"{self.tag}:join:{join.table}:{join.key}",
                                   _text(row.get(join.on))) or {}
            row.update({f"{join.table}.{c}": v for c, v in other.items()})
        return row

    # cards

    def cards_and_index(self, name: str) -> Iterator[Tuple[dict, dict, dict]]:
        """(card, index values, row) of the stored rows, in order; thumbnails made
        RENDER_ROWS rows at a time, in parallel."""
        batch = []
        for row in self.rows(name):
            batch.append(self.with_joins(row))
            if len(batch) == RENDER_ROWS:
                yield from self._render(batch)
                batch = []
        yield from self._render(batch)

    def _render(self, rows: List[dict]) -> Iterator[Tuple[dict, dict, dict]]:
        self.thumbs.prefetch(path for row in rows for path in self.local_paths(row))
        for row in rows:
            yield self.card(row), self.index_values(row), row

    def local_paths(self, row: dict) -> Iterable[str]:
        """The local image files a row's card shows (joined columns included)."""
        for value, _ in self.image_values(row):
            path = self.local_path(_text(value))
            if path:
                yield path

    def image_values(self, row: dict) -> List[Tuple[object, str]]:
        """(image, its link or "") of a row, in order: an images column's values, or
        where it has none (a released file naming URLs only) its link column's."""
        out = []
        for n, column in enumerate(self.view.images):
            links = _as_list(row.get(self.view.image_links[n])) if self.view.image_links else []
            values = _as_list(row.get(column)) or links
            out += [(v, _text(links[i]) if i < len(links) else "") for i, v in enumerate(values)]
        return out

    def card(self, row: dict) -> dict:
        view = self.view
        target = row.get(view.target) if isinstance(view.target, str) else view.target
        card = {"k": self.key(row), "s": _text(row.get("split")), "o": _text(row.get("source"))}
        images = self.image_values(row)
        if images:
            notes = [(label, _as_list(row.get(column))) for column, label in self._notes()]
            named = len(notes) > 1    # one note needs no name ("image", not "sources image")
            card["i"] = [self.image(value, [
                (f"{label} " if named else "") + _fmt(values[i])
                for label, values in notes if i < len(values)],
                target == i and not view.choices, link) for i, (value, link) in enumerate(images)]
        if self.text_names:
            card["x"] = [_fmt(row.get(c)) for c in self.text_names]
        if view.choices:
            labels = _as_list(row.get(view.choice_notes)) if view.choice_notes else []
            card["c"] = [{"x": _fmt(x), "n": _fmt(labels[i]) if i < len(labels) else "",
                          "target": target == i}
                         for i, x in enumerate(_as_list(row.get(view.choices)))]
        card["f"] = [_fmt(row.get(c)) for c in self.figure_names]
        return card

    def index_values(self, row: dict) -> dict:
        """What the search index holds of a row: its key, split and source, its texts,
        the scalar figures, the images' names and the choices (searched), and the least
        and greatest of each numeric image note (a set's worst BRISQUE score)."""
        values = {self.key_column: self.key(row), "split": row.get("split"),
                  "source": row.get("source")}
        for column in [*self.text_names, *self.figure_names]:
            value = row.get(column)
            if not isinstance(value, (list, tuple, dict)):
                values[column] = value
        names = [_text(v) for v, _ in self.image_values(row)]
        if names:
            values["images"] = " ".join(os.path.basename(n) or n for n in names)
        if self.view.choices:
            values["choices"] = " | ".join(_text(x) for x in _as_list(row.get(self.view.choices)))
        for column, label in self._notes():
            numbers = [v for v in _as_list(row.get(column))
                       if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
            if numbers:
                values[f"{label} min"], values[f"{label} max"] = min(numbers), max(numbers)
        return values

    def _notes(self) -> List[Tuple[str, str]]:
        """(column, label) of each image note: a column is labelled by its name's last
        part ("similar_sets.sources": "sources"), a (label, column) pair by its label."""
        return [(n, n.rsplit(".", 1)[-1]) if isinstance(n, str) else (n[1], n[0])
                for n in self.view.image_notes]

    def note_ranges(self) -> List[str]:
        """The index columns of each image note's least and greatest value (ranges only)."""
        return [f"{label} {end}" for _, label in self._notes() for end in ("min", "max")]

    def image(self, value, notes: Sequence[str] = (), target: bool = False, link: str = "") -> dict:
        """{n: name, t: thumbnail, u: URL, l: notes, target}; a name that is the URL's
        last part and an absent thumbnail are left out (the page derives the one)."""
        value = _text(value)
        path = self.local_path(value)
        image = {"n": os.path.basename(value) or value}
        thumbnail = self.thumbs.of(path) if path else None
        if thumbnail:
            image["t"] = thumbnail
        url = next((u for u in (link, value) if re.match(r"https?://", u)), "")
        if url:
            image["u"] = url   # a link the person may follow; the page never loads it
            if image["n"] == _url_name(url):
                del image["n"]
        if notes:
            image["l"] = list(notes)
        if target:
            image["target"] = True
        return image

    def image_id_path(self, value: str) -> Optional[str]:
        return self.images.path(self.view, value)

    def picture(self, picture, name: str) -> dict:
        """A benchmark's picture of a reject: a local file, or RGB pixels."""
        if isinstance(picture, str):
            return self.image(picture)
        thumbnail = self.thumbs.of_pixels(picture)
        return {"n": name, "t": thumbnail} if thumbnail else {"n": name}

    def local_path(self, value: str) -> Optional[str]:
        """A local file for an image value: a release path, a local path, or an id."""
        value = self.image_id_path(value) or value
        if "://" in value:
            return None      # never fetched (and gs:// is not this machine's disk)
        if os.path.isabs(value):
            return value if os.path.isfile(value) else None
        for folder in (self.release_dir, self.images.input_root):   # release paths, input paths
            if folder and os.path.isfile(os.path.join(folder, value)):
                return os.path.join(folder, value)
        return None


class _ImageLookup:
    """Image ids to local files through the views' image indexes (FG's pool ids), from
    the store: the id -> path columns only, never the table in memory."""

    def __init__(self, store: RowStore, release_dir: str, views: Sequence[ExplorerView], tag: str,
                 input_root: Optional[str] = None, keys: Optional[Dict[str, Sequence[str]]] = None):
        self.store, self.names, self.input_root = store, {}, input_root
        self.answered: List[Tuple[ExplorerView, str, str]] = []   # (view, store name, images column)
        for view in views:
            rows_of = view.rejects_of_rows
            if rows_of is not None and view.images and (keys or {}).get(view.table):
                key_columns, column = tuple(keys[view.table]), view.images[0]
                name = f"{tag}:answered:{view.table}"
                store.load(name, read_rows(os.path.join(release_dir, PARQUET_DIR, view.table),
                                           list(dict.fromkeys(key_columns + (column,)))),
                           key=lambda row, k=key_columns: table_key(k)[1](row))
                self.answered.append((view, name, column))
            index = view.image_index
            if index is None:
                continue
            name = f"{tag}:images:{index.table}:{index.id}:{index.path}"
            if name not in store:
                folder = os.path.join(release_dir, PARQUET_DIR, index.table)
                store.load(name, read_rows(folder, [index.id, index.path]),
                           key=lambda row, i=index.id: _text(row.get(i)))
            self.names[view.table] = (name, index.path)

    def path(self, view: ExplorerView, value: str) -> Optional[str]:
        """The file of an image id of `view` (None: not an id it knows)."""
        found = self.names.get(view.table)
        if found is None:
            return None
        row = self.store.get(found[0], value)
        return row[found[1]] if row else None

    def answered_row(self, reject: dict) -> Tuple[List[str], Dict[int, List[str]], Optional[int]]:
        """The images of the row a reject judged an answer about (RejectsOfRows), the
        labels of each marked place, and the target's place: ([], {}, None) for none."""
        for view, name, column in self.answered:
            found = re.match(view.rejects_of_rows.item, _text(reject.get("item_id")))
            row = self.store.get(name, found.group(1)) if found else None
            if not row:
                continue
            detail, labels, target = _text(reject.get("detail")), {}, None
            for n, (label, pattern) in enumerate(view.rejects_of_rows.marks):
                marked = re.search(pattern, detail)
                for place in (int(x) for x in re.findall(r"\d+", marked.group(1))) if marked else ():
                    if n == 0:   # the target: framed as a view's target is
                        target = place
                    else:
                        labels.setdefault(place, []).append(label)
            return _as_list(row.get(column)), labels, target
        return [], {}, None

    def any_path(self, value: str) -> Optional[str]:
        """The file of an image id of any view (a reject names a pool id)."""
        for name, column in sorted(set(self.names.values())):
            row = self.store.get(name, value)
            if row:
                return row[column]
        return None


# --- rejects --------------------------------------------------------------------------

class _RejectRenderer(_Renderer):
    """The rejects as cards: the item, its detail, the figures of the detail, the input
    file and line, and the images it names."""

    whole_rows = False   # a reject's card shows every column already

    def __init__(self, release_dir: str, thumbs: Thumbnails, store: RowStore,
                 images: _ImageLookup):
        super().__init__(ExplorerView(REJECTS, "Rejects"), release_dir, thumbs, store, images,
                         "now", folder=os.path.join(release_dir, REJECTS_DIR))
        self.pictured: Dict[str, object] = {}

    def describe_key(self) -> Tuple[str, Callable[[dict], str]]:
        return "item_id", lambda row: _text(row.get("item_id"))

    def order(self, row: dict) -> tuple:
        """By reason (a group each), stage, level, item (natural order), input and line."""
        return (row["reason"], row["stage"], row["level"], _natural(row["item_id"]), row["item_id"],
                _text(row.get("file")), row.get("line") or 0)

    def describe_columns(self) -> Tuple[List[str], List[str]]:
        return ["stage", "level", "video_id", "input"], ["detail"]

    def columns(self) -> List[str]:
        return self.schema.names if self.schema else []

    def image_id_path(self, value: str) -> Optional[str]:
        return self.images.any_path(value)   # a reject may name any view's image id

    def named_images(self, row: dict) -> List[str]:
        words = [word.rstrip(":,;)") for text in (row["item_id"], row.get("detail", ""),
                                                  row.get("file", "")) for word in _text(text).split()]
        return [w for w in dict.fromkeys(words)
                if (w.lower().endswith(IMAGE_SUFFIXES) or self.images.any_path(w))
                and self.local_path(w)]

    def local_paths(self, row: dict) -> Iterable[str]:
        named = [self.local_path(w) for w in self.named_images(row)]
        return named + [p for p in map(self.local_path, self.images.answered_row(row)[0]) if p]

    def card(self, row: dict) -> dict:
        detail = _text(row.get("detail"))
        where = ""
        if row.get("file"):
            where = os.path.basename(row["file"]) + (f":{row['line']}" if row.get("line") else "")
        card = {"k": row["item_id"], "s": _text(row.get("split")), "o": _text(row.get("source")),
                "x": [detail], "f": [row["stage"], row["level"], _text(row.get("video_id")), where],
                "r": row["reason"]}
        figures = _detail_figures(detail)
        if figures:
            card["m"] = [[name, value] for name, value in figures]
        images = [self.image(w) for w in self.named_images(row)]
        answered, labels, target = self.images.answered_row(row)   # the set a rejected answer was about
        images += [self.image(p, labels.get(n, ()), target=n == target) for n, p in enumerate(answered)]
        picture = self.pictured.get(row["item_id"])
        if picture is not None:   # one picture, or named ones (a frame beside its nearest)
            shown = picture if isinstance(picture, list) else [(os.path.basename(row["item_id"]), picture)]
            images[:0] = [self.picture(pixels, name) for name, pixels in shown]
        if images:
            card["i"] = images
        return card

    def index_values(self, row: dict) -> dict:
        values = {"item_id": row["item_id"], "reason": row["reason"], "stage": row["stage"],
                  "level": row["level"], "split": row.get("split"), "source": row.get("source"),
                  "video_id": row.get("video_id"), "detail": row.get("detail"),
                  "input": os.path.basename(row["file"]) if row.get("file") else None}
        for name, value in _detail_figures(_text(row.get("detail"))):
            if name not in values:
                values[name] = _number(value)
        return values


def _write_rejects(files: "_Files", release_dir: str, thumbs: Thumbnails, store: RowStore,
                   images: _ImageLookup, reject_images: Optional[RejectImages]) -> dict:
    """Every reject as a card, in (reason, stage, level, item, file, line) order (_RejectRenderer.order); the
    first PAGE_SIZE of each reason pictured by `reject_images` when the benchmark can
    (asked once, for all of them)."""
    render = _RejectRenderer(release_dir, thumbs, store, images)
    files.data(f"{REJECTS}/stats", render.load_rows("rows", render.order))
    first, per_reason, stages = [], Counter(), Counter()
    for row in render.rows("rows"):
        stages[(row["reason"], f"{row['stage']}/{row['level']}")] += 1
        per_reason[row["reason"]] += 1
        if per_reason[row["reason"]] <= PAGE_SIZE:
            first.append(row)
    render.pictured = reject_images(first) if reject_images and first else {}
    groups = _Groups(("reason",))
    cards = _Chunks(files, f"{REJECTS}/cards")
    search = ColumnIndex(files.data, f"{REJECTS}/index", no_facet=("item_id", "detail"))
    for card, values, _ in render.cards_and_index("rows"):
        groups.add(card)
        cards.add(card)
        search.add(values)
    cards.flush()
    reasons = []
    for group in groups.groups:
        reason = group["reason"]
        reasons.append(dict(group, stages={s: n for (r, s), n in sorted(stages.items()) if r == reason}))
    return {"table": REJECTS, "title": "Rejects", "path": REJECTS, "rows": cards.count,
            "total": cards.count, "key": "item_id", "groups": reasons, "group_by": list(groups.columns),
            "text": render.text_names, "figures": render.figure_names, "index": search.close()}


def _detail_figures(detail: str) -> List[Tuple[str, str]]:
    return [(name, value.rstrip(",;")) for name, value in _FIGURE.findall(detail)]


def _number(text: str):
    """A figure of a detail as a number when it reads as one (brisque=0.69), else text."""
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if re.fullmatch(r"[+-]?\d+", text) else value


# --- diff -----------------------------------------------------------------------------

def _write_diff(files: "_Files", diff: dict, views: Sequence[ExplorerView], release_dir: str,
                previous_dir: str, thumbs: Thumbnails, store: RowStore,
                input_root: Optional[str] = None, built_from: Optional[str] = None) -> dict:
    """The `release diff` comparison: per table its keys added, moved and changed (whose
    cards are the view's) and removed, and the cards of the removed and changed rows as
    the previous version had them (a changed set shows its frames now and before), a
    changed row's with its changed fields. Names the previous version; compares nothing
    where one release was built from the sample and the other not (`refused`)."""
    previous = load_manifest(previous_dir)
    before_from = built_from_of(previous, previous_dir)
    shown = {"from": diff["from"], "to": diff["to"], "config": diff["config"], "tables": [],
             "previous": {"benchmark": previous.get("benchmark", ""), "version": diff["from"],
                          "built_from": before_from,
                          "explorer": _explorer_link(release_dir, previous_dir)},
             "built_from": built_from}
    if before_from and built_from and before_from != built_from:
        shown["refused"] = (f"{shown['previous']['benchmark']} {diff['from']} was built from "
                            f"{_BUILT_FROM_TEXT.get(before_from, before_from)} and {diff['to']} from "
                            f"{_BUILT_FROM_TEXT.get(built_from, built_from)}: their rows have "
                            "nothing in common, so this explorer compares none of them.")
        return shown
    by_table = {v.table: (n, v) for n, v in enumerate(views)}
    images = _ImageLookup(store, previous_dir, views, "before", input_root)
    for n, (table, change) in enumerate(sorted(diff["tables"].items())):
        number, view = by_table.get(table, (None, ExplorerView(table)))
        wanted = {diff_key(k) for k in [*change["removed"], *change["changed"]]}
        before_keys = []
        if wanted:
            render = _Renderer(view, previous_dir, thumbs, store, images, "before",
                               key=change["key"])
            render.load_rows("diff", render.order, keep=lambda row: render.key(row) in wanted,
                             with_stats=False)
            changed = _changed_fields(render, release_dir, view, change, store)
            cards = _Chunks(files, f"diff/{n}/before")
            for card, _, _ in render.cards_and_index("diff"):
                if card["k"] in changed:
                    card["d"] = changed[card["k"]]
                cards.add(card)
                before_keys.append(card["k"])
            cards.flush()
            before_figures = render.figure_names
        else:
            before_figures = []
        files.data(f"diff/{n}", {
            "added": [diff_key(k) for k in change["added"]],
            "removed": [diff_key(k) for k in change["removed"]],
            "changed": [diff_key(k) for k in change["changed"]],
            "moved": [[diff_key(m["key"]), m["from"], m["to"]] for m in change["moved"]],
            "before": before_keys, "before_figures": before_figures})
        shown["tables"].append({
            "table": table, "title": view.label, "view": number, "path": f"diff/{n}",
            "counts": {kind: len(change[kind]) for kind in ("added", "removed", "moved", "changed")},
            "per_split": change["per_split"], "summary": summary(change),
            "compared": not change.get("not_compared")})
    return shown


_BUILT_FROM_TEXT = {"sample": "the generated sample", "inputs": "real inputs"}


def _changed_fields(before: "_Renderer", release_dir: str, view: ExplorerView, change: dict,
                    store: RowStore) -> Dict[str, List[list]]:
    """{key: [[column, before, now], ...]} of the changed rows (same key and split, other
    content): the columns whose values differ, in the table's order now (a column one
    version lacks has no value there). Reads the table now for those rows only."""
    keys = {diff_key(k) for k in change["changed"]}
    if not keys:
        return {}
    now = _Renderer(view, release_dir, before.thumbs, store, before.images, "changed",
                    key=change["key"])
    now.load_rows("changed", now.order, keep=lambda row: now.key(row) in keys, with_stats=False)
    now_rows = {now.key(row): row for row in now.rows("changed")}
    before_rows = {before.key(row): row for row in before.rows("diff") if before.key(row) in keys}
    names_now = [f.name for f in now.schema or ()]
    names = names_now + [f.name for f in before.schema or () if f.name not in names_now]
    out = {}
    for key, row in sorted(before_rows.items()):
        after = now_rows.get(key)
        if after is None:
            continue
        was = dict(zip([f.name for f in before.schema], row[CELLS]))
        is_ = dict(zip(names_now, after[CELLS]))
        out[key] = [[name, was.get(name), is_.get(name)] for name in names
                    if was.get(name) != is_.get(name)]
    return out


def _explorer_link(release_dir: str, previous_dir: str) -> str:
    """The previous version's explorer, relative to this one's index.html."""
    return os.path.relpath(os.path.join(previous_dir, EXPLORER_DIR, "index.html"),
                           os.path.join(release_dir, EXPLORER_DIR)).replace(os.sep, "/")


# --- files ----------------------------------------------------------------------------

class _Groups:
    """Contiguous runs of rows with the same values of `columns` (the rows are in
    order): [{column: value, ..., "start", "count"}]."""

    def __init__(self, columns: Sequence[str]):
        self.columns, self.groups, self.rows = columns, [], 0
        self._card_field = {"split": "s", "source": "o", "reason": "r"}

    def add(self, card: dict) -> None:
        values = {c: card[self._card_field[c]] for c in self.columns}
        if not self.groups or any(self.groups[-1][c] != v for c, v in values.items()):
            self.groups.append(dict(values, start=self.rows, count=0))
        self.groups[-1]["count"] += 1
        self.rows += 1


class _Chunks:
    """Cards written PAGE_SIZE to a script, `data/<path>/<n>.js` (n from 0)."""

    def __init__(self, files: "_Files", path: str):
        self.files, self.path, self.cards, self.count, self.chunks = files, path, [], 0, 0

    def add(self, card: dict) -> None:
        self.cards.append(card)
        self.count += 1
        if len(self.cards) == PAGE_SIZE:
            self.flush()

    def flush(self) -> None:
        if self.cards:
            self.files.data(f"{self.path}/{self.chunks}", self.cards)
            self.chunks += 1
            self.cards = []


class _Files:
    """Writes the data scripts under `<explorer>/data/`."""

    def __init__(self, root: str):
        self.root = root

    def data(self, rel_id: str, value) -> None:
        """`data/<rel_id>.js`, calling EXPLORER.data(rel_id, value)."""
        self.script(f"data/{rel_id}.js", f"EXPLORER.data({_json(rel_id)},{_json(value)});\n")

    def script(self, rel: str, text: str) -> None:
        target = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)


def _cells(batch: pa.RecordBatch, schema: Optional[pa.Schema]) -> List[list]:
    """Every row of a batch as the row view shows it: one cell per column of the table,
    in its order (_cell)."""
    names = [f.name for f in schema] if schema else batch.schema.names
    columns = [batch.column(name).to_pylist() if name in batch.schema.names
               else [None] * batch.num_rows for name in names]
    return [[_cell(column[i]) for column in columns] for i in range(batch.num_rows)]


def _cell(value) -> Optional[str]:
    """A value as text: a scalar as Python writes it (a float in full), a list or struct
    as JSON, binary data (an embedded image) by its size; None for no value."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):   # in full, as JSON writes it (json.dumps is 5x slower here)
        return repr(value) if math.isfinite(value) else _NON_FINITE[str(value)]
    return json.dumps(_plain_cell(value), ensure_ascii=False)


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _plain_cell(value):
    if isinstance(value, bytes):
        return f"<{len(value):,} bytes>"
    if isinstance(value, dict):
        return {k: _plain_cell(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_cell(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)   # a date, a decimal: as Python writes it


def _json(value) -> str:
    # ASCII-only: the scripts load from disk with no charset header; escaping also keeps
    # U+2028 and "</script>" harmless
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":")).replace(
        "</", "<\\/")


def _scalar(kind: pa.DataType) -> bool:
    return not (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_struct(kind)
                or pa.types.is_map(kind) or pa.types.is_binary(kind))


def _natural(text: str) -> str:
    """Text whose plain order is the natural order of `text`: numbers by value
    ("frame9" before "frame10"), as zero-padded digits."""
    return re.sub(r"\d+", lambda m: m.group().zfill(20), text)


def _no_key(row: dict) -> str:
    return ""


def _text(value) -> str:
    return "" if value is None else str(value)


def _url_name(url: str) -> str:
    """The name the page shows for a URL: its path's last part (explorer.js, imageName)."""
    return url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1] or url


def _as_list(value) -> list:
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _fmt(value) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, (list, tuple)):   # a missing item (null: a score not given) as n/a too
        return ", ".join("n/a" if v is None else _fmt(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def _size(root: str):
    files = size = 0
    for folder, _, names in os.walk(root):
        for name in names:
            files += 1
            size += os.path.getsize(os.path.join(folder, name))
    return files, size
