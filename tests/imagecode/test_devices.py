"""ImageCoDe's device and precision keys (issue 37): checked when the config loads, handed
to the stages, recorded per stage in the manifest's models, and in a cache key only where
the device may change a value (TransNetV2 off the CPU; CLIP's fp16/bf16)."""
import pytest

from pipelines.config import load_config
from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.params import encoder_spec, quality_rule, shot_params, stage_devices
from transforms.core.devices import DeviceError
from transforms.core.errors import ConfigError
from transforms.image.encoders import encoder_identity
from transforms.image.weights import EncoderError

SAMPLE_CONFIG = "pipelines/imagecode/configs/sample.yaml"


def config(*overrides):
    return load_config(SAMPLE_CONFIG, ["quality.ocr.enabled=false", *overrides], ImageCodeConfig)


def cuda_visible():
    import torch
    return torch.cuda.is_available()


@pytest.mark.parametrize("override", ["embed.precision=fp8", "quality.brisque.device=gpu",
                                      "shots.transnetv2_device=tpu", "static.knn.backend=annoy",
                                      "static.knn.device=gpu"])
def test_bad_values_stop_at_load_naming_the_key(override):
    with pytest.raises(ConfigError, match=override.split("=")[0].rsplit(".", 1)[-1]):
        config(override)


def test_the_keys_reach_the_stages():
    cfg = config("embed.kind=open_clip", "embed.precision=bf16", "quality.brisque.device=cpu",
                 "static.knn.backend=torch", "static.knn.device=cpu")
    assert encoder_spec(cfg).precision == "bf16"
    gate = quality_rule(cfg)()
    assert gate.brisque.device == "cpu"
    assert cfg.static.knn.spec().backend == "torch" and cfg.static.knn.spec().device == "cpu"


def test_half_precision_of_the_thumbnail_stand_in_is_an_error_naming_the_key():
    with pytest.raises(EncoderError, match="embed.precision"):
        encoder_spec(config("embed.precision=fp16"))


def test_the_shot_lists_key_names_transnetv2s_device_only_off_the_cpu():
    assert "device" not in shot_params(config())
    assert "device" not in shot_params(config("shots.backend=transnetv2"))     # cpu: the old key
    assert shot_params(config("shots.backend=transnetv2", "shots.transnetv2_device=cuda"))["device"] == "cuda"
    # the device key means nothing to the other backends
    assert "device" not in shot_params(config("shots.transnetv2_device=cuda"))


def test_the_manifest_records_each_model_stage_where_it_runs():
    devices = stage_devices(config())
    assert set(devices) == {"brisque", "static_knn"}      # the sample: thumbnail encoder, pyscenedetect
    assert devices["brisque"]["device_setting"] == "auto" and devices["brisque"]["torch_version"]
    knn = devices["static_knn"]
    assert knn["backend"] == "faiss" and knn["faiss_version"] and knn["rerank"] == "float64"
    if not cuda_visible():
        assert devices["brisque"]["device"] == knn["device"] == "cpu"
        assert "cuda_runtime" not in devices["brisque"]


@pytest.mark.skipif(cuda_visible(), reason="a CUDA device is visible here")
def test_cuda_where_there_is_none_is_an_error_naming_the_key():
    with pytest.raises(DeviceError, match="quality.brisque.device is 'cuda'"):
        stage_devices(config("quality.brisque.device=cuda"))
    with pytest.raises(DeviceError, match="shots.transnetv2_device is 'cuda'"):
        stage_devices(config("shots.backend=transnetv2", "shots.transnetv2_device=cuda"))


def test_precision_changes_the_encoder_fingerprint_the_device_does_not():
    thumb = config()
    assert encoder_spec(thumb).precision == "fp32"
    base = encoder_identity(encoder_spec(thumb))["fingerprint"]
    assert encoder_identity(encoder_spec(config("embed.device=cpu")))["fingerprint"] == base
