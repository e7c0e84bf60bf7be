"""The release explorer's files (pipelines/release/explorer/write.py), without a browser: every
row and reject a card in a canonical order, groups, the search index, statistics,
thumbnails, the diff, no network reference, determinism, reading in batches.
tests/release/explorer/test_explorer_browser.py opens the sample releases in Chromium."""
import filecmp
import json
import os
import shutil
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from pipelines import build
from pipelines.release.cards.datacard import generated_note
from pipelines.release.check.diff import diff_releases
from pipelines.release.explorer import write as explorer_module
from pipelines.release.explorer import index as explorer_index, rows as explorer_rows, stats as explorer_stats
from pipelines.release.explorer.compat import CompatEntries
from pipelines.release.explorer.views import Compat, ExplorerView, ImageIndex, Join
from pipelines.release.explorer.write import PAGE_SIZE, views_for, write_explorer
from pipelines.release.write.manifest import GENERATED_CARD, verify_manifest
from pipelines.release.write.row_paths import IMAGE_TYPE
from schemas.columns import described
from tests.release.release_files import seal
from schemas.rejects import REJECT_SCHEMA, Reject, reject_to_row
from tests.release.explorer.explorer_pages import (index_column, load_data, load_index, network_references,
                                          page_files, view_cards)

SETS = ExplorerView("sets", "Sets", images=("image_paths",), image_notes=("scores",),
                    target="target", text=("caption",), figures=("score", "votes", "kind"))


def _image(path, colour, size=(320, 240)):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.new("RGB", size, colour).save(path)


def _release(root, version, rows, rejects=(), config=None, shards=1, built_from=None):
    """A version folder with a `sets` table (per split, `shards` Parquet files holding
    its rows round robin), rejects and a manifest as far as the diff reads it."""
    folder = os.path.join(root, "demo", version)
    os.makedirs(os.path.join(folder, "parquet", "sets"), exist_ok=True)
    for split in sorted({r["split"] for r in rows}):
        mine = [r for r in rows if r["split"] == split]
        for shard in range(shards):
            pq.write_table(pa.Table.from_pylist(mine[shard::shards]),
                           os.path.join(folder, "parquet", "sets", f"{split}-{shard:05d}-of-{shards:05d}.parquet"))
    os.makedirs(os.path.join(folder, "rejects"), exist_ok=True)
    pq.write_table(pa.Table.from_pylist([reject_to_row(r) for r in rejects], schema=REJECT_SCHEMA),
                   os.path.join(folder, "rejects", "rejects-00000-of-00001.parquet"))
    manifest = {"benchmark": "demo", "version": version, "config": config or {"t": 1},
                "counts": {"tables": {"sets": {}}}, "table_keys": {"sets": ["set_name"]}}
    if built_from:
        manifest["built_from"] = built_from
    json.dump(manifest, open(os.path.join(folder, "MANIFEST.json"), "w"))
    return folder


def _row(n, split="train", images=("compat/a.jpg", "compat/b.jpg")):
    return {"set_name": f"set{n:03d}", "split": split, "source": "src", "image_paths": list(images),
            "scores": [0.5, float("nan"), 0.9][:len(images)], "target": 1, "caption": f"caption {n}",
            "score": n / 7, "votes": n % 3, "kind": ["plain", "odd"][n % 2]}


def _rows():
    rows = [_row(n) for n in range(PAGE_SIZE + 6)] + [_row(100 + n, "test") for n in range(5)]
    rows.append(_row(200, "test", images=("compat/a.jpg", "compat/missing.jpg",
                                          "https://example.org/c.jpg")))
    return rows


def _rejects(root):
    rejects = [Reject("filter", "frame", "blurry", f"v/shot0/frame{n}", detail=f"brisque={0.6 + n / 100:.2f}")
               for n in range(3)]
    rejects.append(Reject("images", "image", "unreadable_image", "img7",
                          detail=f"{root}/demo/1.0.0/compat/a.jpg: OSError: truncated"))
    return rejects


@pytest.fixture
def release(tmp_path):
    root = str(tmp_path / "out")
    folder = _release(root, "1.0.0", _rows(), _rejects(root))
    _image(os.path.join(folder, "compat", "a.jpg"), "red")
    _image(os.path.join(folder, "compat", "b.jpg"), "blue", size=(1000, 400))
    return root, folder


def _write(folder, **kwargs):
    return write_explorer(folder, benchmark="demo", version=os.path.basename(folder),
                          tables={"sets": ("set_name",)}, views=(SETS,), **kwargs)


def _view(explorer, table="sets"):
    index = load_index(explorer)
    return index["rejects"] if table == "rejects" else {v["table"]: v for v in index["views"]}[table]


def test_every_row_is_a_card_in_split_source_key_order_with_its_groups(release):
    _, folder = release
    _write(folder)
    explorer = os.path.join(folder, "explorer")
    view = _view(explorer)
    assert view["rows"] == PAGE_SIZE + 12 and view["key"] == "set_name"
    assert view["group_by"] == ["split", "source"]
    assert view["groups"] == [{"split": "test", "source": "src", "start": 0, "count": 6},
                              {"split": "train", "source": "src", "start": 6, "count": PAGE_SIZE + 6}]
    assert len(load_data(explorer, "items/0/cards/0")) == PAGE_SIZE
    assert len(load_data(explorer, "items/0/cards/1")) == 12
    assert not os.path.exists(os.path.join(explorer, "data", "items", "0", "cards", "2.js"))
    cards = view_cards(explorer, view, PAGE_SIZE)
    assert [c["k"] for c in cards] == [f"set{n:03d}" for n in (*range(100, 105), 200, *range(PAGE_SIZE + 6))]
    first = cards[6]   # set000
    assert (view["text"], view["figures"]) == (["caption"], ["score", "votes", "kind"])
    assert first["x"] == ["caption 0"] and first["f"] == ["0", "0", "plain"]
    assert (first["s"], first["o"]) == ("train", "src")
    assert [i.get("target", False) for i in first["i"]] == [False, True]
    assert [i["l"] for i in first["i"]] == [["0.5"], ["n/a"]]
    for name in ("index.html", "explorer.js", "explorer.css"):
        assert os.path.isfile(os.path.join(explorer, name))


def test_the_search_index_holds_keys_texts_facets_and_figures(release, monkeypatch):
    """Columns in chunks (here of 8 rows), the same rows in the same order as the cards;
    repeated text written once per chunk; facets with their counts; numeric ranges; the
    least and greatest of a numeric image note (a set's best and worst score)."""
    monkeypatch.setattr(explorer_index, "CHUNK_ROWS", 8)
    _, folder = release
    _write(folder)
    explorer = os.path.join(folder, "explorer")
    view = _view(explorer)
    cards = view_cards(explorer, view, PAGE_SIZE)
    rows = {r["set_name"]: r for r in _rows()}
    ordered = [rows[c["k"]] for c in cards]
    meta = {c["name"]: c for c in view["index"]["columns"]}
    assert view["index"]["rows"] == len(cards) and view["index"]["chunk_rows"] == 8
    assert meta["set_name"]["chunks"] == [0, 1, 2, 3, 4]
    assert index_column(explorer, view, "set_name") == [r["set_name"] for r in ordered]
    assert index_column(explorer, view, "caption") == [r["caption"] for r in ordered]
    assert index_column(explorer, view, "score") == [float(f"{r['score']:.6g}") for r in ordered]
    assert index_column(explorer, view, "scores max") == [0.5 if len(r["image_paths"]) == 2 else 0.9
                                                          for r in ordered]
    assert index_column(explorer, view, "images")[0] == "a.jpg b.jpg"
    # split repeats within a chunk: written once, with a code per row
    split_chunk = load_data(explorer, f"items/0/index/{meta['split']['n']}/0")
    assert split_chunk == {"v": ["test", "train"], "c": [0] * 6 + [1] * 2}
    kinds, votes = Counter(r["kind"] for r in ordered), Counter(r["votes"] for r in ordered)
    assert meta["kind"]["facet"] == [["odd", kinds["odd"]], ["plain", kinds["plain"]]]
    assert meta["votes"]["facet"] == [[str(v), votes[v]] for v in (0, 1, 2)]   # few integers: a facet too
    assert (meta["votes"]["min"], meta["votes"]["max"]) == (0, 2)
    assert meta["score"]["kind"] == "number" and "facet" not in meta["score"]
    assert "facet" not in meta["set_name"] and "facet" not in meta["caption"]   # a key, prose
    assert "facet" not in meta["source"]   # one value: nothing to choose
    assert meta["caption"]["kind"] == "text" and meta["images"]["kind"] == "text"


def test_the_order_does_not_depend_on_how_the_runner_sharded_the_table(release, tmp_path):
    """The same rows in other files and another order: the same explorer, file for file."""
    root, folder = release
    _write(folder)
    rows = _rows()
    other = _release(str(tmp_path / "other"), "1.0.0", rows[::-1], _rejects(root)[::-1], shards=3)
    for name in ("a.jpg", "b.jpg"):
        shutil.copytree(os.path.join(folder, "compat"), os.path.join(other, "compat"), dirs_exist_ok=True)
    _write(other)
    a, b = os.path.join(folder, "explorer"), os.path.join(other, "explorer")
    assert page_files(a) == page_files(b)
    match, mismatch, errors = filecmp.cmpfiles(a, b, page_files(a), shallow=False)
    # only where a row is differs: its file's name and its row in it (the row view's "p")
    assert errors == [] and mismatch == ["data/index.js", "data/items/0/rows/0.js", "data/items/0/rows/1.js"]
    assert _unlocated(a) == _unlocated(b)
    for explorer, version in ((a, folder), (b, other)):   # each locates its rows truly
        view = _view(explorer)
        for card, whole in zip(view_cards(explorer, view, PAGE_SIZE), _whole_rows(explorer, view)):
            file, row = whole["p"]
            located = pq.read_table(os.path.join(version, view["files"][file])).slice(row, 1)
            assert located["set_name"].to_pylist() == [card["k"]]


def _whole_rows(explorer, view):
    chunks = -(-view["rows"] // PAGE_SIZE)
    return [r for n in range(chunks) for r in load_data(explorer, f"{view['path']}/rows/{n}")]


def _unlocated(explorer):
    """The index and whole rows without where each row is."""
    index = load_index(explorer)
    view = index["views"][0]
    rows = [{k: v for k, v in r.items() if k != "p"} for r in _whole_rows(explorer, view)]
    view.pop("files")
    return index, rows


def test_keys_are_in_natural_order(tmp_path):
    """A person reads dev-9 before dev-10 (NLVR2's sets, ImageCoDe's frames)."""
    folder = str(tmp_path / "demo" / "1.0.0")
    os.makedirs(f"{folder}/parquet/sets")
    names = ["dev-10", "dev-9", "dev-100", "dev-9-1", "dev-09"]
    pq.write_table(pa.Table.from_pylist([{"set_name": n, "split": "dev"} for n in names]),
                   f"{folder}/parquet/sets/dev-00000-of-00001.parquet")
    write_explorer(folder, benchmark="demo", version="1.0.0", tables={"sets": ("set_name",)})
    explorer = os.path.join(folder, "explorer")
    assert [c["k"] for c in view_cards(explorer, _view(explorer), PAGE_SIZE)] == \
        ["dev-09", "dev-9", "dev-9-1", "dev-10", "dev-100"]


def test_tables_are_read_in_batches_never_whole(release, monkeypatch):
    """Memory is bounded by a batch: with batches of two rows and index chunks of five,
    the explorer is the same as with the defaults, and no table is ever read whole."""
    _, folder = release
    _write(folder)
    expected = os.path.join(folder, "explorer-default")
    os.rename(os.path.join(folder, "explorer"), expected)
    batches = []
    real = pq.ParquetFile.iter_batches

    def iter_batches(self, batch_size, **kwargs):
        for batch in real(self, batch_size=batch_size, **kwargs):
            batches.append(batch.num_rows)
            yield batch

    def whole(*args, **kwargs):
        raise AssertionError("a whole table was read")

    monkeypatch.setattr(explorer_rows, "BATCH_ROWS", 2)
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", iter_batches)
    monkeypatch.setattr(pq.ParquetFile, "read", whole)
    monkeypatch.setattr(pq, "read_table", whole)
    _write(folder)
    assert batches and max(batches) == 2
    got = os.path.join(folder, "explorer")
    match, mismatch, errors = filecmp.cmpfiles(expected, got, page_files(expected), shallow=False)
    assert page_files(expected) == page_files(got) and mismatch == [] and errors == []


def test_heavy_rows_are_read_fewer_at_a_time(tmp_path, monkeypatch):
    """A batch is bounded in bytes too, not only in rows: a table whose rows carry their
    images (ImageCoDe's sets, ten JPEGs a row) is read a few rows at a time, its light
    columns alone and a light table BATCH_ROWS at a time, every row once."""
    folder = tmp_path / "sets"
    folder.mkdir()
    noise = np.random.default_rng(0)   # incompressible, as JPEG bytes are
    rows = [{"set_name": f"s{i:02d}", "images": [noise.bytes(10_000) for _ in range(10)]}
            for i in range(40)]
    pq.write_table(pa.Table.from_pylist(rows), str(folder / "all.parquet"), row_group_size=4)
    monkeypatch.setattr(explorer_rows, "BATCH_BYTES", 250_000)   # about two rows of images
    heavy = [b.num_rows for b in explorer_rows.read_batches(str(folder))]
    assert sum(heavy) == 40 and max(heavy) <= 3
    light = [b.num_rows for b in explorer_rows.read_batches(str(folder), ["set_name"])]
    assert light == [40]
    names = [r["set_name"] for batch in explorer_rows.read_rows(str(folder)) for r in batch]
    assert names == [r["set_name"] for r in rows]


def test_images_are_small_shared_thumbnails_absent_ones_named_urls_linked(release):
    _, folder = release
    _write(folder)
    explorer = os.path.join(folder, "explorer")
    cards = {c["k"]: c for c in view_cards(explorer, _view(explorer), PAGE_SIZE)}
    shown = cards["set200"]["i"]
    # a URL's name is its last part (the page derives it); it is a link, never loaded
    assert [i.get("n") for i in shown] == ["a.jpg", "missing.jpg", None]
    assert shown[0]["t"] and "t" not in shown[1] and "t" not in shown[2]
    assert shown[2]["u"] == "https://example.org/c.jpg" and "u" not in shown[0]
    assert shown[0]["t"] == cards["set100"]["i"][0]["t"]                  # one per image
    thumbs = [os.path.join(d, n) for d, _, names in os.walk(os.path.join(explorer, "thumbs"))
              for n in names]
    assert len(thumbs) == 2
    for path in thumbs:
        with Image.open(path) as image:
            assert image.format == "JPEG" and max(image.size) == 128
        assert os.path.getsize(path) < 8000


def test_image_links_name_each_images_url_and_stand_in_for_an_empty_column(tmp_path):
    """VSR's COCO links, NLVR2's URLs: a link beside a local image, and the image itself
    where the images column is empty (released NLVR2 files hold URLs only)."""
    folder = str(tmp_path / "demo" / "1.0.0")
    _image(f"{folder}/img/left.png", "green")
    rows = [{"id": "a", "split": "dev", "source": "s", "left": f"{folder}/img/left.png",
             "left_url": "https://example.org/x/left.png?size=big"},
            {"id": "b", "split": "dev", "source": "s", "left": "", "left_url": "https://example.org/y/right.jpg"}]
    os.makedirs(f"{folder}/parquet/pairs")
    pq.write_table(pa.Table.from_pylist(rows), f"{folder}/parquet/pairs/dev-00000-of-00001.parquet")
    view = ExplorerView("pairs", images=("left",), image_links=("left_url",))
    write_explorer(folder, benchmark="demo", version="1.0.0", tables={"pairs": ("id",)},
                   views=(view,))
    explorer = os.path.join(folder, "explorer")
    a, b = view_cards(explorer, _view(explorer, "pairs"), PAGE_SIZE)
    # the name is the URL's last part, "left.png", as the file's: the page derives it
    assert a["i"] == [{"t": a["i"][0]["t"], "u": rows[0]["left_url"]}] and a["i"][0]["t"]
    assert b["i"] == [{"u": "https://example.org/y/right.jpg"}]
    with pytest.raises(ValueError, match="image_links needs one column per images column"):
        ExplorerView("pairs", images=("left", "right"), image_links=("left_url",))


def test_nothing_refers_to_the_network_and_the_policy_forbids_it(release):
    _, folder = release
    _write(folder)
    explorer = os.path.join(folder, "explorer")
    assert network_references(explorer) == []
    html = open(os.path.join(explorer, "index.html")).read()
    assert "Content-Security-Policy" in html and "default-src 'self' 'unsafe-inline' file: data:" in html
    assert "fetch(" not in open(os.path.join(explorer, "explorer.js")).read()


def test_every_reject_is_a_card_with_the_figures_of_its_detail(release, monkeypatch):
    _, folder = release
    monkeypatch.setattr(explorer_module, "PAGE_SIZE", 2)
    _write(folder)
    explorer = os.path.join(folder, "explorer")
    rejects = _view(explorer, "rejects")
    assert rejects["total"] == rejects["rows"] == 4 and rejects["group_by"] == ["reason"]
    by_reason = {g["reason"]: g for g in rejects["groups"]}
    assert by_reason["blurry"] == {"reason": "blurry", "start": 0, "count": 3,
                                   "stages": {"filter/frame": 3}}
    cards = view_cards(explorer, rejects, 2)   # every one, past the first page of its reason
    assert [c["k"] for c in cards] == ["v/shot0/frame0", "v/shot0/frame1", "v/shot0/frame2", "img7"]
    assert [c["r"] for c in cards] == ["blurry"] * 3 + ["unreadable_image"]
    assert cards[0]["x"] == ["brisque=0.60"] and cards[0]["m"] == [["brisque", "0.60"]]
    assert rejects["figures"] == ["stage", "level", "video_id", "input"] and cards[0]["f"][:2] == ["filter", "frame"]
    assert index_column(explorer, rejects, "brisque") == [0.6, 0.61, 0.62, None]   # a range, a sort
    meta = {c["name"]: c for c in rejects["index"]["columns"]}
    assert meta["brisque"]["kind"] == "number" and meta["reason"]["facet"] == [["blurry", 3], ["unreadable_image", 1]]
    assert [i["n"] for i in cards[3]["i"]] == ["a.jpg"] and cards[3]["i"][0]["t"]


def test_a_benchmark_pictures_the_first_page_of_each_reason(release, monkeypatch):
    """reject_images (e.g. ImageCoDe's frames decoded from their video) is asked once,
    for the first page of each reason; the pixels become thumbnails."""
    _, folder = release
    monkeypatch.setattr(explorer_module, "PAGE_SIZE", 2)
    asked = []

    def frames(rows):
        asked.append(sorted(r["item_id"] for r in rows))
        return {r["item_id"]: np.full((60, 80, 3), 40 * i, np.uint8)
                for i, r in enumerate(rows) if r["reason"] == "blurry"}

    _write(folder, reject_images=frames)
    explorer = os.path.join(folder, "explorer")
    assert asked == [["img7", "v/shot0/frame0", "v/shot0/frame1"]]
    cards = view_cards(explorer, _view(explorer, "rejects"), 2)
    assert [c["i"][0]["n"] for c in cards[:2]] == ["frame0", "frame1"]
    for card in cards[:2]:
        with Image.open(os.path.join(explorer, card["i"][0]["t"])) as image:
            assert image.size == (80, 60)
    assert "i" not in cards[2]


def test_every_column_has_its_statistics(release, monkeypatch):
    monkeypatch.setattr(explorer_stats, "DISTINCT_CAP", 20)
    _, folder = release
    _write(folder)
    explorer = os.path.join(folder, "explorer")
    stats = load_data(explorer, "items/0/stats")
    rows = _rows()
    by_name = {c["name"]: c for c in stats["columns"]}
    assert stats["rows"] == len(rows) and list(by_name) == list(rows[0])
    score = by_name["score"]
    values = [r["score"] for r in rows]
    assert (score["kind"], score["type"], score["missing"], score["count"]) == ("number", "double", 0, len(rows))
    assert score["min"] == 0 and score["max"] == pytest.approx(max(values), rel=1e-5)
    assert score["mean"] == pytest.approx(sum(values) / len(values), rel=1e-5)
    assert sum(score["histogram"]["counts"]) == len(rows) and len(score["histogram"]["counts"]) == 20
    votes = Counter(r["votes"] for r in rows)   # integers over a narrow range: one bin per value
    assert by_name["votes"]["histogram"] == {"edges": [-0.5, 0.5, 1.5, 2.5],
                                             "counts": [votes[0], votes[1], votes[2]]}
    kinds = Counter(r["kind"] for r in rows)
    assert (by_name["kind"]["distinct"], by_name["kind"]["top"]) == (
        2, [["plain", kinds["plain"]], ["odd", kinds["odd"]]])
    assert by_name["set_name"]["distinct"] == "more than 20" and "top" not in by_name["set_name"]
    scores = by_name["scores"]   # a list: lengths, and its elements (NaN is missing)
    assert scores["kind"] == "list" and scores["length"] == {"min": 2, "max": 3, "mean": pytest.approx(2.02778)}
    assert scores["elements"]["missing"] == len(rows) and scores["elements"]["max"] == 0.9
    rejects = load_data(explorer, "rejects/stats")
    assert rejects["rows"] == 4 and {c["name"] for c in rejects["columns"]} == set(REJECT_SCHEMA.names)


def test_the_diff_names_its_rows_and_keeps_the_removed_and_changed_as_they_were(release):
    root, old = release
    _write(old)
    rows = [_row(n) for n in range(1, PAGE_SIZE + 6)] + [_row(100 + n, "test") for n in range(5)]
    rows += [_row(0, "test"), _row(300, "test", images=("compat/a.jpg",))]
    rows[0]["image_paths"] = ["compat/b.jpg"]   # set001: other images, same name
    new = _release(root, "1.1.0", rows, config={"t": 2})
    _image(os.path.join(new, "compat", "a.jpg"), "red")
    _image(os.path.join(new, "compat", "b.jpg"), "blue", size=(1000, 400))
    diff = diff_releases(seal(old), seal(new))   # the diff reads published releases only
    written = _write(new, diff=diff, previous_dir=old)
    assert written["thumbnails"] == {"made": 0, "reused": 2, "unreadable": 0}
    explorer = os.path.join(new, "explorer")
    shown = load_index(explorer)["diff"]
    assert (shown["from"], shown["to"]) == ("1.0.0", "1.1.0")
    assert shown["config"] == [{"key": "t", "from": 1, "to": 2}]
    table, = shown["tables"]
    assert (table["table"], table["view"]) == ("sets", 0)
    assert table["counts"] == {"added": 1, "removed": 1, "moved": 1, "changed": 1}
    keys = load_data(explorer, table["path"])
    assert (keys["added"], keys["removed"], keys["changed"]) == (["set300"], ["set200"], ["set001"])
    assert keys["moved"] == [["set000", "train", "test"]]
    # added, moved and changed rows are the view's own cards; the others as they were
    now = {c["k"] for c in view_cards(explorer, _view(explorer), PAGE_SIZE)}
    assert {"set300", "set000", "set001"} <= now and "set200" not in now
    assert keys["before"] == ["set200", "set001"]   # (split, source, key) order of 1.0.0
    removed, changed = load_data(explorer, f"{table['path']}/before/0")
    assert removed["k"] == "set200" and removed["s"] == "test" and keys["before_figures"] == ["score", "votes", "kind"]
    assert removed["i"][0]["t"] and "t" not in removed["i"][1]
    assert changed["k"] == "set001" and [i["n"] for i in changed["i"]] == ["a.jpg", "b.jpg"]


def test_the_same_release_gives_the_same_explorer(release, tmp_path):
    _, folder = release
    copy = str(tmp_path / "copy" / "demo" / "1.0.0")
    shutil.copytree(folder, copy)
    _write(folder)
    _write(copy)
    a, b = os.path.join(folder, "explorer"), os.path.join(copy, "explorer")
    assert page_files(a) == page_files(b)
    match, mismatch, errors = filecmp.cmpfiles(a, b, page_files(a), shallow=False)
    assert mismatch == [] and errors == []


def test_declared_views_of_absent_tables_are_dropped_and_others_get_a_plain_view(release):
    assert [v.table for v in views_for(["sets", "extra"], (SETS, ExplorerView("absent")))] == \
        ["sets", "extra"]
    _, folder = release
    write_explorer(folder, benchmark="demo", version="1.0.0", tables={"sets": ("set_name",)})
    explorer = os.path.join(folder, "explorer")
    view = _view(explorer)
    card = view_cards(explorer, view, PAGE_SIZE)[0]
    # a plain view: the key, then every scalar column as a figure; no images
    assert "i" not in card and dict(zip(view["figures"], card["f"])) == {
        "caption": "caption 100", "score": "14.29", "target": "1", "votes": "1", "kind": "plain"}


def test_a_join_and_an_image_index_resolve_ids_to_files(tmp_path):
    folder = str(tmp_path / "demo" / "1.0.0")
    for table, rows in {"captions": [{"caption_id": "c1", "image_id": "i1", "split": "test", "source": "s"}],
                        "similar": [{"target": "i1", "members": ["i1", "i2"], "split": "test", "source": "s"}],
                        "pool": [{"image_id": "i1", "path": f"{folder}/img/1.png", "split": "test", "source": "s"},
                                 {"image_id": "i2", "path": f"{folder}/img/2.png", "split": "test", "source": "s"}]}.items():
        os.makedirs(f"{folder}/parquet/{table}")
        pq.write_table(pa.Table.from_pylist(rows), f"{folder}/parquet/{table}/test-00000-of-00001.parquet")
    _image(f"{folder}/img/1.png", "green")
    _image(f"{folder}/img/2.png", "yellow")
    os.makedirs(f"{folder}/rejects")
    pq.write_table(pa.Table.from_pylist([reject_to_row(Reject("pool", "member", "already_in_pool", "i2"))],
                                        schema=REJECT_SCHEMA), f"{folder}/rejects/r.parquet")
    view = ExplorerView("captions", images=("similar.members",), target=0,
                        join=(Join("similar", on="image_id", key="target"),),
                        image_index=ImageIndex("pool", "image_id", "path"))
    write_explorer(folder, benchmark="demo", version="1.0.0", tables={"captions": ("caption_id",)},
                   views=(view,))
    explorer = os.path.join(folder, "explorer")
    card, = view_cards(explorer, _view(explorer, "captions"), PAGE_SIZE)
    assert [i["n"] for i in card["i"]] == ["i1", "i2"]
    assert all(i["t"] for i in card["i"]) and card["i"][0]["target"]
    reject, = view_cards(explorer, _view(explorer, "rejects"), PAGE_SIZE)
    assert reject["i"] == [dict(card["i"][1])]   # a rejected pool id, pictured


def test_a_release_without_rows_or_rejects_has_an_explorer(tmp_path):
    folder = str(tmp_path / "demo" / "1.0.0")
    os.makedirs(f"{folder}/parquet/sets")
    pq.write_table(pa.Table.from_pylist([], schema=pa.schema([("set_name", pa.string()), ("split", pa.string())])),
                   f"{folder}/parquet/sets/sets-00000-of-00001.parquet")
    write_explorer(folder, benchmark="demo", version="1.0.0", tables={"sets": ("set_name",)},
                   views=(SETS,))
    explorer = os.path.join(folder, "explorer")
    view, rejects = _view(explorer), _view(explorer, "rejects")
    assert (view["rows"], view["groups"], rejects["rows"]) == (0, [], 0)
    assert load_data(explorer, "items/0/stats")["rows"] == 0


def test_no_explorer_builds_a_release_without_one(tmp_path):
    release = build.build("vsr", ["--config", "sample", "--output", str(tmp_path), "--version",
                                  "1.0.0", "--quiet", "--no-explorer"])
    assert not os.path.exists(os.path.join(release, "explorer"))
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert "explorer" not in manifest and verify_manifest(release) == []
    assert manifest["built_from"] == "sample"   # what the explorer's changes read


def _described_release(tmp_path):
    """A `pairs` table with descriptions, a ClassLabel, a list, a NaN, no value and an
    embedded image (bytes), in two files; compat/ files of each kind naming its rows."""
    folder = str(tmp_path / "demo" / "1.0.0")
    schema = described(pa.schema([("id", pa.string()), ("split", pa.string()), ("label", pa.int64()),
                                  ("votes", pa.list_(pa.string())), ("score", pa.float64()),
                                  ("note", pa.string()), ("image", IMAGE_TYPE)]),
                       {"id": "the pair", "split": "its split", "label": "1 when true",
                        "votes": "who voted", "score": "a score", "note": "a note",
                        "image": "the image"}, class_names={"label": ("False", "True")})
    rows = [{"id": f"{split}-{n}", "split": split, "label": n % 2, "votes": ["v1", "v2"][:n],
             "score": float("nan") if n == 1 else n / 4, "note": None if n else "first",
             "image": {"bytes": b"\xff" * (100 + n), "path": f"compat/{n}.jpg"}}
            for split in ("dev", "test") for n in range(3)]
    os.makedirs(f"{folder}/parquet/pairs")
    for split in ("dev", "test"):
        pq.write_table(pa.Table.from_pylist([r for r in rows if r["split"] == split], schema=schema),
                       f"{folder}/parquet/pairs/{split}-00000-of-00001.parquet")
    os.makedirs(f"{folder}/compat/more")
    with open(f"{folder}/compat/dev.json", "w") as f:   # JSON lines (NLVR2's .json files)
        f.writelines(json.dumps({"identifier": f"dev-{n}", "x": n}) + "\n" for n in (2, 0, 1))
    with open(f"{folder}/compat/more/all.csv", "w") as f:
        f.write('identifier,text\ntest-1,"two\nlines"\ntest-0,plain\n')
    json.dump([{"identifier": "test-2"}, {"identifier": "dev-0"}], open(f"{folder}/compat/list.json", "w"))
    json.dump({"dev-0": {"y": 1}, "test-2": [1, 2]}, open(f"{folder}/compat/by_name.json", "w"), indent=1)
    return folder, rows


def test_every_row_is_kept_whole_with_its_file_row_and_class_names(tmp_path):
    """The row view's data: every column of the row as its table holds it (a list as
    JSON, NaN, no value, an embedded image by its size), the Parquet file and row it is
    in, and the columns with their descriptions and ClassLabel names."""
    folder, rows = _described_release(tmp_path)
    write_explorer(folder, benchmark="demo", version="1.0.0", tables={"pairs": ("id",)},
                   views=(ExplorerView("pairs", figures=("label",)),))
    explorer = os.path.join(folder, "explorer")
    view = _view(explorer, "pairs")
    assert view["files"] == ["parquet/pairs/dev-00000-of-00001.parquet",
                             "parquet/pairs/test-00000-of-00001.parquet"]
    assert [c["name"] for c in view["columns"]] == list(rows[0])
    assert view["columns"][2] == {"name": "label", "type": "int64", "d": "1 when true",
                                  "labels": ["False", "True"]}
    assert view["columns"][6]["type"].startswith("struct<bytes: binary")
    assert view["compat"] is False
    cards, whole = view_cards(explorer, view, PAGE_SIZE), _whole_rows(explorer, view)
    assert [c["k"] for c in cards] == [r["id"] for r in rows]
    assert whole[0] == {"p": [0, 0], "v": ["dev-0", "dev", "0", "[]", "0.0", "first",
                                           '{"bytes": "<100 bytes>", "path": "compat/0.jpg"}']}
    assert whole[1]["v"][3:6] == ['["v1"]', "NaN", None]
    assert [w["p"] for w in whole] == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]


def test_a_row_names_its_entries_in_compat(tmp_path):
    """JSON lines and CSV rows by line (a quoted newline counted), JSON list items by
    number, JSON object members by name; every entry of a row, none where it has none."""
    folder, rows = _described_release(tmp_path)
    lines = Compat(("compat/*.json", "compat/more/*.csv"), (("identifier", "id"),))
    members = Compat(("compat/by_name.json",), (("", "id"),))
    with explorer_rows.RowStore() as store:
        by_field = CompatEntries(store, folder, lines, "now")
        by_name = CompatEntries(store, folder, members, "now")
        assert by_field.of({"id": "dev-0"}) == [["compat/dev.json", "line 2"], ["compat/list.json", "item 1"]]
        assert by_field.of({"id": "test-0"}) == [["compat/more/all.csv", "line 4"]]
        assert by_field.of({"id": "test-9"}) == []
        assert by_name.of({"id": "test-2"}) == [["compat/by_name.json", '"test-2"']]
    write_explorer(folder, benchmark="demo", version="1.0.0", tables={"pairs": ("id",)},
                   views=(ExplorerView("pairs", compat=lines),))
    explorer = os.path.join(folder, "explorer")
    view = _view(explorer, "pairs")
    assert view["compat"] is True
    assert {c["k"]: w["c"] for c, w in zip(view_cards(explorer, view, PAGE_SIZE), _whole_rows(explorer, view))} == {
        "dev-0": [["compat/dev.json", "line 2"], ["compat/list.json", "item 1"]],
        "dev-1": [["compat/dev.json", "line 3"]], "dev-2": [["compat/dev.json", "line 1"]],
        "test-0": [["compat/more/all.csv", "line 4"]], "test-1": [["compat/more/all.csv", "line 3"]],
        "test-2": [["compat/list.json", "item 0"]]}


@pytest.mark.parametrize("before, now, refused", [
    ("sample", "inputs", True), ("inputs", "sample", True), ("inputs", "inputs", False),
    ("card: sample", "inputs", True), ("card: inputs", "inputs", False), (None, "inputs", False)])
def test_the_changes_name_the_previous_version_and_refuse_a_sample_against_real_inputs(
        release, before, now, refused):
    """A release built from the generated sample is never compared with one built from
    real inputs (MANIFEST.json built_from; for a release built before manifests said,
    its data card); a previous version that says neither is compared."""
    root, old = release
    if before and before.startswith("card: "):   # an older release: only its card says
        generated = before == "card: sample"
        with open(os.path.join(old, "DATACARD.md"), "w") as f:
            f.write("# demo 1.0.0\n\n" + (generated_note("demo", "pipelines/demo/sample.py") if generated else "Built from a collection.") + "\n")
    elif before:
        manifest = json.load(open(os.path.join(old, "MANIFEST.json")))
        json.dump(dict(manifest, built_from=before), open(os.path.join(old, "MANIFEST.json"), "w"))
    new = _release(root, "1.1.0", _rows()[1:], built_from=now)
    diff = diff_releases(seal(old), seal(new))
    _write(new, diff=diff, previous_dir=old, built_from=now)
    explorer = os.path.join(new, "explorer")
    shown = load_index(explorer)["diff"]
    expected_before = before.replace("card: ", "") if before else None
    assert shown["previous"] == {"benchmark": "demo", "version": "1.0.0", "built_from": expected_before,
                                 "explorer": "../../1.0.0/explorer/index.html"}
    assert shown["built_from"] == now
    if refused:
        assert "compares none of them" in shown["refused"] and shown["tables"] == []
        assert not os.path.exists(os.path.join(explorer, "data", "diff"))
    else:
        assert "refused" not in shown and shown["tables"][0]["counts"]["removed"] == 1


def test_a_changed_rows_changed_fields_are_named_with_both_values(release):
    root, old = release
    rows = _rows()
    rows[1]["image_paths"] = ["compat/b.jpg"]
    rows[1]["votes"] = 7
    rows[2]["caption"] = "new words"
    new = _release(root, "1.1.0", rows)
    _write(new, diff=diff_releases(seal(old), seal(new)), previous_dir=old)
    explorer = os.path.join(new, "explorer")
    table, = load_index(explorer)["diff"]["tables"]
    before = {c["k"]: c for c in load_data(explorer, f"{table['path']}/before/0")}
    assert before["set001"]["d"] == [["image_paths", '["compat/a.jpg", "compat/b.jpg"]', '["compat/b.jpg"]'],
                                     ["votes", "1", "7"]]
    assert before["set002"]["d"] == [["caption", "caption 2", "new words"]]


def test_the_sample_data_card_says_what_an_older_manifest_does_not():
    """built_from_of reads an older release's data card: its generated note must hold
    the words it looks for."""
    assert GENERATED_CARD in generated_note("nlvr2", "pipelines/nlvr2/sample.py")
