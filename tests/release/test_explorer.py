"""The release explorer's files (pipelines/release/explorer.py), without a browser: cards
per page, paging, thumbnails, rejects, the diff, no network reference, determinism.
tests/release/test_explorer_browser.py opens the sample releases in Chromium."""
import filecmp
import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from pipelines import runner
from pipelines.release import explorer as explorer_module
from pipelines.release.diff import diff_releases
from pipelines.release.explorer import PAGE_SIZE, views_for, write_explorer
from pipelines.release.explorer_views import ExplorerView, ImageIndex, Join
from pipelines.release.manifest import verify_manifest
from schemas.rejects import REJECT_SCHEMA, Reject, reject_to_row
from tests.release.explorer_pages import (all_cards, load_index, load_page, network_references,
                                          page_files)

SETS = ExplorerView("sets", "Sets", images=("image_paths",), image_notes=("scores",),
                    target="target", text=("caption",), figures=("score",))


def _image(path, colour, size=(320, 240)):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.new("RGB", size, colour).save(path)


def _release(root, version, rows, rejects=(), config=None):
    """A version folder with a `sets` table (one Parquet file per split), rejects and a
    manifest as far as the diff reads it."""
    folder = os.path.join(root, "demo", version)
    for split in sorted({r["split"] for r in rows}):
        table = pa.Table.from_pylist([r for r in rows if r["split"] == split])
        os.makedirs(os.path.join(folder, "parquet", "sets"), exist_ok=True)
        pq.write_table(table, os.path.join(folder, "parquet", "sets", f"{split}-00000-of-00001.parquet"))
    os.makedirs(os.path.join(folder, "rejects"), exist_ok=True)
    pq.write_table(pa.Table.from_pylist([reject_to_row(r) for r in rejects], schema=REJECT_SCHEMA),
                   os.path.join(folder, "rejects", "rejects-00000-of-00001.parquet"))
    manifest = {"benchmark": "demo", "version": version, "config": config or {"t": 1},
                "counts": {"tables": {"sets": {}}}, "table_keys": {"sets": ["set_name"]}}
    json.dump(manifest, open(os.path.join(folder, "MANIFEST.json"), "w"))
    return folder


def _row(n, split="train", images=("compat/a.jpg", "compat/b.jpg")):
    return {"set_name": f"set{n:03d}", "split": split, "source": "src", "image_paths": list(images),
            "scores": [0.5, float("nan")][:len(images)], "target": 1, "caption": f"caption {n}",
            "score": n / 7}


@pytest.fixture
def release(tmp_path):
    root = str(tmp_path / "out")
    rows = [_row(n) for n in range(PAGE_SIZE + 6)] + [_row(100 + n, "test") for n in range(5)]
    rows.append(_row(200, "test", images=("compat/a.jpg", "compat/missing.jpg",
                                          "https://example.org/c.jpg")))
    rejects = [Reject("filter", "frame", "blurry", f"v/shot0/frame{n}", detail=f"brisque={0.6 + n / 100:.2f}")
               for n in range(3)]
    rejects.append(Reject("images", "image", "unreadable_image", "img7",
                          detail=f"{root}/demo/1.0.0/compat/a.jpg: OSError: truncated"))
    folder = _release(root, "1.0.0", rows, rejects)
    _image(os.path.join(folder, "compat", "a.jpg"), "red")
    _image(os.path.join(folder, "compat", "b.jpg"), "blue", size=(1000, 400))
    return root, folder


def _write(folder, **kwargs):
    return write_explorer(folder, benchmark="demo", version=os.path.basename(folder),
                          tables={"sets": ("set_name",)}, views=(SETS,), **kwargs)


def test_every_row_is_a_card_on_pages_of_page_size(release):
    _, folder = release
    _write(folder)
    explorer = os.path.join(folder, "explorer")
    view, = load_index(explorer)["views"]
    groups = {(g["split"], g["source"]): g for g in view["groups"]}
    assert {k: (g["items"], g["pages"]) for k, g in groups.items()} == {
        ("test", "src"): (6, 1), ("train", "src"): (PAGE_SIZE + 6, 2)}
    train = groups[("train", "src")]
    assert len(load_page(explorer, train["path"], 1)) == PAGE_SIZE
    assert len(load_page(explorer, train["path"], 2)) == 6
    cards = all_cards(explorer, train["path"], train["pages"])
    assert [c["key"] for c in cards] == [f"set{n:03d}" for n in range(PAGE_SIZE + 6)]
    first = cards[0]
    assert first["text"] == [["caption", "caption 0"]] and first["figures"] == [["score", "0"]]
    assert [i.get("target", False) for i in first["images"]] == [False, True]
    assert [i["l"] for i in first["images"]] == [["0.5"], ["n/a"]]
    assert not os.path.exists(os.path.join(explorer, "data", train["path"], "3.js"))
    for name in ("index.html", "explorer.js", "explorer.css"):
        assert os.path.isfile(os.path.join(explorer, name))


def test_images_are_small_shared_thumbnails_and_absent_ones_are_named(release):
    _, folder = release
    _write(folder)
    explorer = os.path.join(folder, "explorer")
    groups = {g["split"]: g for g in load_index(explorer)["views"][0]["groups"]}
    cards = {c["key"]: c for c in all_cards(explorer, groups["test"]["path"], 1)}
    shown = cards["set200"]["images"]
    assert [i["n"] for i in shown] == ["a.jpg", "missing.jpg", "c.jpg"]
    assert shown[0]["t"] and shown[1]["t"] is None and shown[2]["t"] is None   # never fetched
    assert shown[0]["t"] == cards["set100"]["images"][0]["t"]                  # one per image
    thumbs = [os.path.join(d, n) for d, _, names in os.walk(os.path.join(explorer, "thumbs"))
              for n in names]
    assert len(thumbs) == 2
    for path in thumbs:
        with Image.open(path) as image:
            assert image.format == "JPEG" and max(image.size) == 128
        assert os.path.getsize(path) < 8000


def test_nothing_refers_to_the_network_and_the_policy_forbids_it(release):
    _, folder = release
    _write(folder)
    explorer = os.path.join(folder, "explorer")
    assert network_references(explorer) == []
    html = open(os.path.join(explorer, "index.html")).read()
    assert "Content-Security-Policy" in html and "default-src 'self' 'unsafe-inline' file: data:" in html
    assert "fetch(" not in open(os.path.join(explorer, "explorer.js")).read()


def test_rejects_by_reason_with_the_figures_of_their_detail(release, monkeypatch):
    _, folder = release
    monkeypatch.setattr(explorer_module, "REJECT_EXAMPLES", 2)
    _write(folder)
    explorer = os.path.join(folder, "explorer")
    rejects = load_index(explorer)["rejects"]
    assert rejects["total"] == 4
    by_reason = {r["reason"]: r for r in rejects["reasons"]}
    blurry = by_reason["blurry"]
    assert (blurry["count"], blurry["shown"], blurry["stages"]) == (3, 2, {"filter/frame": 3})
    cards = load_page(explorer, blurry["path"], 1)
    assert [c["key"] for c in cards] == ["v/shot0/frame0", "v/shot0/frame1"]
    assert ["brisque", "0.60"] in cards[0]["figures"]
    unreadable, = load_page(explorer, by_reason["unreadable_image"]["path"], 1)
    assert [i["n"] for i in unreadable["images"]] == ["a.jpg"] and unreadable["images"][0]["t"]


def test_a_benchmark_pictures_rejects_of_the_first_page(release, monkeypatch):
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
    blurry = {r["reason"]: r for r in load_index(explorer)["rejects"]["reasons"]}["blurry"]
    first = load_page(explorer, blurry["path"], 1)
    assert [c["images"][0]["n"] for c in first] == ["frame0", "frame1"]
    for card in first:
        with Image.open(os.path.join(explorer, card["images"][0]["t"])) as image:
            assert image.size == (80, 60)
    assert "images" not in load_page(explorer, blurry["path"], 2)[0]


def test_the_diff_shows_added_removed_and_moved_cards_and_reuses_thumbnails(release):
    root, old = release
    _write(old)
    rows = [_row(n) for n in range(1, PAGE_SIZE + 6)] + [_row(100 + n, "test") for n in range(5)]
    rows += [_row(0, "test"), _row(300, "test", images=("compat/a.jpg",))]
    rows[0]["image_paths"] = ["compat/b.jpg"]   # set001: other images, same name
    new = _release(root, "1.1.0", rows, config={"t": 2})
    _image(os.path.join(new, "compat", "a.jpg"), "red")
    _image(os.path.join(new, "compat", "b.jpg"), "blue", size=(1000, 400))
    diff = diff_releases(old, new)
    written = _write(new, diff=diff, previous_dir=old)
    assert written["thumbnails"] == {"made": 0, "reused": 2, "unreadable": 0}
    explorer = os.path.join(new, "explorer")
    shown = load_index(explorer)["diff"]
    assert (shown["from"], shown["to"]) == ("1.0.0", "1.1.0")
    assert shown["config"] == [{"key": "t", "from": 1, "to": 2}]
    kinds = {k["kind"]: k for k in shown["tables"][0]["kinds"]}
    assert {k: v["count"] for k, v in kinds.items()} == {"added": 1, "removed": 1, "moved": 1,
                                                         "changed": 1}
    added, = load_page(explorer, kinds["added"]["path"], 1)
    removed, = load_page(explorer, kinds["removed"]["path"], 1)
    moved, = load_page(explorer, kinds["moved"]["path"], 1)
    assert added["key"] == "set300" and added["images"][0]["t"]
    assert removed["key"] == "set200" and removed["split"] == "test"
    assert removed["images"][0]["t"] and removed["images"][1]["t"] is None
    assert moved["key"] == "set000" and moved["figures"][0] == ["moved", "train -> test"]
    changed, = load_page(explorer, kinds["changed"]["path"], 1)
    assert changed["key"] == "set001"
    assert [i["n"] for i in changed["images"]] == ["b.jpg"]
    assert [i["n"] for i in changed["before"]] == ["a.jpg", "b.jpg"]


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
    view, = load_index(explorer)["views"]
    card = load_page(explorer, view["groups"][0]["path"], 1)[0]
    # a plain view: the key, then every scalar column as a figure; no images
    assert "images" not in card and dict(card["figures"]) == {
        "caption": "caption 100", "score": "14.29", "target": "1"}


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
    card, = load_page(explorer, load_index(explorer)["views"][0]["groups"][0]["path"], 1)
    assert [i["n"] for i in card["images"]] == ["i1", "i2"]
    assert all(i["t"] for i in card["images"]) and card["images"][0]["target"]
    reject, = load_page(explorer, load_index(explorer)["rejects"]["reasons"][0]["path"], 1)
    assert reject["images"] == [dict(card["images"][1])]   # a rejected pool id, pictured


def test_no_explorer_builds_a_release_without_one(tmp_path):
    release = runner.build("vsr", ["--config", "sample", "--output", str(tmp_path), "--version",
                                   "1.0.0", "--quiet", "--no-explorer"])
    assert not os.path.exists(os.path.join(release, "explorer"))
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert "explorer" not in manifest and verify_manifest(release) == []
