"""transforms/image/embed.py: the thumbnail stand-in, the real open_clip loading path (on a tiny
model made here, so no weights are needed), the missing-checkpoint error, and EmbedShots
under Beam."""
import dataclasses
import hashlib
import json

import apache_beam as beam
import numpy as np
import pytest
import torch
from apache_beam.testing.util import assert_that
from PIL import Image
from skimage import data

from schemas.records import ShotFrames, VideoRef
from tests.beam_testing import local_test_pipeline
from transforms.core.stage import read_stage_counts
from transforms.image import embed, encoders
from transforms.image.embed import EmbedShots
from transforms.image.encoders import EncoderSpec, build_encoder, encoder_identity
from transforms.image.random_weights import save_openai_format
from transforms.image.weights import EncoderError

TINY = "tiny-test-vit"
# A ViT small enough to build and run in well under a second on a CPU.
TINY_CONFIG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 2, "layers": 1},
}


def distance(a, b):
    return float(np.linalg.norm(a - b))


@pytest.fixture(scope="module")
def photos():
    astronaut = data.astronaut()                          # 512x512 RGB
    coffee = np.ascontiguousarray(data.coffee()[:, :512])  # 400x512 RGB
    shifted = np.ascontiguousarray(astronaut[8:, 8:])      # same photo, crop moved by 8 px
    return astronaut, coffee, shifted


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny open_clip CLIP with seeded random weights, saved as the two formats we read:
    open_clip's state dict and a TorchScript archive (the format of OpenAI's ViT-B-16.pt)."""
    import open_clip
    folder = tmp_path_factory.mktemp("tiny_clip")
    config = folder / f"{TINY}.json"
    config.write_text(json.dumps(TINY_CONFIG))
    open_clip.add_model_config(config)
    torch.manual_seed(0)
    model = open_clip.create_model(TINY, pretrained=None).eval()
    state_dict = folder / "tiny.pt"
    torch.save(model.state_dict(), state_dict)
    scripted = folder / "tiny_jit.pt"
    with torch.no_grad():
        traced = torch.jit.trace(model, (torch.zeros(1, 3, 32, 32), torch.zeros(1, 8, dtype=torch.long)),
                                 strict=False, check_trace=False)
    traced.save(str(scripted))
    return {"model": model, "config": str(config), "state_dict": str(state_dict), "jit": str(scripted)}


def tiny_spec(tiny_model, **overrides):
    spec = EncoderSpec(kind="open_clip", model_name=TINY, pretrained="none",
                       checkpoint=tiny_model["state_dict"], model_config=tiny_model["config"],
                       batch_size=3, device="cpu")
    return dataclasses.replace(spec, **overrides)


THUMB = EncoderSpec(kind="thumbnail", model_name="thumbnail-16", pretrained="none", batch_size=4)


# ---------------------------------------------------------------- thumbnail encoder

def test_thumbnail_is_deterministic_and_unit_norm(photos):
    encoder = build_encoder(THUMB)
    first = encoder.encode(list(photos))
    again = build_encoder(THUMB).encode(list(photos))
    assert first.dtype == np.float32 and first.shape == (3, 3 * 16 * 16)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)


def test_thumbnail_distances_separate_photos(photos):
    astronaut, coffee, shifted = photos
    a, c, s, a2 = build_encoder(THUMB).encode([astronaut, coffee, shifted, astronaut.copy()])
    assert distance(a, a2) == 0.0
    assert distance(a, c) > 0.9           # two unrelated photos: clearly apart
    assert distance(a, s) < 0.5 * distance(a, c)


def test_thumbnail_flat_frames_are_unit_and_equal():
    black, grey = np.zeros((24, 32, 3), np.uint8), np.full((24, 32, 3), 128, np.uint8)
    emb = build_encoder(THUMB).encode([black, grey])
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-6)
    assert distance(emb[0], emb[1]) == 0.0


def test_thumbnail_identity_has_no_weights():
    identity = encoder_identity(THUMB)
    assert identity["kind"] == "thumbnail" and identity["weights_sha256"] is None
    assert identity["embedding_dim"] == 768
    assert identity["preprocess"]["size"] == 16 and identity["preprocess"]["interpolation"] == "area"
    smaller = encoder_identity(dataclasses.replace(THUMB, thumbnail_size=8))
    assert smaller["fingerprint"] != identity["fingerprint"]


# ---------------------------------------------------------------- open_clip loading

@pytest.mark.slow
def test_open_clip_loads_local_checkpoint_and_embeds(tiny_model, photos):
    spec = tiny_spec(tiny_model)
    encoder = build_encoder(spec)
    frames = list(photos) + [photos[0]]
    emb = encoder.encode(frames)                        # 4 frames, sub-batches of 3
    assert emb.shape == (4, 16) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(emb[0], emb[3], atol=1e-6)
    # The weights really came from the file: the same model as the one saved.
    with torch.no_grad():
        expected = tiny_model["model"].encode_image(encoder.prepare(frames[:1]), normalize=True)
    np.testing.assert_allclose(emb[0], expected[0].numpy(), atol=1e-5)


def test_identity_records_the_weights_checksum(tiny_model):
    identity = encoder_identity(tiny_spec(tiny_model))
    with open(tiny_model["state_dict"], "rb") as f:
        assert identity["weights_sha256"] == hashlib.sha256(f.read()).hexdigest()
    assert identity["kind"] == "open_clip" and identity["model_name"] == TINY
    assert identity["embedding_dim"] == 16 and identity["preprocess"]["size"] == 32
    json.dumps(identity)  # goes into MANIFEST.json as is


def test_torchscript_checkpoint_gives_the_same_embeddings(tiny_model, photos):
    frames = list(photos)
    from_state_dict = build_encoder(tiny_spec(tiny_model)).encode(frames)
    from_archive = build_encoder(tiny_spec(tiny_model, checkpoint=tiny_model["jit"])).encode(frames)
    np.testing.assert_allclose(from_archive, from_state_dict, atol=1e-6)


def test_batched_preprocessing_matches_open_clip_pil_transform(tiny_model, photos):
    from open_clip.transform import PreprocessCfg, image_transform_v2
    encoder = build_encoder(tiny_spec(tiny_model))
    pil = image_transform_v2(PreprocessCfg(**encoder.preprocess), is_train=False)
    ours = encoder.prepare([photos[1]])
    theirs = pil(Image.fromarray(photos[1]))[None]
    assert ours.shape == theirs.shape == (1, 3, 32, 32)
    assert (ours - theirs).abs().mean() < 0.01          # PIL vs tensor antialiasing: rounding only
    with torch.no_grad():
        a = encoder.model.encode_image(ours, normalize=True)
        b = encoder.model.encode_image(theirs, normalize=True)
    assert distance(a.numpy(), b.numpy()) < 0.01


def test_paper_model_settings_without_weights():
    # ViT-B-16 + "openai" = OpenAI's CLIP ViT-B/16 (§5.3): QuickGELU and OpenAI preprocessing.
    settings = encoders._open_clip_settings(EncoderSpec())
    assert settings["quick_gelu"] is True and settings["embed_dim"] == 512
    assert settings["preprocess"]["size"] == 224
    assert settings["preprocess"]["interpolation"] == "bicubic"
    assert settings["preprocess"]["resize_mode"] == "shortest"


@pytest.mark.parametrize("checkpoint", [None, "", "/nonexistent/ViT-B-16.pt"])
def test_missing_checkpoint_names_the_config_key(checkpoint):
    spec = EncoderSpec(kind="open_clip", model_name="ViT-B-16", pretrained="openai", checkpoint=checkpoint)
    with pytest.raises(EncoderError, match=r"embed\.checkpoint"):
        build_encoder(spec)
    with pytest.raises(EncoderError, match=r"embed\.checkpoint"):
        encoder_identity(spec)


def test_wrong_weights_and_unknown_tag_are_clear_errors(tiny_model, tmp_path):
    with pytest.raises(EncoderError, match=r"embed\.checkpoint"):   # tiny weights, ViT-B-16 model
        build_encoder(EncoderSpec(model_name="ViT-B-16", checkpoint=tiny_model["state_dict"]))
    with pytest.raises(EncoderError, match=r"embed\.pretrained"):
        build_encoder(EncoderSpec(model_name="ViT-B-16", pretrained="no-such-tag",
                                  checkpoint=tiny_model["state_dict"]))
    folder = tmp_path / "empty"
    folder.mkdir()
    with pytest.raises(EncoderError, match=r"embed\.checkpoint"):
        build_encoder(tiny_spec(tiny_model, checkpoint=str(folder)))


def test_checkpoint_folder_is_searched(tiny_model, tmp_path):
    import shutil
    shutil.copy(tiny_model["state_dict"], tmp_path / "open_clip_pytorch_model.bin")
    encoder = build_encoder(tiny_spec(tiny_model, checkpoint=str(tmp_path)))
    emb = encoder.encode([np.zeros((40, 60, 3), np.uint8)])
    assert emb.shape == (1, 16)


# ---------------------------------------------------------------- EmbedShots on Beam

def make_shots(photos, n_shots=5):
    """Shots of different lengths (one empty), frames 96x128 crops of the test photos."""
    video = VideoRef(path="v.mp4", source="test", video_id="v0", split="train")
    shots = []
    for k in range(n_shots):
        frames = [np.ascontiguousarray(photos[(k + i) % 3][i:i + 96, i:i + 128]) for i in range(k)]
        shots.append(ShotFrames(video=video, shot_index=k, start_frame=10 * k, end_frame=10 * k + k,
                                fps=25.0, frame_indices=list(range(10 * k, 10 * k + k)), frames=frames))
    return shots


def check_embedded(expected_dim, expected):
    """assert_that matcher: each shot comes back without its pixels, with unit-norm (n, d)
    embeddings, one per frame, equal to the encoder's output outside Beam."""
    def check(shots):
        assert sorted(s.shot_index for s in shots) == sorted(expected)
        for shot in shots:
            assert shot.frames == []
            assert shot.embeddings.shape == (len(shot.frame_indices), expected_dim)
            assert shot.embeddings.dtype == np.float32
            if len(shot.frame_indices):
                np.testing.assert_allclose(np.linalg.norm(shot.embeddings, axis=1), 1.0, atol=1e-5)
            np.testing.assert_allclose(shot.embeddings, expected[shot.shot_index], atol=1e-5)
    return check


def run_embed(spec, shots, **options):
    p = local_test_pipeline(**options)
    expected = {s.shot_index: build_encoder(spec).encode(s.frames) for s in shots}
    out = p | beam.Create(shots) | EmbedShots(spec)
    assert_that(out, check_embedded(encoder_identity(spec)["embedding_dim"], expected))
    result = p.run()
    result.wait_until_finish()
    return read_stage_counts(result)["embed"]   # the run's counters, its work's (model.loaded) too


@pytest.mark.parametrize("encoder", ["thumbnail", "open_clip"])
def test_embed_shots_on_beam_loads_the_model_once(encoder, tiny_model, photos):
    spec = dataclasses.replace(THUMB, shots_per_batch=2) if encoder == "thumbnail" else \
        tiny_spec(tiny_model, shots_per_batch=2)
    shots = make_shots(photos)
    loads_before = embed.loads_in_this_process()
    counters = run_embed(spec, shots)
    # 5 shots in batches of at most 2 (>= 3 batches), but one model for the worker.
    assert embed.loads_in_this_process() - loads_before == 1
    assert counters["model.loaded"] == 1
    assert counters["shot.in"] == counters["shot.out"] == 5
    assert counters["frame.embedded"] == sum(len(s.frames) for s in shots)


@pytest.mark.slow
def test_embed_shots_in_worker_processes(tiny_model, photos):
    """Multi-process runner: the handler and spec pickle, the tiny model's config travels
    with the spec, and each worker process loads the model at most once."""
    shots = make_shots(photos, n_shots=6)
    loads_before = embed.loads_in_this_process()
    counters = run_embed(tiny_spec(tiny_model, shots_per_batch=1), shots,
                         direct_running_mode="multi_processing", direct_num_workers=2)
    assert 1 <= counters["model.loaded"] <= 2
    assert embed.loads_in_this_process() == loads_before   # it really ran in other processes
    assert counters["frame.embedded"] == sum(len(s.frames) for s in shots)


# ---------------------------------------------------------------- precision and batches

@pytest.mark.slow
def test_precision_is_an_identity_of_its_own_and_fp32_keeps_the_old_one(tiny_model):
    fp32 = encoder_identity(tiny_spec(tiny_model))
    assert "precision" not in fp32          # fp32 fingerprints (and their caches) unchanged
    bf16 = encoder_identity(tiny_spec(tiny_model, precision="bf16"))
    fp16 = encoder_identity(tiny_spec(tiny_model, precision="fp16"))
    int8 = encoder_identity(tiny_spec(tiny_model, precision="int8"))
    assert len({fp32["fingerprint"], bf16["fingerprint"], fp16["fingerprint"], int8["fingerprint"]}) == 4
    assert int8["precision"] == "int8" and int8["int8"]["runtime"].startswith("openvino ")
    assert int8["int8"]["quantiser"].startswith("nncf ") and "scikit-image" in int8["int8"]["calibration"]
    # the device is not in the identity: fp32 on either device is one cache entry
    assert encoder_identity(tiny_spec(tiny_model, device="auto"))["fingerprint"] == fp32["fingerprint"]
    # auto on a CPU is fp32, and so its fingerprint and cache
    auto = encoder_identity(tiny_spec(tiny_model, precision="auto"))
    assert "precision" not in auto and auto["fingerprint"] == fp32["fingerprint"]


def test_bad_precision_names_the_key():
    with pytest.raises(EncoderError, match="embed.precision"):
        EncoderSpec(kind="open_clip", precision="int4")
    with pytest.raises(EncoderError, match="embed.precision"):
        dataclasses.replace(THUMB, precision="fp16")
    with pytest.raises(EncoderError, match="embed.precision: int8 runs on the CPU"):
        EncoderSpec(kind="open_clip", precision="int8", device="cuda")


@pytest.mark.slow
def test_int8_embeds_unit_rows_close_to_fp32_the_same_in_any_batch(tiny_model, photos, tmp_path, monkeypatch):
    """int8 (OpenVINO, NNCF's quantisation): unit rows near fp32's but not equal (its own
    identity), the same on a second worker (the quantisation is deterministic), the same
    whatever the batch, and nothing written to $HOME nor any telemetry module loaded."""
    import sys
    monkeypatch.setenv("HOME", str(tmp_path))
    frames = [photos[i % 3] for i in range(7)]
    fp32 = build_encoder(tiny_spec(tiny_model)).encode(frames)
    int8 = build_encoder(tiny_spec(tiny_model, precision="int8", batch_size=7)).encode(frames)
    assert int8.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    assert 0 < np.abs(int8 - fp32).max() < 0.1
    again = build_encoder(tiny_spec(tiny_model, precision="int8", batch_size=2)).encode(frames)
    assert np.array_equal(again, int8)
    assert list(tmp_path.iterdir()) == [] and sys.modules.get("openvino_telemetry") is None


def test_bf16_embeds_unit_rows_close_to_fp32(tiny_model, photos):
    frames = list(photos)
    fp32 = build_encoder(tiny_spec(tiny_model)).encode(frames)
    bf16 = build_encoder(tiny_spec(tiny_model, precision="bf16")).encode(frames)
    assert bf16.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(bf16, axis=1), 1.0, atol=1e-5)
    assert 0 < np.abs(bf16 - fp32).max() < 0.1     # other values: hence its own identity


def test_prefetched_batches_keep_the_order_and_values(tiny_model, photos):
    """Batches prepared ahead on a thread: every batch size gives the frames' embeddings in
    their order, as one frame at a time does (mixed frame sizes in a batch included)."""
    frames = [photos[i % 3] for i in range(7)]
    one_by_one = np.concatenate([build_encoder(tiny_spec(tiny_model, batch_size=1)).encode([f]) for f in frames])
    for batch_size in (1, 2, 3, 7, 64):
        found = build_encoder(tiny_spec(tiny_model, batch_size=batch_size)).encode(frames)
        np.testing.assert_allclose(found, one_by_one, atol=1e-6)


# ---------------------------------------------------------------- OpenAI's own checkpoint format

@pytest.mark.slow
def test_a_full_size_openai_format_checkpoint_loads_through_embed_checkpoint(tmp_path, photos):
    """ImageCoDe's paper model, CLIP ViT-B/16 in OpenAI's format (a TorchScript archive,
    fp16 weights), given as `embed.checkpoint`: the identity pins its weights without
    loading them, the encoder loads every weight (strict) and embeds as the model does."""
    from open_clip.transform import PreprocessCfg, image_transform_v2
    from pipelines.config import load_config
    from pipelines.imagecode.benchmark import BENCHMARK
    from pipelines.imagecode.params import encoder_spec
    checkpoint = str(tmp_path / "ViT-B-16.pt")
    model = save_openai_format(checkpoint)
    assert encoders._is_torchscript(checkpoint)
    archive = torch.jit.load(checkpoint, map_location="cpu").state_dict()
    assert archive["visual.conv1.weight"].dtype == torch.float16
    assert {"visual.transformer.resblocks.11.attn.in_proj_weight", "token_embedding.weight",
            "text_projection", "logit_scale"} <= set(archive)
    config = load_config(BENCHMARK.config_path("paper"),
                         [f"embed.checkpoint={checkpoint}", "embed.device=cpu"], BENCHMARK.config_type)
    spec = encoder_spec(config)
    identity = encoder_identity(spec)
    with open(checkpoint, "rb") as f:
        assert identity["weights_sha256"] == hashlib.sha256(f.read()).hexdigest()
    assert identity["model_name"] == "ViT-B-16" and identity["quick_gelu"] is True
    encoder = build_encoder(spec)
    astronaut = photos[0]
    ours = encoder.encode([astronaut])
    preprocess = image_transform_v2(PreprocessCfg(**encoder.preprocess), is_train=False)
    loaded = encoder.model.state_dict()
    assert all(torch.equal(loaded[name], weight) for name, weight in model.state_dict().items())
    with torch.no_grad():
        theirs = model.encode_image(preprocess(Image.fromarray(astronaut)).unsqueeze(0), normalize=True)
    assert ours.shape == (1, 512)
    assert distance(ours[0], theirs.numpy()[0]) < 0.01   # PIL vs tensor antialiasing: rounding only
