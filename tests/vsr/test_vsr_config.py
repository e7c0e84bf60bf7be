"""The VSR configs load, carry the paper's values, and fail early on bad values."""
import pytest

from pipelines.config import load_config
from pipelines.vsr.config import VsrConfig
from transforms.core.errors import ConfigError

PAPER = "pipelines/vsr/configs/paper.yaml"


def test_paper_config_values():
    cfg = load_config(PAPER, ["inputs.annotations=[a.jsonl]"], VsrConfig)
    assert cfg.sampling.min_area == 30000 and cfg.sampling.max_instances == 1
    assert (cfg.validation.min_agreeing, cfg.validation.min_agreement) == (2, "2/3")
    assert cfg.splits.random == {"train": 0.7, "dev": 0.1, "test": 0.2}
    assert cfg.splits.zeroshot == {"train": 0.5, "dev": 0.2, "test": 0.3}
    assert "congruent" in cfg.relations() and len(cfg.relations()) == 71


@pytest.mark.parametrize("override, message", [
    ("validation.min_agreement=0.6x", "not a fraction"),
    ("validation.min_agreement=3/2", "(0, 1]"),
    ("validation.writer_votes=ignore", "is not one of"),
    ("splits.random={train: 0.7, test: 0.2}", "summing to 1"),
    ("captions.aliases={sofa: settee}", "not a COCO category"),
    ("captions.extra_relations={near: X}", "already in Table 1"),
    ("inputs.captions=[c.jsonl]", "needs inputs.coco"),
    ("sampling.pair=3", "unknown config key"),
])
def test_bad_values_fail_before_any_work(override, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(PAPER, ["inputs.annotations=[a.jsonl]", override], VsrConfig)


def test_an_input_is_required():
    with pytest.raises(ConfigError, match="inputs.coco"):
        load_config(PAPER, [], VsrConfig)
