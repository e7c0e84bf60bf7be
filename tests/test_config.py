import os

import pytest

from pipelines import registry
from pipelines.config import config_hash, input_paths, load_config, reads_sample, sample_dir, to_dict
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
    # A distributed run's workers do not share the driver's working directory. A shipped
    # config's paths are the checkout's (issue 45: the sample was made again under the
    # working folder); a --set path, as a shell's, the working folder's.
    from pipelines.vsr.config import VsrConfig
    monkeypatch.chdir(tmp_path)
    cfg = load_config(os.path.join(ROOT, "pipelines/vsr/configs/sample.yaml"),
                      ["inputs.votes=[gs://bucket/votes.jsonl, /abs/votes.jsonl, mine.jsonl]"], VsrConfig)
    assert cfg.inputs.coco[0] == str(ROOT / "samples/vsr/instances_train2017.json")
    assert cfg.inputs.votes == ["gs://bucket/votes.jsonl", "/abs/votes.jsonl", str(tmp_path / "mine.jsonl")]
    cfg = load_config(os.path.join(ROOT, SAMPLE_CONFIG), [], ImageCodeConfig)
    assert cfg.inputs.videos == str(ROOT / "samples/imagecode/videos.jsonl")
    own = tmp_path / "own.yaml"   # one's own config file: relative to the working folder
    own.write_text(open(os.path.join(ROOT, SAMPLE_CONFIG)).read())
    assert load_config(str(own), [], ImageCodeConfig).inputs.videos == str(tmp_path / "samples/imagecode/videos.jsonl")
    assert cfg.embed.checkpoint is None     # unset stays unset
    assert cfg.stats.parser is None or not os.path.isabs(cfg.stats.parser)  # a name, not a path


SAMPLES = [(name, config) for name in registry.names() for config in registry.load(name).sample_configs()]


@pytest.mark.parametrize("name, config", SAMPLES, ids=[f"{n}-{c}" for n, c in SAMPLES])
def test_every_sample_config_reads_the_checkouts_sample_from_any_working_folder(name, config, tmp_path,
                                                                                monkeypatch):
    """Issue 45: a sample built from another working folder was generated again under
    <cwd>/samples/. Every path of every sample config is the checkout's sample folder."""
    monkeypatch.chdir(tmp_path)
    entry = registry.entry(name)
    cfg = load_config(entry.config_path(config), [], entry.config_type)
    paths = [path for _, _, found in input_paths(cfg) for path in found]
    assert reads_sample(cfg) and paths
    assert all(path.startswith(sample_dir(name) + os.sep) for path in paths), paths


def test_a_sample_built_from_another_working_folder_is_the_checkouts(tmp_path, monkeypatch):
    from pipelines import build
    from tests.release.release_files import build_record
    monkeypatch.chdir(tmp_path)
    final = build.build("vsr", ["--config", "sample", "--output", "out", "--version", "1.0.0", "--quiet"])
    assert final == str(tmp_path / "out" / "vsr" / "1.0.0")
    assert not (tmp_path / "samples").exists() and os.listdir(tmp_path) == ["out"]
    assert build_record(final)["input_root"] == sample_dir("vsr")
