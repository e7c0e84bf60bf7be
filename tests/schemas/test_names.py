"""Names that become paths: safe against hostile input, and in the public grammar."""
import json

import numpy as np
import pytest

from pipelines.imagecode.names import (compat_image_path, image_file_name, parse_video_set_name,
                                       video_set_name)
from schemas.names import safe_name
from tests.paths import REALDATA as ALL_REALDATA

REALDATA = ALL_REALDATA / "imagecode"


def _is_one_safe_component(name):
    return (name and "/" not in name and "\\" not in name and ".." not in name
            and not name.startswith(".") and name.isascii()
            and all(c.isalnum() or c in "-_." for c in name))


@pytest.mark.parametrize("hostile", [
    "../../etc", "a/b", "..", ".", "...", ".hidden", "a\\b", "a\x00b", "tab\there",
    "new\nline", "vidéo", "视频", "a b", "/abs/path", "C:\\x", "-dash-", "a..b", "\u202eevil",
])
def test_safe_name_gives_one_safe_component(hostile):
    name = safe_name(hostile)
    assert _is_one_safe_component(name), (hostile, name)
    assert safe_name(name) == name  # idempotent


def test_safe_name_examples():
    # names that needed a change carry a hash of the original, so they stay apart
    assert safe_name("../../etc") == "______etc-74ccf3c5b4c1"
    assert safe_name("a/b") == "a_b-c14cddc033f6"
    assert safe_name("..") == "__-5ec1f7e700f3"
    assert safe_name("vidéo") == "vid_o-bc6b753e3015"
    # safe names are kept as they are: set names and cache keys of real ids never change
    assert safe_name("a_b") == "a_b"
    assert safe_name("christmas_56Nm66j-i5Q") == "christmas_56Nm66j-i5Q"
    assert safe_name("TrainValVideo_video2044") == "TrainValVideo_video2044"


def test_ids_that_read_alike_once_made_safe_stay_distinct():
    ids = ["视频一", "视频二", "видео1", "видео2", "a/b", "a b", "a_b", "a\\b", "a\x00b",
           "ü", "u\u0308", "\ud800"]  # the last: a lone surrogate, as JSON may give one
    names = [safe_name(i) for i in ids]
    assert len(set(names)) == len(ids), names
    assert safe_name("视频一") == "___-ab3272992f3f"
    assert safe_name("视频二") == "___-0bdd3ecbd754"
    assert len({video_set_name("s", i, 0, 0) for i in ids}) == len(ids)
    for i in ids:
        assert parse_video_set_name(video_set_name("s", i, 0, 0)).video_id == safe_name(i)


@pytest.mark.parametrize("bad", ["", None, 7, "x" * 300])
def test_safe_name_refuses(bad):
    with pytest.raises(ValueError):
        safe_name(bad)


def test_set_name_grammar_round_trips():
    name = video_set_name("MSR-VTT", "TrainValVideo_video2044", 1, 0)
    assert name == "MSR-VTT-videoTrainValVideo_video2044-shot1_0"
    assert tuple(parse_video_set_name(name)) == ("MSR-VTT", "TrainValVideo_video2044", 1, 0)
    # hostile parts are made safe first, and the result still parses
    name = video_set_name("../src", "a/../b", np.int64(3), 12)
    assert _is_one_safe_component(name)
    assert parse_video_set_name(name).shot_index == 3
    assert parse_video_set_name(name).set_index == 12


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_set_name_refuses_bad_indices(bad):
    with pytest.raises(ValueError):
        video_set_name("MSR-VTT", "v", bad, 0)
    with pytest.raises(ValueError):
        image_file_name(bad)


@pytest.mark.parametrize("bad", ["", "open-images-1815_f91d6f546e63f20d",
                                 "MSR-VTT-videoX-shot1", "MSR-VTT-videoX-shot1_0/..",
                                 "a/b-videoX-shot1_0"])
def test_parse_refuses_other_names(bad):
    with pytest.raises(ValueError):
        parse_video_set_name(bad)


def test_grammar_matches_every_public_video_set_name():
    names = set()
    for split in ("train", "valid"):
        with open(REALDATA / f"{split}_data.json") as f:
            names |= {k for k in json.load(f) if not k.startswith("open-images")}
    assert len(names) > 1000
    sources = set()
    for name in names:
        parts = parse_video_set_name(name)
        sources.add(parts.source)
        assert safe_name(parts.source) == parts.source
        assert safe_name(parts.video_id) == parts.video_id
        assert video_set_name(*parts) == name
    assert sources == {"MSR-VTT", "video-storytelling", "YouCook"}


def test_image_paths():
    assert image_file_name(120) == "img120.jpg"
    assert image_file_name(np.int32(7)) == "img7.jpg"
    assert (compat_image_path("MSR-VTT-videoX-shot1_0", 4)
            == "compat/image-sets/MSR-VTT-videoX-shot1_0/img4.jpg")
    with pytest.raises(ValueError):
        compat_image_path("../x", 4)
