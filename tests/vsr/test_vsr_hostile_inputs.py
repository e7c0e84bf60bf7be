"""VSR readers against hostile input (issue 10, cases 8 and 5): image names that are
paths, links that are not http(s), NaN and Infinity in numbers, bytes that are not
UTF-8, inputs that are not regular files. Every one is a reject (or a preflight error
for a whole input), never published, never a crash."""
import json
import os

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.config import load_config
from pipelines.vsr import pipeline as vsr
from pipelines.vsr import reasons
from pipelines.vsr.annotations import (JoinExtraLabels, JoinVotes, ReadCaptions,
                                       ReadPublicAnnotations)
from pipelines.vsr.config import VsrConfig
from pipelines.vsr.pairs import EligibleConcepts
from pipelines.vsr.relations import RELATIONS
from pipelines.vsr.records import ImagePair
from schemas.coco import ID_BY_NAME, CocoImage, is_file_name, is_link
from tests.beam_testing import local_test_pipeline
from transforms.coco.instances import ReadCoco
from transforms.core.errors import PreflightError
from transforms.core.stage import MAIN, REJECTS, read_stage_counts, reconcile

LAPTOP, CAT, DOG = ID_BY_NAME["laptop"], ID_BY_NAME["cat"], ID_BY_NAME["dog"]
GOOD = "000000000001.jpg"
LINK = f"http://images.cocodataset.org/train2017/{GOOD}"
LATIN1 = b'{"image": "caf\xe9.jpg"}'     # a Latin-1 e-acute: not UTF-8


def test_only_plain_coco_file_names_and_http_links():
    assert is_file_name(GOOD) and is_file_name("COCO_val2014_000000000042.jpg")
    for name in ("../../../../etc/passwd.jpg", "/etc/shadow.jpg", "sub/000000000001.jpg",
                 "000000000001.jpg/..", "1.jpg", "", None, 7):
        assert not is_file_name(name), name
    assert is_link(LINK) and is_link("https://example.org/a.jpg")
    for link in ("javascript:alert(1)", "JavaScript://x/%0aalert(1)", "file:///etc/passwd",
                 "data:image/jpeg;base64,AAAA", "/etc/shadow.jpg", "//host/a.jpg", "http://", ""):
        assert not is_link(link), link


# ---------------------------------------------------------------- COCO instances

def _coco_file(tmp_path):
    images = [
        {"id": 1, "file_name": GOOD, "coco_url": LINK},
        {"id": 2, "file_name": "../../../../etc/passwd.jpg", "coco_url": LINK},
        {"id": 3, "file_name": "/etc/shadow.jpg"},
        {"id": 4, "file_name": "000000000004.jpg", "coco_url": "javascript:alert(1)"},
        {"id": 5, "file_name": "000000000005.jpg", "width": float("inf")},
    ]
    annotations = [
        {"image_id": 1, "category_id": CAT, "area": 50000.0, "iscrowd": 0},
        {"image_id": 1, "category_id": DOG, "area": 40000.0, "iscrowd": 0},
        # a 17,029 px laptop whose area is NaN: `area < min_area` is False for NaN
        {"image_id": 1, "category_id": LAPTOP, "area": float("nan"), "bbox": [0, 0, 131, 130], "iscrowd": 0},
        {"image_id": 1, "category_id": ID_BY_NAME["tv"], "area": 45000.0, "bbox": [0, float("inf"), 1, 1]},
        {"image_id": 1, "category_id": ID_BY_NAME["bowl"], "area": 1e999},
    ]
    path = tmp_path / "instances_train2017.json"
    # json.dumps writes NaN / Infinity literals, as a hostile or broken exporter would
    path.write_text(json.dumps({"images": images, "annotations": annotations}))
    return str(path)


def test_coco_entries_with_path_names_bad_links_or_non_finite_numbers_are_rejected(tmp_path):
    path = _coco_file(tmp_path)
    p = local_test_pipeline()
    coco = p | ReadCoco([path])
    eligible = (coco["images"], coco["annotations"], coco["broken"]) | EligibleConcepts(30000.0, 1)
    assert_that(coco["images"] | beam.Map(lambda i: i.file_name), equal_to([GOOD]), label="images")
    assert_that(coco[REJECTS] | beam.Map(lambda r: (r.level, r.item_id, r.reason, r.detail.split(":")[0])),
                equal_to([
                    ("image", f"{path}#image1", reasons.BAD_COCO_RECORD,
                     "file_name '../../../../etc/passwd.jpg' is not a plain COCO file name"),
                    ("image", f"{path}#image2", reasons.BAD_COCO_RECORD,
                     "file_name '/etc/shadow.jpg' is not a plain COCO file name"),
                    ("image", f"{path}#image3", reasons.BAD_COCO_RECORD, "coco_url 'javascript"),
                    ("image", f"{path}#image4", reasons.BAD_COCO_RECORD, "not a finite number"),
                    # entries are numbered across the file: images 0-4, annotations 5-9
                    ("annotation", f"{path}#annotation7", reasons.BAD_COCO_RECORD, "not a finite number"),
                    ("annotation", f"{path}#annotation8", reasons.BAD_COCO_RECORD, "not a finite number"),
                    ("annotation", f"{path}#annotation9", reasons.BAD_COCO_RECORD, "not a finite number"),
                ]), label="coco rejects")
    # the laptop, the tv and the bowl are not eligible: their annotations are unreadable
    assert_that(eligible[MAIN] | beam.Map(lambda ie: sorted(ie[1])), equal_to([["cat", "dog"]]),
                label="eligible")
    assert_that(eligible[REJECTS] | beam.Map(lambda r: (r.item_id, r.reason)), equal_to([
        (f"{GOOD}/bowl", reasons.BAD_COCO_RECORD), (f"{GOOD}/laptop", reasons.BAD_COCO_RECORD),
        (f"{GOOD}/tv", reasons.BAD_COCO_RECORD)]), label="concepts")
    result = p.run()
    result.wait_until_finish()
    assert reconcile(read_stage_counts(result)) == []


def test_a_coco_file_that_is_not_utf8_names_the_byte_not_a_chunk_position(tmp_path):
    path = tmp_path / "instances_val2017.json"
    path.write_bytes(b'{"images": [{"id": 1, "file_name": "caf\xe9.jpg"}], "annotations": []}')
    p = local_test_pipeline()
    coco = p | ReadCoco([str(path)])
    assert_that(coco[REJECTS] | beam.Map(lambda r: (r.reason, r.file, r.detail)), equal_to([
        (reasons.MALFORMED_COCO, str(path), "not UTF-8: byte 0xe9 cannot be decoded")]))
    p.run().wait_until_finish()


# ---------------------------------------------------------------- public raw layout

def _public(image=GOOD, link=LINK, **extra) -> str:
    record = {"image": image, "image_link": link, "caption": "The cat is under the couch.",
              "label": 1, "relation": "under", "annotator_id": 3,
              "vote_true_validator_id": [1, 2], "vote_false_validator_id": []}
    return json.dumps({**record, **extra})


def test_public_lines_with_path_names_bad_links_non_finite_numbers_or_latin1_are_rejected(tmp_path):
    raw = tmp_path / "all_vsr_raw_data.jsonl"
    lines = [_public().encode(),
             _public(image="../../../../etc/passwd.jpg", caption="x").encode(),
             _public(image="/etc/shadow.jpg").encode(),
             _public(image="000000000002.jpg", link="javascript:alert(1)").encode(),
             _public(image="000000000003.jpg", reference_frame=float("nan")).encode(),
             _public(image="000000000004.jpg", score=float("-inf")).encode(),
             b"",
             LATIN1]
    raw.write_bytes(b"\n".join(lines) + b"\n")
    p = local_test_pipeline()
    read = p | ReadPublicAnnotations([str(raw)], frozenset(RELATIONS), {})
    assert_that(read[MAIN] | beam.Map(lambda t: t[0].image), equal_to([GOOD]), label="kept")
    assert_that(read[REJECTS] | beam.Map(lambda r: (r.file, r.line, r.reason, r.detail)), equal_to([
        (str(raw), 2, reasons.BAD_FIELD, "image '../../../../etc/passwd.jpg' is not a plain COCO file name"),
        (str(raw), 3, reasons.BAD_FIELD, "image '/etc/shadow.jpg' is not a plain COCO file name"),
        (str(raw), 4, reasons.BAD_FIELD, "image_link 'javascript:alert(1)' is not an http(s) link"),
        (str(raw), 5, reasons.BAD_FIELD, "NaN is not a finite number"),
        (str(raw), 6, reasons.BAD_FIELD, "-Infinity is not a finite number"),
        (str(raw), 8, reasons.BAD_ENCODING, "byte 0xe9 at column 15 is not UTF-8"),
    ]), label="rejects")
    result = p.run()
    result.wait_until_finish()
    counts = read_stage_counts(result)["annotations"]
    assert counts["line.in"] == 7 and counts["line.out"] == 1
    assert reconcile({"annotations": counts}) == []


# ---------------------------------------------------------------- writer output, votes, extra labels

def _pair() -> ImagePair:
    images = (CocoImage(1, GOOD, LINK, "train2017"),
              CocoImage(2, "000000000002.jpg", LINK.replace("01.jpg", "02.jpg"), "train2017"))
    return ImagePair("pair-a", "cat", "couch", images, (40000.0, 50000.0), (40000.0, 50000.0), 0, 2)


def test_caption_lines_with_latin1_or_nan_are_rejected_with_file_and_line(tmp_path):
    answers = tmp_path / "captions.jsonl"
    good = {"pair_id": "pair-a", "relation": "under", "true_image": GOOD, "annotator_id": "w1"}
    answers.write_bytes(b"\n".join([LATIN1, json.dumps({**good, "annotator_id": float("nan")}).encode(),
                                    json.dumps(good).encode()]) + b"\n")
    p = local_test_pipeline()
    read = p | ReadCaptions([str(answers)], frozenset(RELATIONS), p | beam.Create([_pair()]))
    assert_that(read[MAIN] | beam.Map(lambda t: t[0].image), equal_to([GOOD, "000000000002.jpg"]),
                label="examples")
    assert_that(read[REJECTS] | beam.Map(lambda r: (r.file, r.line, r.reason)), equal_to([
        (str(answers), 1, reasons.BAD_ENCODING), (str(answers), 2, reasons.BAD_FIELD)]), label="rejects")
    p.run().wait_until_finish()


@pytest.mark.parametrize("kind", ["votes", "extra_labels"])
def test_vote_and_extra_label_lines_with_latin1_or_infinity_are_rejected(tmp_path, kind):
    who = "validator_id" if kind == "votes" else "annotator_id"
    path = tmp_path / f"{kind}.jsonl"
    path.write_bytes(b"\n".join([
        json.dumps({"example_id": "e1", who: "v1", "label": 1}).encode(),
        b'{"example_id": "e1", "' + who.encode() + b'": "v2", "label": 1, "weight": Infinity}',
        b'{"example_id": "e1", "' + who.encode() + b'": "v3", "label": 1e999}',
        LATIN1]) + b"\n")
    p = local_test_pipeline()
    if kind == "votes":
        examples = p | beam.Create([(_example(), (), ())])
        out = examples | JoinVotes([str(path)])
        assert_that(out[MAIN] | beam.Map(lambda t: t[1]), equal_to([("v1",)]), label="votes")
    else:
        out = p | beam.Create([("e1", 1)]) | JoinExtraLabels([str(path)])
        assert_that(out[MAIN] | beam.Map(lambda t: t[1]), equal_to([[1]]), label="labels")
    assert_that(out[REJECTS] | beam.Map(lambda r: (r.line, r.reason, r.detail)), equal_to([
        (2, reasons.BAD_FIELD, "Infinity is not a finite number"),
        (3, reasons.BAD_FIELD, "1e999 is not a finite number"),
        (4, reasons.BAD_ENCODING, "byte 0xe9 at column 15 is not UTF-8")]), label="rejects")
    p.run().wait_until_finish()


def _example():
    from pipelines.vsr.records import Example
    return Example(example_id="e1", image=GOOD, image_link=LINK, caption="The cat is under the couch.",
                   label=1, relation="under", subj="cat", obj="couch", annotator_id="w1")


# ---------------------------------------------------------------- whole inputs

def test_an_input_that_is_not_a_regular_file_stops_the_build_before_any_work(tmp_path):
    pipe = tmp_path / "raw.jsonl"
    os.mkfifo(pipe)                     # reading it would wait for a writer forever
    for target in (pipe, tmp_path):
        cfg = load_config("pipelines/vsr/configs/paper.yaml", [f"inputs.annotations=[{target}]"], VsrConfig)
        with pytest.raises(PreflightError, match=f"inputs.annotations: {target} is a (FIFO|folder).*not a regular file"):
            vsr.preflight(cfg)
