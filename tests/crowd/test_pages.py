"""The worker pages (issue 38, item 1), without a browser (tests/crowd/
test_crowd_pages_browser.py uses them in Chromium): every round's page asks only for
columns of its batch input and submits the fields its round reads; the preview is filled
as the platform fills it, HTML-escaped; WritePages writes a page, its preview and its input."""
import csv
import re

import apache_beam as beam
import pytest

from pipelines.imagecode.crowd import worker_pages as imagecode_pages
from pipelines.imagecode.crowd.records import (DESCRIBE_TASK_COLUMNS, DESCRIPTION_COLUMNS,
                                               RETRIEVAL_COLUMNS, RETRIEVE_TASK_COLUMNS)
from pipelines.nlvr2.collection import worker_pages as nlvr2_pages
from pipelines.nlvr2.collection.rounds import INTEREST_COLUMNS, PRUNING_COLUMNS, SENTENCE_COLUMNS, VALIDATION_COLUMNS
from pipelines.vsr import worker_pages as vsr_pages
from pipelines.vsr.relations import RELATIONS
from tests.beam_testing import local_test_pipeline
from transforms.crowd.pages import PREVIEW_BASE, SUBMIT_URL, WritePages, fill, page_template, placeholders
from transforms.crowd.shown import FINGERPRINT

VSR_CAPTION = ("pair_id", "relation", "true_image", "annotator_id")
VSR_VOTE = ("example_id", "validator_id", "label")
# page -> (its batch input's columns, the columns its round's ingest reads, the round's
# worker column: MTurk's WorkerId, which the page never submits)
PAGES = {
    **{p.name: (p, c, r, "worker") for p, c, r in zip(
        imagecode_pages.pages(), (DESCRIBE_TASK_COLUMNS, RETRIEVE_TASK_COLUMNS), (DESCRIPTION_COLUMNS, RETRIEVAL_COLUMNS))},
    **{"nlvr2 " + p.name: (p, p.columns, r, w) for p, r, w in zip(
        nlvr2_pages.pages(16, 4), (PRUNING_COLUMNS, INTEREST_COLUMNS, SENTENCE_COLUMNS,
                                   VALIDATION_COLUMNS, VALIDATION_COLUMNS), ("", "", "writer", "worker", "worker"))},
    **{"vsr " + p.name: (p, p.columns, r, w) for p, r, w in zip(
        vsr_pages.pages(RELATIONS), (VSR_CAPTION, VSR_VOTE), ("annotator_id", "validator_id"))},
}


def submitted_names(page_html: str) -> set:
    """The names of the form's fields (an item's `<field>@<k>` as `<field>`)."""
    return {re.sub(r"@\d+$", "", n) for n in re.findall(r'name="([^"]+)"', page_html)}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_page_asks_for_its_inputs_and_submits_what_its_round_reads(name):
    page, input_columns, read, worker = PAGES[name]
    text = page_template(page, "https://cdn.example.org/release/")
    assert set(placeholders(text)) <= set(input_columns), set(placeholders(text)) - set(input_columns)
    assert FINGERPRINT in placeholders(text)
    names = submitted_names(text)
    assert set(read) - {worker} <= names, set(read) - names
    assert worker not in names and "worker_column" not in names, "who did the work is MTurk's to say"
    assert {"assignmentId", FINGERPRINT} <= names
    assert f'action="{SUBMIT_URL}"' in text
    assert not re.search(r"""(src|href)=["']?(https?:)?//(?!cdn\.example\.org)""", text.replace("${", "")), \
        "a page loads nothing from the network but the task's images"


def test_images_are_addressed_by_the_base_url_or_the_release_path():
    describe = imagecode_pages.pages()[0]
    assert 'src="https://cdn.example.org/r/${image_0}"' in page_template(describe, "https://cdn.example.org/r/")
    row = {c: "" for c in DESCRIBE_TASK_COLUMNS}
    row.update(image_0="compat/image-sets/s/img0.jpg", target_position=3, shown_order=[1, 0])
    filled = fill(page_template(describe, PREVIEW_BASE), row)
    assert 'src="../../compat/image-sets/s/img0.jpg"' in filled and 'data-target-position="3"' in filled


def test_a_filled_page_escapes_what_a_worker_wrote():
    retrieve = imagecode_pages.pages()[1]
    row = {c: "x" for c in RETRIEVE_TASK_COLUMNS}
    row["text"] = 'The <b>left</b> "dog" & cat'
    filled = fill(page_template(retrieve), row)
    assert "The &lt;b&gt;left&lt;/b&gt; &quot;dog&quot; &amp; cat" in filled
    with pytest.raises(KeyError, match="image_9"):
        fill(page_template(retrieve), {c: "x" for c in RETRIEVE_TASK_COLUMNS if c != "image_9"})


def test_write_pages_writes_each_page_its_preview_and_its_input(tmp_path):
    page = vsr_pages.pages(RELATIONS)[1]
    rows = [{"example_id": f"e{k}", "image": f"{k}.jpg", "image_link": f"http://x/{k}.jpg",
             "caption": f"=The cat {k}.", FINGERPRINT: f"{k:032d}"} for k in (2, 1)]
    p = local_test_pipeline()
    _ = (p | beam.Create([("validation", (r["example_id"], r)) for r in rows] + [])
         | WritePages(str(tmp_path), [page, vsr_pages.pages(RELATIONS)[0]]))
    p.run().wait_until_finish()
    assert sorted(f.name for f in tmp_path.iterdir()) == [
        "caption.csv", "caption.html", "validation.csv", "validation.html", "validation.preview.html"]
    preview = (tmp_path / "validation.preview.html").read_text()
    assert 'value="e1"' in preview and "e2" not in preview        # the first task in key order
    with open(tmp_path / "validation.csv", newline="") as f:
        written = list(csv.DictReader(f))
    assert [r["example_id"] for r in written] == ["e1", "e2"]
    assert written[0]["caption"] == "'=The cat 1."                  # safe in a spreadsheet
    assert (tmp_path / "caption.csv").read_text().splitlines() == [",".join(vsr_pages.CAPTION_COLUMNS)]


def test_a_preview_shows_its_pictures_from_disk(tmp_path):
    """A task image that is no path in the release (NLVR2's collected images, paths beside
    the search results; VSR's COCO links) is copied beside the preview, which shows the
    copy: it opens from disk anywhere, with its pictures. A value with no local file stays
    as it is. (Every round's preview counted in Chromium: test_crowd_pages_browser.py.)"""
    from pipelines.vsr.worker_pages import CocoImageFolder
    from transforms.crowd.pages import FilesUnder
    (tmp_path / "inputs" / "images").mkdir(parents=True)
    (tmp_path / "inputs" / "images" / "a.jpg").write_bytes(b"\xff\xd8left")
    page = [p for p in nlvr2_pages.pages(16, 4) if p.name == "validation"][0]
    row = {"example": "e1", "sentence": "Two cups.", "left_url": "images/a.jpg", "right_url": "https://x.org/b.jpg",
           FINGERPRINT: "f" * 32}
    p = local_test_pipeline()
    _ = (p | beam.Create([("validation", ("e1", row))])
         | WritePages(str(tmp_path / "pages"), [page], local_image=FilesUnder(str(tmp_path / "inputs"))))
    p.run().wait_until_finish()
    preview = (tmp_path / "pages" / "validation.preview.html").read_text()
    assert re.findall(r'<img src="([^"]+)"', preview) == ["validation.preview/left_url.jpg", "https://x.org/b.jpg"]
    assert (tmp_path / "pages" / "validation.preview" / "left_url.jpg").read_bytes() == b"\xff\xd8left"
    assert 'src="${left_url}"' in (tmp_path / "pages" / "validation.html").read_text()   # MTurk's template: as it was
    coco = tmp_path / "coco" / "train2017"
    coco.mkdir(parents=True)
    (coco / "000000000001.jpg").write_bytes(b"\xff\xd8")
    find = CocoImageFolder(str(tmp_path / "coco"))
    assert find("http://images.cocodataset.org/train2017/000000000001.jpg") == str(coco / "000000000001.jpg")
    assert find("http://images.cocodataset.org/train2017/000000000002.jpg") is None
    assert find("http://images.cocodataset.org/..%2F..%2Fetc/passwd") is None
