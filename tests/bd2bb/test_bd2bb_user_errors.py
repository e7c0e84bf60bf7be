"""Problems a user must fix are UserErrors (one line "error: ...", exit 2), naming the
config key or the file."""
import numpy as np
import pytest

from pipelines.bd2bb import compat
from pipelines.bd2bb.clustering import check_review, cluster_actions, parse_review
from transforms.core.errors import ConfigError, InputError, UserError


def test_review_decisions_for_another_clustering_are_a_config_error():
    rng = np.random.default_rng(0)
    items = [(f"a{i}", v / np.linalg.norm(v)) for i, v in enumerate(rng.normal(size=(8, 4)))]
    result = cluster_actions(items, [2], seed=0, fixed_k=2)
    stale = parse_review("decision,cluster,action,to_cluster,label\n"
                         "clustering,,,,0000000000000000\nlabel,1,,,tennis\n")
    with pytest.raises(ConfigError) as raised:
        check_review(stale, result)
    assert isinstance(raised.value, UserError)
    assert str(raised.value).startswith("clusters.review: the decisions were written for clustering")


def test_a_csv_that_is_not_the_public_layout_is_an_input_error_naming_the_file(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("id,sentence\n1,hello\n", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        compat.read_file(str(path))
    assert isinstance(raised.value, UserError)
    assert str(raised.value).startswith(f"{path}: not a BD2BB CSV")
