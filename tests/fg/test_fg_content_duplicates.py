"""FG's pool judged by decoded pixels (issue 24, part 5): a byte copy or a PNG re-save of
a target in the pool is the target under another id (same_as_target), never one of its
similar images; one pool file under two ids, or a PNG of a pool image's pixels, is one
image (duplicate_image) and the public image list names it once; another target with a
target's pixels is never in that target's similar set. With precomputed vectors the
images are still decoded for their digest."""
import json
import os
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from pipelines import build
from pipelines.fg import reasons
from pipelines.fg.sample import make_fg_sample, target_ids
from transforms.image.decode import read_image

TARGETS = target_ids("mscoco")
ASTRONAUT, CHELSEA = TARGETS["astronaut"], TARGETS["chelsea"]
TWIN = "COCO_val2014_000000000900"     # a second target id with the astronaut's pixels
POOL_FILE = "000000000001"             # a pool image (a crop of the astronaut) ...
POOL_FILE_AGAIN = "500000000003"       # ... listed again under this id
BYTE_COPY, PNG_COPY, POOL_PNG = "500000000001", "500000000002", "500000000004"


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    sample = make_fg_sample(str(tmp_path_factory.mktemp("fg")))
    folder = sample / "mscoco"
    images, pool = folder / "images", sample / "unlabeled2017"
    shutil.copyfile(images / f"{ASTRONAUT}.jpg", pool / f"{BYTE_COPY}.jpg")
    Image.fromarray(read_image(str(images / f"{CHELSEA}.jpg"))[0]).save(pool / f"{PNG_COPY}.png")
    Image.fromarray(read_image(str(pool / "000000000002.jpg"))[0]).save(pool / f"{POOL_PNG}.png")
    shutil.copyfile(images / f"{ASTRONAUT}.jpg", images / f"{TWIN}.jpg")
    captions = json.loads((folder / "captions.json").read_text())
    captions[TWIN] = ["a picture of the same astronaut"] * 5
    (folder / "captions.json").write_text(json.dumps(captions))
    lines = [{"path": f"../unlabeled2017/{BYTE_COPY}.jpg", "image_id": BYTE_COPY},
             {"path": f"../unlabeled2017/{PNG_COPY}.png", "image_id": PNG_COPY},
             {"path": f"../unlabeled2017/{POOL_PNG}.png", "image_id": POOL_PNG},
             {"path": f"../unlabeled2017/{POOL_FILE}.jpg", "image_id": POOL_FILE_AGAIN}]
    with open(folder / "pool.jsonl", "a") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path_factory.mktemp("out")
    return build.build("fg", ["--config", "sample", "--output", str(out), "--version", "1.0.0",
                              "--set", f"inputs.captions={folder / 'captions.json'}",
                              "--set", f"inputs.images={images}",
                              "--set", f"inputs.pool={folder / 'pool.jsonl'}"])


def table(release, name):
    return pq.read_table(os.path.join(release, name)).to_pylist()


def test_copies_of_a_target_are_rejected_naming_the_target(release):
    found = {r["item_id"]: r for r in table(release, "rejects") if r["reason"] == reasons.SAME_AS_TARGET}
    assert sorted(found) == [BYTE_COPY, PNG_COPY]
    assert found[BYTE_COPY]["stage"] == "target_copies"
    assert f"same decoded pixels as target {ASTRONAUT} " in found[BYTE_COPY]["detail"]
    assert f"same decoded pixels as target {CHELSEA} " in found[PNG_COPY]["detail"]


def test_no_target_stands_in_its_own_similar_set(release):
    sets = {s["target"]: s for s in table(release, "parquet/similar_sets")}
    members = {m for s in sets.values() for m in s["members"]}
    assert not members & {BYTE_COPY, PNG_COPY, POOL_FILE_AGAIN, POOL_PNG}
    # the twin target is the astronaut under another id: in neither's set
    assert TWIN not in sets[ASTRONAUT]["members"] and ASTRONAUT not in sets[TWIN]["members"]
    for s in sets.values():   # nothing but the target itself at cosine 1
        assert all(score < 1 - 1e-6 for score in s["image_scores"][1:] if score == score)
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert manifest["stages"]["similar_sets"]["target.same_pixels_skipped"] == 2
    assert manifest["reconciled"] is True


def test_one_pool_file_under_two_ids_and_a_png_of_its_pixels_are_listed_once(release):
    found = {r["item_id"]: r for r in table(release, "rejects") if r["reason"] == reasons.DUPLICATE_IMAGE}
    assert sorted(found) == [POOL_FILE_AGAIN, POOL_PNG]
    assert {r["stage"] for r in found.values()} == {"image_content"}
    assert "the same bytes) as kept image 000000000001" in found[POOL_FILE_AGAIN]["detail"]
    assert "the bytes differ) as kept image 000000000002" in found[POOL_PNG]["detail"]
    names = np.load(os.path.join(release, "compat", "Images", "MSCOCO_FG_img_filenames.npy"))
    assert len(set(names)) == len(names)
    pool = table(release, "parquet/pool")
    assert not {r["image_id"] for r in pool} & {BYTE_COPY, PNG_COPY, POOL_FILE_AGAIN, POOL_PNG}
    assert len({r["path"] for r in pool}) == len(pool)


def test_a_precomputed_vector_still_needs_an_image_that_decodes(tmp_path):
    import apache_beam as beam
    from apache_beam.testing.util import assert_that, equal_to

    from pipelines.fg.inputs import AttachPrecomputed, precomputed_files
    from schemas.records import ImageRef
    from tests.beam_testing import local_test_pipeline
    from transforms.core.hashing import pixels_sha256
    from transforms.core.stage import MAIN, REJECTS
    good = np.full((8, 8, 3), 200, np.uint8)
    Image.fromarray(good).save(tmp_path / "good.png")
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8 not a JPEG")
    vector = np.ones(4, np.float32) / 2
    with local_test_pipeline() as p:
        refs = p | "Refs" >> beam.Create([ImageRef(str(tmp_path / "good.png"), "good"),
                                          ImageRef(str(tmp_path / "broken.jpg"), "broken")])
        vectors = p | "Vectors" >> beam.Create([("good", vector), ("broken", vector)])
        attached = refs | AttachPrecomputed(precomputed_files(vectors, str(tmp_path / "vectors"), 3), 3)
        assert_that(attached[MAIN] | beam.Map(lambda e: (e.image_id, e.pixels_sha256)),
                    equal_to([("good", pixels_sha256(good))]), label="kept")
        assert_that(attached[REJECTS] | beam.Map(lambda r: (r.stage, r.reason, r.item_id)),
                    equal_to([("embed", reasons.UNREADABLE_IMAGE, "broken")]), label="rejected")
