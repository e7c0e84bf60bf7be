"""transforms/image/collection.py (reading a folder or a manifest, hashing, de-duplication) and
EmbedImages (transforms/image/embed.py) on real photos from skimage.data."""
import hashlib
import json
import os
import shutil

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to
from PIL import Image
from skimage import data

from schemas import reasons
from schemas.records import ImageEmbedding, ImageRef
from tests.beam_testing import local_test_pipeline
from transforms.core.hashing import content_sha256
from transforms.core.stage import MAIN, REJECTS, read_stage_counts, reconcile
from transforms.image.collection import HashAndDedupe, ReadImageCollection, parse_image_line
from transforms.image.embed import EmbedImages
from transforms.image.encoders import EncoderSpec, build_encoder

THUMB = EncoderSpec(kind="thumbnail", model_name="thumbnail-16", pretrained=None, batch_size=3)
PHOTOS = ["astronaut", "chelsea", "coffee", "rocket"]


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """Small JPEGs/PNGs of real photos, an exact copy, a corrupt JPEG and a non-image:

        photos/astronaut.jpg  chelsea.jpg  sub/coffee.JPEG  sub/rocket.png
        photos/copy_of_chelsea.jpg   (same bytes as chelsea.jpg)
        photos/broken.jpg            (a JPEG cut off after its first 300 bytes)
        photos/notes.txt             (not an image: not listed)
    """
    root = tmp_path_factory.mktemp("photos")
    (root / "sub").mkdir()
    names = {"astronaut": "astronaut.jpg", "chelsea": "chelsea.jpg",
             "coffee": "sub/coffee.JPEG", "rocket": "sub/rocket.png"}
    for photo, name in names.items():
        image = Image.fromarray(getattr(data, photo)()).convert("RGB")
        image.thumbnail((96, 96))
        image.save(root / name, format="PNG" if name.endswith("png") else "JPEG", quality=90)
    shutil.copy(root / "chelsea.jpg", root / "copy_of_chelsea.jpg")
    (root / "broken.jpg").write_bytes((root / "astronaut.jpg").read_bytes()[:300])
    (root / "notes.txt").write_text("not an image")
    return root


def run(pipeline, build):
    """Build with `build(p)` (it adds its own asserts), run, return the stage counters."""
    build(pipeline)
    result = pipeline.run()
    result.wait_until_finish()
    return read_stage_counts(result)


# ---------------------------------------------------------------- reading + dedupe

def test_folder_is_listed_hashed_and_deduplicated(collection):
    root = str(collection)
    kept_ids = ["astronaut", "broken", "chelsea", "coffee", "rocket"]

    def build(p):
        refs = p | ReadImageCollection(root)
        hashed = refs[MAIN] | HashAndDedupe()
        assert_that(refs[REJECTS], equal_to([]), label="no entry rejects")
        assert_that(hashed[MAIN] | beam.Map(lambda r: (r.image_id, r.content_sha256)), equal_to(
            [(i, content_sha256(_path(root, i))) for i in kept_ids]), label="kept")
        # The copy has the larger id: it goes, naming the image that stays.
        assert_that(hashed[REJECTS] | beam.Map(lambda r: (r.reason, r.item_id, "chelsea" in r.detail)),
                    equal_to([(reasons.DUPLICATE_IMAGE, "copy_of_chelsea", True)]), label="duplicate")

    counts = run(local_test_pipeline(), build)["images"]
    assert counts["entry.in"] == counts["entry.out"] == 6
    assert counts["image.in"] == 6 and counts["image.out"] == 5
    assert counts["image.rejected.duplicate_image"] == 1
    assert reconcile({"images": counts}) == []


def _path(root, image_id):
    for dirpath, _, files in os.walk(root):
        for f in files:
            if os.path.splitext(f)[0] == image_id:
                return os.path.join(dirpath, f)
    raise KeyError(image_id)


def test_manifest_lines_become_refs_or_rejects(collection, tmp_path):
    manifest = tmp_path / "images.jsonl"
    lines = [
        {"path": str(collection / "astronaut.jpg"), "image_id": "0f0565064ea964f8"},
        {"path": os.path.relpath(collection / "chelsea.jpg", tmp_path), "image_id": "cat"},  # relative
        {"path": str(collection / "sub" / "coffee.JPEG"), "image_id": "cat"},   # id clash: larger path goes
        {"path": str(collection / "missing.jpg"), "image_id": "gone"},
        {"path": str(collection / "rocket.png")},
        {"path": str(collection / "sub" / "rocket.png"), "image_id": 7},
    ]
    manifest.write_text("\n".join([json.dumps(x) for x in lines] + ["{not json", ""]) + "\n")

    def build(p):
        refs = p | ReadImageCollection(str(manifest))
        assert_that(refs[MAIN], equal_to([
            ImageRef(str(collection / "astronaut.jpg"), "0f0565064ea964f8"),
            ImageRef(str(collection / "chelsea.jpg"), "cat")]), label="refs")
        assert_that(refs[REJECTS] | beam.Map(lambda r: r.reason), equal_to([
            reasons.DUPLICATE_IMAGE_ID, reasons.PATH_NOT_FOUND, reasons.MISSING_FIELD,
            reasons.BAD_FIELD, reasons.BAD_JSON]), label="rejects")

    counts = run(local_test_pipeline(), build)["images"]
    assert counts["entry.in"] == 7 and counts["entry.out"] == 2
    assert reconcile({"images": counts}) == []


def test_a_bad_manifest_line_is_a_reject_naming_file_and_line(collection, tmp_path):
    """Issue 10, case 5: a Latin-1 byte used to end the build in UnicodeDecodeError."""
    manifest = tmp_path / "images.jsonl"
    good = json.dumps({"path": str(collection / "astronaut.jpg"), "image_id": "astronaut"})
    latin1 = '{"path": "caf\xe9.jpg", "image_id": "cafe"}'.encode("latin-1")
    manifest.write_bytes(good.encode() + b"\n\n" + latin1 + b"\n{broken\n")

    def build(p):
        refs = p | ReadImageCollection(str(manifest))
        assert_that(refs[MAIN] | beam.Map(lambda r: r.image_id), equal_to(["astronaut"]), label="kept")
        assert_that(refs[REJECTS] | beam.Map(lambda r: (r.reason, r.file, r.line, r.item_id)), equal_to([
            (reasons.BAD_ENCODING, str(manifest), 3, f"{manifest}:3"),
            (reasons.BAD_JSON, str(manifest), 4, "{broken")]), label="rejects")

    counts = run(local_test_pipeline(), build)["images"]
    assert counts["entry.in"] == 3 and counts["entry.rejected.bad_encoding"] == 1
    assert reconcile({"images": counts}) == []


def test_a_listed_path_that_is_not_a_regular_file_is_not_a_file(collection, tmp_path):
    (tmp_path / "album.jpg").mkdir()
    os.mkfifo(tmp_path / "pipe.jpg")      # hashing it would wait for a writer forever
    manifest = tmp_path / "images.jsonl"
    manifest.write_text("\n".join(json.dumps(x) for x in [
        {"path": "album.jpg", "image_id": "album"}, {"path": "pipe.jpg", "image_id": "pipe"},
        {"path": str(collection / "chelsea.jpg"), "image_id": "chelsea"}]) + "\n")

    def build(p):
        refs = p | ReadImageCollection(str(manifest))
        assert_that(refs[MAIN] | beam.Map(lambda r: r.image_id), equal_to(["chelsea"]), label="kept")
        assert_that(refs[REJECTS] | beam.Map(lambda r: (r.reason, r.line, r.detail)), equal_to([
            (reasons.NOT_A_FILE, 1, f"{tmp_path}/album.jpg is a folder"),
            (reasons.NOT_A_FILE, 2, f"{tmp_path}/pipe.jpg is not a regular file (a pipe, socket or device)"),
        ]), label="rejects")

    run(local_test_pipeline(), build)


def test_in_a_folder_a_folder_named_like_an_image_is_not_an_image(tmp_path):
    root = tmp_path / "photos"
    (root / "album.jpg").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(root / "album.jpg" / "inside.png")
    Image.new("RGB", (8, 8)).save(root / "plain.jpg")
    os.mkfifo(root / "pipe.jpg")

    def build(p):
        refs = p | ReadImageCollection(str(root))
        assert_that(refs[MAIN] | beam.Map(lambda r: r.image_id), equal_to(["inside", "plain"]), label="images")
        assert_that(refs[REJECTS] | beam.Map(lambda r: (r.reason, r.item_id)),
                    equal_to([(reasons.NOT_A_FILE, str(root / "pipe.jpg"))]), label="rejects")

    counts = run(local_test_pipeline(), build)["images"]
    assert counts["entry.in"] == 3 and counts["entry.out"] == 2


def test_parse_image_line_makes_ids_safe_and_paths_absolute(collection):
    ref = parse_image_line(json.dumps({"path": "astronaut.jpg", "image_id": "a/b c"}), str(collection))
    assert ref == ImageRef(str(collection / "astronaut.jpg"), "a_b_c-0af99a609169")  # hash of "a/b c"
    assert parse_image_line("[1]", "/")[0] == reasons.BAD_JSON
    assert parse_image_line(json.dumps({"path": "", "image_id": "x"}), "/")[0] == reasons.BAD_FIELD


def test_content_sha256_streams_the_stored_bytes(collection):
    path = collection / "astronaut.jpg"
    assert content_sha256(str(path)) == hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- embedding

def test_embed_images_with_the_thumbnail_encoder(collection):
    refs = [ImageRef(str(collection / name), name.split(".")[0])
            for name in ("astronaut.jpg", "chelsea.jpg", "sub/rocket.png", "broken.jpg")]
    refs.append(ImageRef(str(collection / "coffee-was-moved.jpg"), "moved"))
    encoder = build_encoder(THUMB)
    expected = {r.image_id: encoder.encode([np.asarray(Image.open(r.path).convert("RGB"))])[0]
                for r in refs[:3]}

    def check(embeddings):
        assert sorted(e.image_id for e in embeddings) == sorted(expected)
        for e in embeddings:
            assert isinstance(e, ImageEmbedding) and e.embedding.dtype == np.float32
            assert e.embedding.shape == (3 * 16 * 16,)
            assert abs(np.linalg.norm(e.embedding) - 1.0) < 1e-5
            np.testing.assert_allclose(e.embedding, expected[e.image_id], atol=1e-6)
            assert e.content_sha256 == content_sha256(e.path)

    def build(p):
        out = p | beam.Create(refs) | EmbedImages(THUMB)
        assert_that(out[MAIN], check, label="embeddings")
        assert_that(out[REJECTS] | beam.Map(lambda r: (r.reason, r.item_id)), equal_to(
            [(reasons.UNREADABLE_IMAGE, "broken"), (reasons.UNREADABLE_IMAGE, "moved")]), label="rejects")

    counts = run(local_test_pipeline(), build)["embed"]
    assert counts["image.in"] == 5 and counts["image.out"] == 3
    assert counts["image.rejected.unreadable_image"] == 2
    assert counts["model.loaded"] == 1


def test_embed_images_rejects_content_changed_since_hashing(collection):
    ref = ImageRef(str(collection / "astronaut.jpg"), "astronaut", content_sha256="0" * 64)

    def build(p):
        out = p | beam.Create([ref]) | EmbedImages(THUMB)
        assert_that(out[MAIN], equal_to([]), label="none")
        assert_that(out[REJECTS] | beam.Map(lambda r: "changed" in r.detail), equal_to([True]))

    run(local_test_pipeline(), build)
