import json
from collections import namedtuple

import apache_beam as beam

from pipelines.imagecode.compat import PUBLIC_FILES, labelled_layout, unlabelled_layout
from pipelines.imagecode.release import WritePublicAnnotations
from tests.beam_testing import local_test_pipeline

Kept = namedtuple("Kept", "description_id set_name target_index text split")

ROWS = [
    Kept("b", "MSR-VTT-videov1-shot0_0", 7, "the man turns left", "train"),
    Kept("a", "MSR-VTT-videov1-shot0_0", 2, "both hands up", "train"),
    Kept("c", "MSR-VTT-videov1-shot0_0", 7, "a later duplicate", "train"),
    Kept("d", "open-images-3_0f05", 0, "a round bowl", "valid"),
    Kept("f", "open-images-4_aa", 5, "second", "test"),
    Kept("e", "open-images-4_aa", 1, "first", "test"),
]


def test_layouts_match_the_public_shapes():
    rows = [(r.description_id, r.set_name, r.target_index, r.text) for r in ROWS if r.split == "train"]
    assert labelled_layout(rows) == {"MSR-VTT-videov1-shot0_0": {"2": "both hands up",
                                                                  "7": "the man turns left"}}
    test = [(r.description_id, r.set_name, r.target_index, r.text) for r in ROWS if r.split == "test"]
    assert unlabelled_layout(test) == {"open-images-4_aa": ["first", "second"]}


def test_every_split_file_is_written_and_reads_back(tmp_path):
    with local_test_pipeline() as p:
        _ = p | beam.Create(ROWS) | WritePublicAnnotations(str(tmp_path))
    files = {s: json.loads((tmp_path / "compat" / name).read_text()) for s, name in PUBLIC_FILES.items()}
    assert files["train"]["MSR-VTT-videov1-shot0_0"]["7"] == "the man turns left"
    assert files["valid"] == {"open-images-3_0f05": {"0": "a round bowl"}}
    assert files["test"] == {"open-images-4_aa": ["first", "second"]}


def test_an_empty_split_still_gets_its_file(tmp_path):
    with local_test_pipeline() as p:
        _ = p | beam.Create(ROWS[:1]) | WritePublicAnnotations(str(tmp_path))
    assert json.loads((tmp_path / "compat" / "valid_data.json").read_text()) == {}
