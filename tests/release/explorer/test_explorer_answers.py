"""The explorer shows a rejected answer's content (issue 44, item 9): a description the
retrieval round rejected (`retriever_wrong`, `too_few_correct`, `no_retrieval`) is a card
with the description's text, its set's ten images (the target and the retrievers' guesses
marked), the retrievers' guesses, and the results file and line it was read from; the
search finds it by a word of its text, and a pasted id or hash (the set name's hash, the
description id) finds it. The search itself is seen in Chromium:
tests/release/explorer/test_explorer_browser.py (make check-explorer)."""
import os

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from pipelines.imagecode.crowd.rounds import keep_rule_detail
from pipelines.imagecode.crowd.records import Description
from pipelines.release.explorer.views import ExplorerView, RejectsOfRows
from pipelines.release.explorer.write import PAGE_SIZE, write_explorer
from schemas.rejects import REJECT_SCHEMA, Reject, reject_to_row
from tests.release.explorer.explorer_pages import index_column, load_index, view_cards

SET = "open-images-1_93d332dd2174571b"
TEXT = "The girl with the umbrella is half hidden behind the door."
DESCRIPTION_ID = f"{SET}#3#A1DESCRIBER"
ANSWERS = RejectsOfRows(r"([^#]+)#\d+#", (("target", r"target (\d+)"), ("guessed", r"guesses ([\d, ]+)")))


def answered_release(tmp_path):
    """A release of one static set (ten images in compat/) and the retrieval round's
    reject of a description of it, as ImageCoDe's keep rule writes it."""
    folder = tmp_path / "imagecode" / "1.0.0"
    images = [f"compat/image-sets/{SET}/img{k}.jpg" for k in range(10)]
    for k, path in enumerate(images):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (40, 30), (20 * k, 100, 200 - 10 * k)).save(folder / path)
    (folder / "parquet" / "static_sets").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"set_name": SET, "split": "valid", "source": "open-images",
                                          "image_paths": images}]),
                   folder / "parquet" / "static_sets" / "valid-00000-of-00001.parquet")
    description = Description(DESCRIPTION_ID, SET, 3, TEXT, "A1DESCRIBER", "valid",
                              "Batch_7_batch_results.csv", 4)
    reject = Reject("retrieve", "description", "too_few_correct", DESCRIPTION_ID, "open-images", split="valid",
                    detail=keep_rule_detail(description, [5, 3, 8], 1), file="Batch_7_batch_results.csv", line=4)
    (folder / "rejects").mkdir()
    pq.write_table(pa.Table.from_pylist([reject_to_row(reject)], schema=REJECT_SCHEMA),
                   folder / "rejects" / "rejects-00000-of-00001.parquet")
    write_explorer(str(folder), benchmark="imagecode", version="1.0.0", tables={"static_sets": ("set_name",)},
                   views=(ExplorerView("static_sets", images=("image_paths",), rejects_of_rows=ANSWERS),))
    return str(folder)


def test_a_rejected_description_shows_what_it_said_about_which_images(tmp_path):
    explorer = os.path.join(answered_release(tmp_path), "explorer")
    rejects = load_index(explorer)["rejects"]
    [card] = view_cards(explorer, rejects, PAGE_SIZE)
    assert card["k"] == DESCRIPTION_ID and card["r"] == "too_few_correct"
    assert card["x"] == [f'1 of 3 retrievers found target 3; guesses 5, 3, 8; description "{TEXT}"']
    assert card["f"][-1] == "Batch_7_batch_results.csv:4"   # the row to look at
    images = card["i"]
    assert len(images) == 10 and all(i.get("t", "").startswith("thumbs/") for i in images)
    assert [n for n, i in enumerate(images) if i.get("target")] == [3]
    assert {n: i["l"] for n, i in enumerate(images) if i.get("l")} == {3: ["guessed"], 5: ["guessed"], 8: ["guessed"]}
    # searched: the texts of the index (the page searches its text columns)
    texts = [c["name"] for c in rejects["index"]["columns"] if c["kind"] == "text"]
    assert "detail" in texts and "item_id" in texts
    assert "umbrella" in index_column(explorer, rejects, "detail")[0]
    assert "93d332dd" in index_column(explorer, rejects, "item_id")[0]
