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


@pytest.fixture
def a_gpu_is_visible(monkeypatch):
    """torch (and so every `auto`) sees a CUDA device; FAISS's build sees none. Only
    resolution is exercised: nothing runs on the pretended device."""
    import torch
    import transforms.core.devices as devices
    import transforms.vectors.knn as knn
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(devices, "cuda_versions", lambda: {"gpu": "pretended"})
    monkeypatch.setattr(knn, "_faiss_gpus", lambda: 0)


def test_the_shot_lists_key_names_the_device_transnetv2_resolves_to_off_the_cpu():
    assert "device" not in shot_params(config())
    assert "device" not in shot_params(config("shots.backend=transnetv2"))     # auto, no GPU: the CPU's key


def test_on_a_gpu_the_shot_lists_key_holds_cuda_not_auto(a_gpu_is_visible):
    assert shot_params(config("shots.backend=transnetv2"))["device"] == "cuda"
    assert shot_params(config("shots.backend=transnetv2", "shots.transnetv2_device=cuda"))["device"] == "cuda"
    assert "device" not in shot_params(config("shots.backend=transnetv2", "shots.transnetv2_device=cpu"))
    # the device key means nothing to the other backends
    assert "device" not in shot_params(config("shots.transnetv2_device=cuda"))


def test_auto_puts_every_model_stage_on_a_visible_gpu(a_gpu_is_visible):
    """The paper config's defaults on a GPU machine: CLIP in fp16 on CUDA, BRISQUE on CUDA
    in calls of 256 frames, TransNetV2 on CUDA, the kNN's candidates from torch on CUDA
    (this FAISS build has no GPU); the manifest records each where it runs."""
    from pipelines.imagecode.video.quality_gate import GPU_FRAMES_PER_CALL
    from transforms.image.encoders import resolve_precision
    cfg = load_config("pipelines/imagecode/configs/paper.yaml",
                      ["inputs.videos=pipelines/imagecode/configs/paper.yaml", "static.images=null",
                       "shots.backend=transnetv2"], ImageCodeConfig)
    assert resolve_precision(encoder_spec(cfg)) == "fp16"
    devices = stage_devices(cfg)
    assert devices["embed"]["device"] == "cuda" and devices["embed"]["precision"] == "fp16"
    assert devices["embed"]["precision_setting"] == "auto"
    assert devices["brisque"]["device"] == devices["shots"]["device"] == "cuda"
    assert quality_rule(cfg)().brisque_frames_per_call == GPU_FRAMES_PER_CALL
    knn = cfg.static.knn.spec()
    from transforms.vectors.knn import knn_identity, resolve_knn
    assert resolve_knn(knn).backend == "torch" and resolve_knn(knn).device == "cuda"
    assert knn_identity(knn)["backend_setting"] == "auto"


@pytest.mark.skipif(cuda_visible(), reason="a CUDA device is visible here")
def test_without_a_gpu_auto_means_the_cpu_and_fp32():
    from transforms.image.encoders import resolve_precision
    from transforms.vectors.knn import resolve_knn
    cfg = config("embed.kind=open_clip", "quality.brisque.device=auto")
    assert resolve_precision(encoder_spec(cfg)) == "fp32"
    assert quality_rule(cfg)().brisque_frames_per_call == 1
    assert resolve_knn(cfg.static.knn.spec()) == type(cfg.static.knn.spec())("faiss", "cpu")


def test_int8_is_an_identity_of_its_own_and_runs_on_the_cpu(a_gpu_is_visible):
    cfg = config("embed.kind=open_clip", "embed.precision=int8")
    devices = stage_devices(cfg)
    assert devices["embed"]["device"] == "cpu" and devices["embed"]["precision"] == "int8"
    with pytest.raises(EncoderError, match="embed.precision: int8 runs on the CPU"):
        encoder_spec(config("embed.kind=open_clip", "embed.precision=int8", "embed.device=cuda"))


def test_the_manifest_records_each_model_stage_where_it_runs():
    devices = stage_devices(config())
    assert set(devices) == {"brisque", "static_knn"}      # the sample: thumbnail encoder, pyscenedetect
    # the sample holds BRISQUE to the CPU (its pinned counters: configs/sample.yaml)
    assert devices["brisque"]["device_setting"] == "cpu" and devices["brisque"]["torch_version"]
    knn = devices["static_knn"]
    assert knn["backend_setting"] == "auto" and knn["rerank"] == "float64"
    if not cuda_visible():
        assert knn["backend"] == "faiss" and knn["faiss_version"]
        assert devices["brisque"]["device"] == knn["device"] == "cpu"
        assert "cuda_runtime" not in devices["brisque"]


@pytest.mark.skipif(cuda_visible(), reason="a CUDA device is visible here")
def test_cuda_where_there_is_none_is_an_error_naming_the_key():
    with pytest.raises(DeviceError, match="quality.brisque.device is 'cuda'"):
        stage_devices(config("quality.brisque.device=cuda"))
    with pytest.raises(DeviceError, match="shots.transnetv2_device is 'cuda'"):
        stage_devices(config("shots.backend=transnetv2", "shots.transnetv2_device=cuda"))


def test_precision_changes_the_encoder_fingerprint_the_device_does_not():
    from transforms.image.encoders import resolve_precision
    thumb = config()
    assert encoder_spec(thumb).precision == "auto" and resolve_precision(encoder_spec(thumb)) == "fp32"
    base = encoder_identity(encoder_spec(thumb))["fingerprint"]
    assert encoder_identity(encoder_spec(config("embed.precision=fp32")))["fingerprint"] == base
    assert encoder_identity(encoder_spec(config("embed.device=cpu")))["fingerprint"] == base
