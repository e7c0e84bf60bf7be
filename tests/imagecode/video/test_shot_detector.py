"""shots.backend: transnetv2 in ImageCoDe: its weights are recorded and key the shot lists."""
from pipelines.config import load_config
from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.params import build_rules, shot_params
from pipelines.imagecode.video.plans import SHOT_LIST, SHOTS_CODE_VERSION, cache_keys
from transforms.cache.store import cache_key
from transforms.core.hashing import file_sha256
from transforms.video import transnetv2

SAMPLE_CONFIG = "pipelines/imagecode/configs/sample.yaml"


def config(*overrides):
    return load_config(SAMPLE_CONFIG, ["quality.ocr.enabled=false", *overrides], ImageCodeConfig)


def test_transnetv2_weights_are_recorded_and_key_the_shot_lists():
    learned = config("shots.backend=transnetv2", "shots.transnetv2_threshold=0.4")
    rules = build_rules(learned)
    detector = rules.models["shot_detector"]
    assert detector["weights_sha256"] == file_sha256(transnetv2.weights_path())
    assert shot_params(learned)["threshold"] == 0.4
    spec = rules.video_cache_spec("/cache", run_id="r")
    assert spec.shot_detector_fingerprint == detector["fingerprint"]
    other = spec.__class__(**{**spec.__dict__, "shot_detector_fingerprint": "0" * 16})
    params = shot_params(learned)
    assert cache_keys(params, 10, spec)("sha")[SHOT_LIST] != cache_keys(params, 10, other)("sha")[SHOT_LIST]


def test_rule_based_backends_record_no_detector_and_keep_their_keys():
    rules = build_rules(config())
    assert "shot_detector" not in rules.models
    spec = rules.video_cache_spec("/cache", run_id="r")
    assert spec.shot_detector_fingerprint == ""
    params = shot_params(config())
    # the key a shot list had before the learned backend existed: caches stay warm
    assert cache_keys(params, 10, spec)("sha")[SHOT_LIST] == cache_key(
        SHOT_LIST, "sha", "", dict(params, code=SHOTS_CODE_VERSION))
