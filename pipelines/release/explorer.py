"""The release explorer: `<version>/explorer/`, static pages to look at a release.

    explorer/index.html, explorer.css, explorer.js   the app (explorer_assets/), one page
    explorer/data/index.js                           what there is: views, groups, pages
    explorer/data/<area>/<n>/.../<page>.js           one page of cards each
    explorer/thumbs/<k[:2]>/<k>.jpg                  thumbnails (explorer_thumbs.py)

It opens from disk (file://) with no server and no network: browsers refuse fetch() of
local files, so every page of data is a script (`EXPLORER.page(id, cards)`) that the app
adds to the document when that page is shown, and a release of 10,000 sets loads one
page of 24 cards at a time. Three areas:

- items: each table a benchmark declares (explorer_views.ExplorerView; undeclared tables
  get a plain view), per split and source;
- rejects: per reason, the first examples with the figures of their detail
  ("brisque=0.69" -> brisque 0.69) and the images they name, when local;
- diff: against the previous version, the comparison `release diff` prints
  (pipelines/release/diff.py), with the cards of rows added, removed, moved and changed,
  under the config change between the two versions.

The files are written before MANIFEST.json, so the manifest checksums them like any
other file; table digests (pipelines/release/digest.py) never read them. The content is
a function of the release (no clock, sorted keys), so two builds of the same release
write the same explorer.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
from collections import Counter, defaultdict
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

import pyarrow.parquet as pq

from pipelines.release.explorer_thumbs import Thumbnails
from pipelines.release.explorer_views import ExplorerView, ImageIndex, RejectImages
from pipelines.release.diff import summary
from pipelines.release.tables import key_text
from schemas.layout import PARQUET_DIR, REJECTS_DIR

log = logging.getLogger("pipelines.release.explorer")

EXPLORER_DIR = "explorer"
ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "explorer_assets")
PAGE_SIZE = 24
REJECT_EXAMPLES = 240          # per reason: ten pages; the count says how many there are
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")
_FIGURE = re.compile(r"([A-Za-z_][\w.]*)=(\S+)")


def write_explorer(release_dir: str, *, benchmark: str, version: str,
                   tables: Mapping[str, Sequence[str]],
                   views: Sequence[ExplorerView] = (),
                   diff: Optional[dict] = None, previous_dir: Optional[str] = None,
                   reject_images: Optional[RejectImages] = None) -> dict:
    """Write `<release_dir>/explorer/`; returns {"files", "bytes", "thumbnails"}.
    `tables` are the release's tables with their key columns (pipelines/release/tables.py:
    a card is named by its row's key, as the diff names rows; a table without a declared
    view gets a plain one);
    `diff` is release_diff.diff_releases(previous_dir, release_dir) when there is a
    previous version; `reject_images` pictures rejects whose image the release lacks."""
    root = os.path.join(release_dir, EXPLORER_DIR)
    previous_explorer = os.path.join(previous_dir, EXPLORER_DIR) if previous_dir else None
    pages = _Pages(root)
    thumbs = Thumbnails(root, previous_explorer)
    all_views = views_for(tables, views)
    cards: Dict[str, Dict[str, dict]] = {}
    index = {"benchmark": benchmark, "version": version, "page_size": PAGE_SIZE, "views": []}
    for n, view in enumerate(all_views):
        entry, cards[view.table] = _write_view(pages, f"items/{n}", view, tables[view.table],
                                               release_dir, thumbs)
        index["views"].append(entry)
    index["rejects"] = _write_rejects(pages, release_dir, thumbs, all_views, reject_images)
    index["diff"] = (_write_diff(pages, diff, all_views, cards, previous_dir, thumbs)
                     if diff and previous_dir else None)
    pages.script("data/index.js", f"EXPLORER.index({_json(index)});\n")
    for name in sorted(os.listdir(ASSETS)):
        shutil.copyfile(os.path.join(ASSETS, name), os.path.join(root, name))
    files, size = _size(root)
    log.info("explorer: %d files, %d bytes (%d thumbnails made, %d reused)",
             files, size, thumbs.made, thumbs.reused)
    return {"files": files, "bytes": size,
            "thumbnails": {"made": thumbs.made, "reused": thumbs.reused,
                           "unreadable": thumbs.unreadable}}


def views_for(tables: Iterable[str], declared: Sequence[ExplorerView]) -> List[ExplorerView]:
    """The declared views of tables this release holds (a config may leave one out),
    then a plain view of every other table."""
    tables = list(tables)
    shown = [v for v in declared if v.table in tables]
    seen = {v.table for v in shown}
    return shown + [ExplorerView(t) for t in tables if t not in seen]


# --- items ----------------------------------------------------------------------------

def _write_view(pages: "_Pages", prefix: str, view: ExplorerView, key: Sequence[str],
                release_dir: str, thumbs: Thumbnails):
    """One view's cards, paged per (split, source); returns (index entry, {key: card})."""
    render = _Renderer(view, key, release_dir, thumbs)
    groups = defaultdict(list)
    for card in render.cards():
        groups[(card["split"], card["source"])].append(card)
    entry = {"table": view.table, "title": view.label, "groups": []}
    for n, (split, source) in enumerate(sorted(groups)):
        group = groups[(split, source)]
        path = f"{prefix}/{n}"
        entry["groups"].append({"split": split, "source": source, "items": len(group),
                                "pages": pages.paged(path, group), "path": path})
    return entry, {card["key"]: card for group in groups.values() for card in group}


class _Renderer:
    """Rows of one table as cards: {key, split, source, images, text, choices, figures}."""

    def __init__(self, view: ExplorerView, key: Sequence[str], release_dir: str,
                 thumbs: Thumbnails):
        self.view, self.key, self.release_dir, self.thumbs = view, tuple(key), release_dir, thumbs
        self.rows = _read_rows(os.path.join(release_dir, PARQUET_DIR, view.table))
        self.joined = {j.table: {r[j.key]: r for r in
                                 _read_rows(os.path.join(release_dir, PARQUET_DIR, j.table))}
                       for j in view.join}
        self.image_paths = _image_index(release_dir, view.image_index)

    def cards(self) -> List[dict]:
        self.thumbs.prefetch(path for row in self.rows for path in self.local_paths(row))
        return sorted((self.card(row) for row in self.rows), key=lambda c: c["key"])

    def local_paths(self, row: dict) -> Iterable[str]:
        """The local image files a row's card shows (joined columns included)."""
        row = self.with_joins(row)
        for column in self.view.images:
            for value in _as_list(row.get(column)):
                path = self.local_path(str(value))
                if path:
                    yield path

    def with_joins(self, row: dict) -> dict:
        row = dict(row)
        for join in self.view.join:
            other = self.joined[join.table].get(row.get(join.on), {})
            row.update({f"{join.table}.{c}": v for c, v in other.items()})
        return row

    def card(self, row: dict) -> dict:
        view = self.view
        row = self.with_joins(row)
        target = row.get(view.target) if isinstance(view.target, str) else view.target
        card = {"key": key_text([row[c] for c in self.key]), "split": str(row.get("split", "")),
                "source": str(row.get("source", ""))}
        images = [v for column in view.images for v in _as_list(row.get(column))]
        if images:
            labels = [(n, n.rsplit(".", 1)[-1]) if isinstance(n, str) else (n[1], n[0])
                      for n in view.image_notes]
            notes = [(label, _as_list(row.get(column))) for column, label in labels]
            named = len(notes) > 1    # one note needs no name ("image", not "sources image")
            card["images"] = [self.image(value, [
                (f"{label} " if named else "") + _fmt(values[i])
                for label, values in notes if i < len(values)],
                target == i and not view.choices) for i, value in enumerate(images)]
        if view.text:
            card["text"] = [[c, _fmt(row.get(c))] for c in view.text]
        if view.choices:
            labels = _as_list(row.get(view.choice_notes)) if view.choice_notes else []
            card["choices"] = [{"x": _fmt(x), "n": _fmt(labels[i]) if i < len(labels) else "",
                                "target": target == i}
                               for i, x in enumerate(_as_list(row.get(view.choices)))]
        declared = view.images or view.text or view.choices or view.figures
        figures = view.figures if declared else [
            c for c, v in row.items() if c not in (*self.key, "split", "source")
            and not isinstance(v, (list, dict))]
        card["figures"] = [[c, _fmt(row.get(c))] for c in figures]
        return card

    def image(self, value, notes: Sequence[str] = (), target: bool = False) -> dict:
        value = str(value)
        path = self.local_path(value)
        image = {"n": os.path.basename(value) or value, "t": self.thumbs.of(path) if path else None}
        if notes:
            image["l"] = list(notes)
        if target:
            image["target"] = True
        return image

    def picture(self, picture, name: str) -> dict:
        """A benchmark's picture of a reject: a local file, or RGB pixels."""
        if isinstance(picture, str):
            return self.image(picture)
        return {"n": name, "t": self.thumbs.of_pixels(picture)}

    def local_path(self, value: str) -> Optional[str]:
        """A local file for an image value: a release path, a local path, or an id."""
        value = self.image_paths.get(value, value)
        if "://" in value:
            return None      # never fetched (and gs:// is not this machine's disk)
        candidate = value if os.path.isabs(value) else os.path.join(self.release_dir, value)
        return candidate if os.path.isfile(candidate) else None


# --- rejects --------------------------------------------------------------------------

def _write_rejects(pages: "_Pages", release_dir: str, thumbs: Thumbnails,
                   views: Sequence[ExplorerView], reject_images: Optional[RejectImages]) -> dict:
    """Per reason: its count by stage and level, and the first REJECT_EXAMPLES rejects
    (ordered by stage, level, item) as cards; those of the first page pictured by
    `reject_images` when the benchmark can (a frame from its video)."""
    rows = _read_rows(os.path.join(release_dir, REJECTS_DIR))
    by_reason = defaultdict(list)
    for row in rows:
        by_reason[row["reason"]].append(row)
    groups = {reason: sorted(group, key=lambda r: (r["stage"], r["level"], r["item_id"],
                                                   r.get("file", ""), r.get("line", 0)))
              for reason, group in by_reason.items()}
    pictured = (reject_images([r for g in groups.values() for r in g[:PAGE_SIZE]])
                if reject_images else {})
    images = _Renderer(ExplorerView("rejects"), ("item_id",), release_dir, thumbs)  # images only
    for view in views:   # a reject of an image id the views know (FG's pool) shows it
        images.image_paths.update(_image_index(release_dir, view.image_index))
    reasons = []
    for n, reason in enumerate(sorted(groups)):
        group = groups[reason]
        stages = Counter(f"{r['stage']}/{r['level']}" for r in group)
        cards = [_reject_card(r, images, pictured.get(r["item_id"]))
                 for r in group[:REJECT_EXAMPLES]]
        path = f"rejects/{n}"
        reasons.append({"reason": reason, "count": len(group), "shown": len(cards),
                        "stages": dict(sorted(stages.items())),
                        "pages": pages.paged(path, cards), "path": path})
    return {"total": len(rows), "reasons": reasons}


def _reject_card(row: dict, render: _Renderer, picture=None) -> dict:
    detail = row.get("detail", "")
    card = {"key": row["item_id"], "split": row.get("split", ""), "source": row.get("source", ""),
            "text": [["detail", detail]] if detail else [],
            "figures": [["stage", row["stage"]], ["level", row["level"]]]
            + [[name, value.rstrip(",;")] for name, value in _FIGURE.findall(detail)]}
    if row.get("video_id"):
        card["figures"].append(["video_id", row["video_id"]])
    if row.get("file"):
        where = os.path.basename(row["file"]) + (f":{row['line']}" if row.get("line") else "")
        card["figures"].append(["input", where])
    named = [word.rstrip(":,;)") for text in (row["item_id"], detail, row.get("file", ""))
             for word in str(text).split()]
    images = [render.image(w) for w in dict.fromkeys(named)
              if (w.lower().endswith(IMAGE_SUFFIXES) or w in render.image_paths)
              and render.local_path(w)]
    if picture is not None:   # one picture, or named ones (a frame beside its nearest)
        shown = picture if isinstance(picture, list) else [(os.path.basename(row["item_id"]), picture)]
        images[:0] = [render.picture(pixels, name) for name, pixels in shown]
    if images:
        card["images"] = images
    return card


# --- diff -----------------------------------------------------------------------------

def _write_diff(pages: "_Pages", diff: dict, views: Sequence[ExplorerView],
                cards: Dict[str, Dict[str, dict]], previous_dir: str, thumbs: Thumbnails) -> dict:
    """The `release diff` comparison with the cards of what it names: added, moved and
    changed rows as they are now (a changed one with its images before), removed ones
    as the previous version had them (cards named by the key the diff matched rows by)."""
    by_table = {v.table: v for v in views}
    tables = []
    for n, (table, change) in enumerate(sorted(diff["tables"].items())):
        view = by_table.get(table, ExplorerView(table))
        now = cards.get(table, {})
        before = {}
        if change["removed"] or change["changed"]:
            before = {c["key"]: c for c in _Renderer(view, change["key"], previous_dir,
                                                      thumbs).cards()}
        moved = {m["key"]: f"{m['from']} -> {m['to']}" + (", changed" if m["changed"] else "")
                 for m in change["moved"]}
        kinds = []
        for kind, keys, source in (("added", change["added"], now),
                                   ("removed", change["removed"], before),
                                   ("moved", sorted(moved), now),
                                   ("changed", change["changed"], now)):
            shown = []
            for key in keys:
                card = dict(source.get(str(key)) or {"key": str(key), "split": "", "source": ""})
                if kind == "moved":
                    card["figures"] = [["moved", moved[key]]] + card.get("figures", [])
                if kind == "changed" and before.get(str(key), {}).get("images"):
                    card["before"] = before[str(key)]["images"]
                shown.append(card)
            path = f"diff/{n}/{kind}"
            kinds.append({"kind": kind, "count": len(keys), "pages": pages.paged(path, shown),
                          "path": path})
        tables.append({"table": table, "title": view.label, "kinds": kinds,
                       "per_split": change["per_split"], "summary": summary(change),
                       "compared": not change.get("not_compared")})
    return {"from": diff["from"], "to": diff["to"], "config": diff["config"], "tables": tables}


# --- files ----------------------------------------------------------------------------

class _Pages:
    """Writes the data scripts under `<explorer>/data/`."""

    def __init__(self, root: str):
        self.root = root

    def paged(self, path: str, cards: List[dict]) -> int:
        """Write `cards` as pages `data/<path>/<n>.js` (n from 1); returns the page count."""
        count = math.ceil(len(cards) / PAGE_SIZE)
        for page in range(count):
            chunk = cards[page * PAGE_SIZE:(page + 1) * PAGE_SIZE]
            self.script(f"data/{path}/{page + 1}.js",
                        f"EXPLORER.page({_json(f'{path}/{page + 1}')}, {_json(chunk)});\n")
        return count

    def script(self, rel: str, text: str) -> None:
        target = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)


def _json(value) -> str:
    # ASCII-only: the scripts load from disk with no charset header; escaping also keeps
    # U+2028 and "</script>" harmless
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":")).replace(
        "</", "<\\/")


def _read_rows(folder: str) -> List[dict]:
    files = sorted(os.path.join(folder, n) for n in os.listdir(folder)
                   if n.endswith(".parquet")) if os.path.isdir(folder) else []
    rows = []
    for path in files:
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def _image_index(release_dir: str, index: Optional[ImageIndex]) -> Dict[str, str]:
    if index is None:
        return {}
    return {str(r[index.id]): r[index.path]
            for r in _read_rows(os.path.join(release_dir, PARQUET_DIR, index.table))}


def _as_list(value) -> list:
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _fmt(value) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_fmt(v) for v in value)
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
