import os

import pytest

from pipelines.config import config_hash, load_config, to_dict
from pipelines.imagecode.config import ImageCodeConfig
from tests.paths import ROOT
from transforms.core.errors import ConfigError

CONFIG = "pipelines/imagecode/configs/paper.yaml"
SAMPLE_CONFIG = "pipelines/imagecode/configs/sample.yaml"


def test_paper_defaults_load_with_their_values():
    cfg = load_config(CONFIG, [], ImageCodeConfig)
    assert cfg.mining.distance_threshold == 0.35
    assert cfg.mining.set_size == 10
    assert cfg.quality.brisque.max_score == 0.65
    assert cfg.decode.stride == 1
    assert cfg.embed.kind == "open_clip" and cfg.embed.model_name == "ViT-B-16"


def test_only_the_sample_config_selects_the_stand_in_encoder():
    assert load_config(SAMPLE_CONFIG, [], ImageCodeConfig).embed.kind == "thumbnail"
    assert load_config(CONFIG, [], ImageCodeConfig).embed.kind == "open_clip"


def test_set_overrides_parse_values_as_yaml():
    cfg = load_config(CONFIG, ["mining.distance_threshold=0.3", "mining.set_size=8",
                               "sampling.sets_per_source={msr-vtt: 5}"], ImageCodeConfig)
    assert cfg.mining.distance_threshold == 0.3
    assert cfg.mining.set_size == 8
    assert cfg.sampling.sets_per_source == {"msr-vtt": 5}


@pytest.mark.parametrize("override, message", [
    ("mining.distance_treshold=0.3", "unknown config key(s): mining.distance_treshold"),
    ("minning.set_size=3", "unknown config key(s): minning"),
    ("mining.set_size=ten", "mining.set_size: expected an integer"),
    ("mining.set_size=2.5", "mining.set_size: expected an integer"),
    ("quality.brisque.enabled=maybe", "quality.brisque.enabled: expected true or false"),
    ("shots.backend=opencv", "shots.backend: 'opencv' is not one of"),
    ("decode.stride=0", "decode.stride must be >= 1"),
    ("mining", "--set expects KEY=VALUE"),
])
def test_bad_overrides_fail_before_any_work(override, message):
    with pytest.raises(ConfigError) as e:
        load_config(CONFIG, [override], ImageCodeConfig)
    assert message in str(e.value)


def test_hash_is_stable_and_follows_values():
    a = load_config(CONFIG, [], ImageCodeConfig)
    b = load_config(CONFIG, [], ImageCodeConfig)
    c = load_config(CONFIG, ["mining.distance_threshold=0.3"], ImageCodeConfig)
    assert config_hash(a) == config_hash(b) != config_hash(c)
    assert to_dict(c)["mining"]["distance_threshold"] == 0.3


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(str(tmp_path / "nope.yaml"), [], ImageCodeConfig)


def test_input_paths_are_made_absolute_for_workers_in_another_directory(tmp_path, monkeypatch):
    # A distributed run's workers do not share the driver's working directory.
    from pipelines.vsr.config import VsrConfig
    monkeypatch.chdir(tmp_path)
    cfg = load_config(os.path.join(ROOT, "pipelines/vsr/configs/sample.yaml"),
                      ["inputs.votes=[gs://bucket/votes.jsonl, /abs/votes.jsonl]"], VsrConfig)
    assert cfg.inputs.coco[0] == str(tmp_path / "samples/vsr/instances_train2017.json")
    assert cfg.inputs.votes == ["gs://bucket/votes.jsonl", "/abs/votes.jsonl"]
    cfg = load_config(os.path.join(ROOT, SAMPLE_CONFIG), [], ImageCodeConfig)
    assert cfg.inputs.videos == str(tmp_path / "samples/imagecode/videos.jsonl")
    assert cfg.embed.checkpoint is None     # unset stays unset
    assert cfg.stats.parser is None or not os.path.isabs(cfg.stats.parser)  # a name, not a path
