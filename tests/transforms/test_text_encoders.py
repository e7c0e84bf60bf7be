"""The text sides of the encoders (transforms/image/text_encoders.py): CLIP's text tower
from a local checkpoint (a tiny open_clip model with CLIP's tokenizer vocabulary) and the
thumbnail stand-in's colour-word side."""
import json

import numpy as np
import pytest
import torch

from transforms.image.encoders import EncoderSpec
from transforms.image.text_encoders import OpenClipTextEncoder, ThumbnailTextEncoder, colour_words

TINY = "tiny-text-clip"
TINY_CONFIG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
    # CLIP's tokenizer vocabulary (49,408 BPE tokens), so the real tokenizer drives it
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 16, "heads": 2, "layers": 1},
}


@pytest.fixture(scope="module")
def tiny_text_model(tmp_path_factory):
    import open_clip
    folder = tmp_path_factory.mktemp("tiny_text_clip")
    config = folder / f"{TINY}.json"
    config.write_text(json.dumps(TINY_CONFIG))
    open_clip.add_model_config(config)
    torch.manual_seed(0)
    model = open_clip.create_model(TINY, pretrained=None).eval()
    torch.save(model.state_dict(), folder / "tiny.pt")
    spec = EncoderSpec(kind="open_clip", model_name=TINY, pretrained="none",
                       checkpoint=str(folder / "tiny.pt"), model_config=str(config),
                       batch_size=2, device="cpu")
    return model, spec


def test_open_clip_text_tower_from_a_local_checkpoint(tiny_text_model):
    import open_clip
    model, spec = tiny_text_model
    texts = ["A photo depicts a dog.", "a red car", "a red car"]
    vectors = OpenClipTextEncoder(spec).encode(texts)
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    with torch.no_grad():
        direct = model.encode_text(open_clip.get_tokenizer(TINY)(texts)).float()
    direct = torch.nn.functional.normalize(direct, dim=-1).numpy()
    assert np.allclose(vectors, direct, atol=1e-5)     # batches of 2 give what one batch gives
    # the same text in another batch: equal up to float32 rounding (BLAS blocks by batch)
    assert np.allclose(vectors[1], vectors[2], atol=1e-6) and not np.allclose(vectors[0], vectors[1])


def test_thumbnail_text_side_reads_colour_words_only():
    assert colour_words("A Red car, next to a blue-green wall") == ("red", "blue", "green")
    encoder = ThumbnailTextEncoder(4)
    a, b, plain = encoder.encode(["a red car", "RED!", "a car"])
    assert np.array_equal(a, b)
    assert np.allclose(plain, 1 / np.sqrt(48))
