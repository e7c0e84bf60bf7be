"""Duplicates of still images by decoded pixels (transforms/core/hashing.py PixelDigest,
transforms/image/content.py OneImagePerContent): a byte copy and a PNG of a JPEG's pixels
are one image; a re-encode (other pixels) is another. The digest comes from the decode
the encoder does anyway, and from the embedding cache on a rebuild, which decodes nothing."""
import shutil

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to
from PIL import Image

from schemas import reasons
from schemas.records import ImageRef
from transforms.core.hashing import PixelDigest, content_sha256, pixels_sha256
from transforms.core.stage import MAIN, REJECTS
from transforms.image.content import OneImagePerContent
from transforms.image.decode import read_image
from transforms.image.embed import EmbedImages
from transforms.image.embed_cache import EmbedImagesCached
from transforms.image.encoders import EncoderSpec
from tests.beam_testing import local_test_pipeline

THUMB = EncoderSpec(kind="thumbnail", model_name="thumbnail-16", pretrained="none", batch_size=4)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(d / "a.jpg", quality=90)
    shutil.copyfile(d / "a.jpg", d / "b.jpg")                                  # a byte copy
    decoded = read_image(str(d / "a.jpg"))[0]
    Image.fromarray(decoded).save(d / "c.png")                                 # its pixels, as PNG
    Image.fromarray(decoded).save(d / "d.jpg", quality=50)                     # re-encoded: other pixels
    Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(d / "e.jpg")
    return d


def refs(files):
    return [ImageRef(str(files / name), name.split(".")[0]) for name in ("a.jpg", "b.jpg", "c.png", "d.jpg", "e.jpg")]


def test_the_pixel_digest_sees_pixels_not_bytes(files):
    a, c, d = (read_image(str(files / n))[0] for n in ("a.jpg", "c.png", "d.jpg"))
    assert pixels_sha256(a) == pixels_sha256(c)
    assert pixels_sha256(a) != pixels_sha256(d)
    # the shape is part of the digest: the same bytes in another shape are another image
    assert pixels_sha256(a) != pixels_sha256(np.ascontiguousarray(a.reshape(a.shape[1], a.shape[0], 3)))
    # frames enter one after another (a video): two frames are not one frame of both
    two = PixelDigest()
    two.add(a)
    two.add(a)
    assert two.frames == 2 and two.hexdigest() != pixels_sha256(np.concatenate([a, a]))


def _one_per_content(p, images):
    distinct = images | OneImagePerContent()
    kept = distinct[MAIN] | "Kept ids" >> beam.Map(lambda e: e.image_id)
    rejected = distinct[REJECTS] | "Rejects" >> beam.Map(
        lambda r: (r.stage, r.reason, r.item_id, "as kept image a" in r.detail,
                   "the same bytes" in r.detail, "the bytes differ" in r.detail))
    return kept, rejected


EXPECTED_REJECTS = [("image_content", reasons.DUPLICATE_IMAGE, "b", True, True, False),
                    ("image_content", reasons.DUPLICATE_IMAGE, "c", True, False, True)]


def test_a_byte_copy_and_a_png_of_the_pixels_are_one_image_and_a_reencode_is_another(files):
    with local_test_pipeline() as p:
        embedded = p | beam.Create(refs(files)) | EmbedImages(THUMB)
        kept, rejected = _one_per_content(p, embedded[MAIN])
        assert_that(kept, equal_to(["a", "d", "e"]), label="kept")
        assert_that(rejected, equal_to(EXPECTED_REJECTS), label="rejected")


@pytest.mark.slow
def test_cached_embeddings_keep_the_digest_so_a_rebuild_judges_the_same_without_decoding(files, tmp_path):
    cache = str(tmp_path / "cache")
    hashed = [ImageRef(r.path, r.image_id, content_sha256(r.path)) for r in refs(files)]
    emptied = tmp_path / "emptied"   # the second run's files would not decode: only the cache answers
    emptied.mkdir()
    for ref in hashed:
        (emptied / ref.path.rsplit("/", 1)[1]).write_bytes(b"")
    second = [ImageRef(str(emptied / r.path.rsplit("/", 1)[1]), r.image_id, r.content_sha256) for r in hashed]
    for run, images in (("first", hashed), ("second", second)):
        with local_test_pipeline() as p:
            embedded = p | beam.Create(images) | EmbedImagesCached(THUMB, "thumb", cache, run)
            kept, rejected = _one_per_content(p, embedded[MAIN])
            assert_that(kept, equal_to(["a", "d", "e"]), label="kept")
            assert_that(rejected, equal_to(EXPECTED_REJECTS), label="rejected")
            assert_that(embedded[REJECTS], equal_to([]), label="no rejects")
