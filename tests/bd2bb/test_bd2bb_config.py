"""BD2BB configs: the paper's values load and validate; mistakes fail before any work."""
import pytest

from pipelines import build
from pipelines.bd2bb.config import BD2BBConfig
from pipelines.config import load_config
from transforms.core.errors import ConfigError


def test_paper_config_carries_the_paper_values():
    cfg = load_config("pipelines/bd2bb/configs/paper.yaml", [], BD2BBConfig)
    assert cfg.filters.intention_min_tokens == 5
    assert cfg.splits.ratios == {"train": 0.2, "val": 0.4, "test": 0.4}
    assert cfg.clusters.k is None and 60 in cfg.k_values()
    assert cfg.parser.backend == "conllu"
    sample = load_config("pipelines/bd2bb/configs/sample.yaml", ["clusters.k=60"], BD2BBConfig)
    assert sample.clusters.k == 60


@pytest.mark.parametrize("override,message", [
    ("clusters.kk=3", "unknown config key"),
    ("splits.ratios={train: 0.5, val: 0.5}", "splits.ratios"),
    ("parser.backend=stanza", "parser.model is required"),
    ("decoys.pool_size=1", "decoys.pool_size"),
    ("clusters.k_min=150", "k_min <= k_max"),
])
def test_bad_values_fail_at_load(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config("pipelines/bd2bb/configs/paper.yaml", [override], BD2BBConfig)


def test_missing_inputs_stop_the_build_before_any_work(tmp_path, capsys):
    code = build.build_main("bd2bb", ["--config", "pipelines/bd2bb/configs/paper.yaml", "--output", str(tmp_path),
                      "--version", "1.0.0"])
    assert code == 2 and "inputs.tuples is not set" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
