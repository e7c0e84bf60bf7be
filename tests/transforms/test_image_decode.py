"""transforms/image/decode.py and the still-image stages that use it (issue 10, case 7):
16-bit greyscale scaled, transparency composited on the documented background, the
pixel limit checked from the header before decoding, deterministic reject details, and
the compat JPEGs of static sets published from the same pixels."""
import io
import struct
import zlib

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to
from PIL import Image, ImageFile

from pipelines.config import load_config
from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.records import StaticSet
from pipelines.imagecode.static.release import PublishStaticSets
from schemas import reasons
from schemas.records import ImageEmbedding, ImageRef
from tests.beam_testing import local_test_pipeline
from transforms.core.errors import ConfigError
from transforms.core.stage import MAIN, REJECTS, read_stage_counts, reconcile
from transforms.image import decode as image_decode
from transforms.image.collection import HashAndDedupe, check_pixel_limit
from transforms.image.decode import BACKGROUND, ImageProblem, decode_rgb, read_header
from transforms.image.formats import pillow_pixel_ceiling
from transforms.image.embed import EmbedImages
from transforms.image.encoders import EncoderSpec

THUMB = EncoderSpec(kind="thumbnail", model_name="thumbnail-16", pretrained=None, batch_size=4)


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def gradient_16bit() -> np.ndarray:
    """A 16-bit greyscale ramp over the whole range: 0, 257, ..., 65535 across 256 columns."""
    return np.tile((np.arange(256, dtype=np.uint32) * 257).astype(np.uint16), (8, 1))


def hidden_colour_rgba() -> np.ndarray:
    """Left half: pure red stored under alpha 0 (invisible); right half: opaque blue."""
    pixels = np.zeros((8, 16, 4), np.uint8)
    pixels[:, :8] = (255, 0, 0, 0)
    pixels[:, 8:] = (0, 0, 255, 255)
    return pixels


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that claims width x height (1-bit grey) and holds no pixel data: cheap to
    write, and any attempt to decode it fails, so a too_many_pixels verdict on it can only
    have come from the header."""
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IEND", b"")


# ---------------------------------------------------------------- conversion

def test_16bit_greyscale_is_scaled_not_clipped():
    ramp = gradient_16bit()
    data = _png(Image.fromarray(ramp))
    assert Image.open(io.BytesIO(data)).mode == "I;16"
    rgb = decode_rgb(data, "ramp.png", 10**6)
    assert rgb.shape == (8, 256, 3) and rgb.dtype == np.uint8
    # 257 * k of 65535 is exactly k of 255: the ramp comes back as 0..255
    np.testing.assert_array_equal(rgb[0, :, 0], np.arange(256))
    assert (rgb == rgb[..., :1]).all()     # grey stays grey


@pytest.mark.parametrize("mode, values, expected", [
    ("I;16B", np.array([[0, 128, 32768, 65535]], ">u2"), [0, 0, 128, 255]),
    ("I", np.array([[0, 257, 65535, 70000]], np.int32), [0, 1, 255, 255]),        # clipped above 16 bits
    ("F", np.array([[0.0, 0.5, 1.0, 7.0]], np.float32), [0, 128, 255, 255]),       # 0.0 black, 1.0 white
])
def test_wide_greyscale_modes(mode, values, expected):
    image = Image.frombuffer(mode, (values.shape[1], 1), values.tobytes(), "raw", mode, 0, 1)
    assert image.mode == mode
    rgb = np.asarray(image_decode.to_rgb(image))
    assert rgb[0, :, 0].tolist() == expected


def test_transparent_pixels_show_the_background_not_their_hidden_colour():
    data = _png(Image.fromarray(hidden_colour_rgba()))
    rgb = decode_rgb(data, "hidden.png", 10**6)
    assert BACKGROUND == (255, 255, 255)
    assert (rgb[:, :8] == BACKGROUND).all(), "alpha 0: the background, never the stored red"
    assert (rgb[:, 8:] == (0, 0, 255)).all()


def test_half_transparent_and_palette_transparency_are_composited():
    la = Image.fromarray(np.dstack([np.zeros((2, 2), np.uint8), np.full((2, 2), 128, np.uint8)]))
    assert la.mode == "LA"
    assert np.asarray(image_decode.to_rgb(la))[0, 0].tolist() == [127, 127, 127]   # black at 50%
    palette = Image.new("P", (2, 1))
    palette.putpalette([255, 0, 0, 0, 255, 0])
    palette.putpixel((1, 0), 1)
    palette.info["transparency"] = 0                 # palette entry 0 (red) is transparent
    rgb = decode_rgb(_png(palette), "palette.png", 10**6)
    assert rgb[0].tolist() == [list(BACKGROUND), [0, 255, 0]]


def test_cmyk_is_converted():
    cmyk = Image.new("CMYK", (2, 2), (0, 255, 255, 0))   # no black, full magenta + yellow: red
    buffer = io.BytesIO()
    cmyk.save(buffer, format="JPEG", quality=100)
    rgb = decode_rgb(buffer.getvalue(), "cmyk.jpg", 10**6)
    assert rgb.shape == (2, 2, 3) and rgb[0, 0, 0] > 200 and rgb[0, 0, 1] < 60


# ---------------------------------------------------------------- reject details

def test_reject_details_name_the_file_and_never_a_memory_address():
    for data, expected in ((b"", "empty file (0 bytes)"),
                           (b"GIF89a but not really", "not an image in a format Pillow reads")):
        with pytest.raises(ImageProblem) as first:
            decode_rgb(data, "/in/x.png", 10**6)
        with pytest.raises(ImageProblem) as second:
            decode_rgb(data, "/in/x.png", 10**6)
        assert first.value.reason == reasons.UNREADABLE_IMAGE
        assert first.value.detail == second.value.detail == f"/in/x.png: {expected}"
    assert image_decode.describe_error(ValueError("bad <_io.BytesIO object at 0x7f12ab>")) == \
        "ValueError: bad <_io.BytesIO object>"


def test_a_zero_byte_image_gives_the_same_reject_in_two_builds(tmp_path):
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "noise.jpg").write_bytes(bytes(range(256)) * 4)
    refs = [ImageRef(str(tmp_path / "empty.png"), "empty"), ImageRef(str(tmp_path / "noise.jpg"), "noise")]

    expected = [
        ("empty", reasons.UNREADABLE_IMAGE, f"{tmp_path}/empty.png: empty file (0 bytes)"),
        ("noise", reasons.UNREADABLE_IMAGE, f"{tmp_path}/noise.jpg: not an image in a format Pillow reads")]
    for build in ("first", "second"):     # each build must give exactly these details
        p = local_test_pipeline()
        out = p | beam.Create(refs) | EmbedImages(THUMB)
        assert_that(out[REJECTS] | beam.Map(lambda r: (r.item_id, r.reason, r.detail)),
                    equal_to(expected), label=build)
        p.run().wait_until_finish()


# ---------------------------------------------------------------- pixel limit

def test_the_pixel_limit_is_read_from_the_header_without_decoding(tmp_path, monkeypatch):
    big = Image.new("1", (10000, 10000))           # 100 M pixels, a few kB as PNG
    path = tmp_path / "big.png"
    big.save(path)
    assert path.stat().st_size < 100_000

    def no_decoding(self, *args, **kwargs):
        raise AssertionError("pixels were decoded")
    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
    with pytest.raises(ImageProblem) as problem:
        check_pixel_limit(str(path), 50_000_000)
    assert problem.value.reason == reasons.TOO_MANY_PIXELS
    assert problem.value.detail == (f"{path}: 10000x10000 = 100,000,000 pixels, "
                                    "over the limit of 50,000,000")
    check_pixel_limit(str(path), 100_000_000)        # at the limit: allowed
    with pytest.raises(ImageProblem) as problem:
        decode_rgb(path.read_bytes(), str(path), 50_000_000)
    assert problem.value.reason == reasons.TOO_MANY_PIXELS


def test_above_pillows_own_ceiling_is_the_same_reject():
    width = pillow_pixel_ceiling() // 1000 + 1
    with pytest.raises(ImageProblem) as problem:
        read_header(png_header_only(width, 1000), "huge.png", 50_000_000)
    assert problem.value.reason == reasons.TOO_MANY_PIXELS


def test_hash_and_dedupe_rejects_images_over_the_limit_before_embedding(tmp_path):
    (tmp_path / "huge.png").write_bytes(png_header_only(12000, 12000))
    (tmp_path / "bigger.png").write_bytes(png_header_only(pillow_pixel_ceiling(), 2))
    Image.fromarray(hidden_colour_rgba()).save(tmp_path / "small.png")
    refs = [ImageRef(str(tmp_path / f"{name}.png"), name) for name in ("huge", "bigger", "small")]

    p = local_test_pipeline()
    hashed = p | beam.Create(refs) | HashAndDedupe(max_pixels=50_000_000)
    embedded = hashed[MAIN] | EmbedImages(THUMB, max_pixels=50_000_000)
    assert_that(hashed[REJECTS] | beam.Map(lambda r: (r.stage, r.item_id, r.reason)),
                equal_to([("images", "huge", reasons.TOO_MANY_PIXELS),
                          ("images", "bigger", reasons.TOO_MANY_PIXELS)]), label="over the limit")
    assert_that(embedded[MAIN] | beam.Map(lambda e: e.image_id), equal_to(["small"]), label="kept")
    result = p.run()
    result.wait_until_finish()
    counts = read_stage_counts(result)
    assert counts["images"]["image.rejected.too_many_pixels"] == 2
    assert reconcile(counts) == []


def test_the_encoder_checks_the_limit_too(tmp_path):
    Image.new("L", (300, 200)).save(tmp_path / "wide.png")
    ref = ImageRef(str(tmp_path / "wide.png"), "wide")
    p = local_test_pipeline()
    out = p | beam.Create([ref]) | EmbedImages(THUMB, max_pixels=50_000)
    assert_that(out[REJECTS] | beam.Map(lambda r: (r.stage, r.reason, r.detail)), equal_to([
        ("embed", reasons.TOO_MANY_PIXELS,
         f"{tmp_path}/wide.png: 300x200 = 60,000 pixels, over the limit of 50,000")]))
    p.run().wait_until_finish()


def test_max_pixels_is_a_config_key_with_a_range():
    cfg = load_config("pipelines/imagecode/configs/paper.yaml", [], ImageCodeConfig)
    assert cfg.static.max_pixels == 50_000_000
    assert load_config("pipelines/imagecode/configs/sample.yaml", [], ImageCodeConfig).static.max_pixels \
        == 50_000_000
    for bad in (0, pillow_pixel_ceiling() + 1):
        with pytest.raises(ConfigError, match="static.max_pixels"):
            load_config("pipelines/imagecode/configs/paper.yaml", [f"static.max_pixels={bad}"], ImageCodeConfig)


# ---------------------------------------------------------------- publishing

def test_static_sets_publish_16bit_and_transparent_pngs_correctly(tmp_path):
    sources = {"ramp": Image.fromarray(gradient_16bit()), "hidden": Image.fromarray(hidden_colour_rgba())}
    paths = {}
    for name, image in sources.items():
        paths[name] = str(tmp_path / f"{name}.png")
        image.save(paths[name])
    static_set = StaticSet(set_name="open-images-0_ramp", query_id="ramp", image_ids=["ramp", "hidden"],
                           image_paths=[paths["ramp"], paths["hidden"]], distances=[0.0, 0.5],
                           split="train")
    vectors = [ImageEmbedding(name, paths[name], "", np.eye(4, dtype=np.float32)[i])
               for i, name in enumerate(("ramp", "hidden"))]
    staging = tmp_path / "staging"
    p = local_test_pipeline()
    rows = (p | "Sets" >> beam.Create([static_set]), p | "Vectors" >> beam.Create(vectors)) \
        | PublishStaticSets(str(staging), "open-images", jpeg_quality=95)
    assert_that(rows | beam.Map(lambda r: r["image_paths"]), equal_to([[
        "compat/image-sets/open-images-0_ramp/img0.jpg", "compat/image-sets/open-images-0_ramp/img1.jpg"]]))
    p.run().wait_until_finish()

    ramp = np.asarray(Image.open(staging / "compat/image-sets/open-images-0_ramp/img0.jpg").convert("L"), np.int64)
    assert np.abs(ramp - np.arange(256)[None, :]).max() <= 4     # JPEG noise, not all white
    hidden = np.asarray(Image.open(staging / "compat/image-sets/open-images-0_ramp/img1.jpg").convert("RGB"),
                        np.int64)
    assert np.abs(hidden[:, :6] - np.array(BACKGROUND)).max() <= 8   # the background, not red
    assert np.abs(hidden[:, 10:] - np.array([0, 0, 255])).max() <= 8
