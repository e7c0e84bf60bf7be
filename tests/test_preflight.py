import pytest

from pipelines.config import load_config
from pipelines.imagecode_config import ImageCodeConfig
from pipelines.preflight import PreflightError, check_imagecode

SAMPLE_CONFIG = "pipelines/configs/imagecode_sample.yaml"


@pytest.fixture
def manifest(tmp_path):
    path = tmp_path / "videos.jsonl"
    path.write_text('{"path": "v.mp4", "source": "s", "video_id": "v", "split": "train"}\n')
    return str(path)


def config(manifest, *overrides):
    return load_config(SAMPLE_CONFIG, [f"inputs.videos={manifest}", "static.images=null",
                                       "crowd.descriptions=null", "crowd.retrievals=null",
                                       *overrides], ImageCodeConfig)


@pytest.mark.parametrize("override, message", [
    ("static.images=/nowhere/images.jsonl", "static.images: no such file or folder"),
    ("crowd.descriptions=/nowhere/d.csv", "crowd.descriptions: no such file or folder"),
    ("stats.parser=en_core_web_sm", "stats.parser: spaCy model 'en_core_web_sm' is not installed"),
    ("embed.kind=open_clip", "embed.checkpoint is not set"),
])
def test_missing_inputs_and_models_fail_before_any_work(manifest, override, message):
    with pytest.raises(PreflightError, match=message):
        check_imagecode(config(manifest, override))


def test_a_missing_video_manifest_names_its_key(tmp_path):
    with pytest.raises(PreflightError, match="inputs.videos: no such file"):
        check_imagecode(config(str(tmp_path / "none.jsonl")))


def test_the_sample_config_passes(manifest):
    check_imagecode(config(manifest))
