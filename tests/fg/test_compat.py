"""The public layout, byte for byte (pipelines/fg/compat.py): each public annotation file
read and written back gives its exact bytes; the image-name array round-trips."""
import json

import numpy as np
import pytest

from pipelines.fg.compat import (annotation_bytes, read_image_filenames, write_annotations,
                                 write_image_filenames)
from tests.paths import REALDATA
from transforms.core.errors import InputError

FG = REALDATA / "fg"


@pytest.mark.parametrize("name", ["MSCOCO", "Flickr30K"])
def test_public_annotation_file_round_trips_byte_for_byte(name, tmp_path):
    public = FG / f"{name}_FG_ann.json"
    assert public.exists(), f"public FG data not found at {public}"
    raw = public.read_bytes()
    captions = json.loads(raw)
    assert annotation_bytes(captions) == raw
    write_annotations(str(tmp_path / "ann.json"), captions)
    assert (tmp_path / "ann.json").read_bytes() == raw


def test_key_order_is_the_sources_not_a_sort():
    coco = json.loads((FG / "MSCOCO_FG_ann.json").read_bytes())
    assert list(coco) != sorted(coco)              # COCO keeps the Karpathy order
    flickr_bytes = (FG / "Flickr30K_FG_ann.json").read_bytes()
    assert annotation_bytes(json.loads(flickr_bytes), sort_keys=True) == flickr_bytes
    assert annotation_bytes({"b": ["x"], "a": ["y"]}) == b'{"b": ["x"], "a": ["y"]}'
    assert annotation_bytes({"b": ["x"], "a": ["y"]}, sort_keys=True) == b'{"a": ["y"], "b": ["x"]}'


def test_non_ascii_is_escaped_and_there_is_no_newline():
    assert annotation_bytes({"1": ["caf\u00e9"]}) == b'{"1": ["caf\\u00e9"]}'


def test_image_filenames_round_trip(tmp_path):
    names = ["COCO_val2014_000000452113.jpg", "000000000008.jpg", "1007129816.jpg"]
    path = tmp_path / "MSCOCO_FG_img_filenames.npy"
    write_image_filenames(str(path), names)
    array = np.load(path, allow_pickle=False)
    assert array.ndim == 1 and array.dtype.kind == "U" and array.dtype.itemsize // 4 == 29
    assert read_image_filenames(str(path)) == names


def test_read_image_filenames_refuses_other_arrays(tmp_path):
    path = tmp_path / "numbers.npy"
    np.save(path, np.arange(3))
    with pytest.raises(InputError, match="1-D unicode array"):
        read_image_filenames(str(path))
    (tmp_path / "junk.npy").write_text("junk")
    with pytest.raises(InputError, match="junk.npy"):
        read_image_filenames(str(tmp_path / "junk.npy"))
