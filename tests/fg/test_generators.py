"""pipelines/fg/generators.py's model paths, on tiny randomly initialised models made and
saved here (no weights can be fetched): a local image-to-text model directory (F10, a
labelled substitute for VinVL_base) and a local GPT-2 directory (F13). What they say is
noise; what is tested is that the real loading and decoding code runs offline from a
folder, decodes greedily (the same output twice) and keeps d_g's shape."""
import numpy as np
import pytest

from pipelines.fg.generators import Gpt2Merger, ModelDetails

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "dog", "the", "color", "of", "is",
         "brown", "on", "grass", "it", "young", "boy", "play", "frisbee", "top", "mountain", "."]


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    folder = tmp_path_factory.mktemp("gpt2")
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([" ".join(WORDS[5:]) + " ="],
                            trainers.WordLevelTrainer(special_tokens=["[UNK]", "<eos>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="<eos>")
    fast.save_pretrained(folder)
    GPT2LMHeadModel(GPT2Config(vocab_size=len(fast), n_layer=1, n_head=2, n_embd=16,
                               n_positions=64)).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def blip_dir(tmp_path_factory):
    from transformers import (BertTokenizerFast, BlipConfig, BlipForConditionalGeneration,
                              BlipImageProcessor, BlipProcessor)
    folder = tmp_path_factory.mktemp("blip")
    (folder / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"))
    BlipProcessor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}),
                  tokenizer=tokenizer).save_pretrained(folder)
    layer = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2)
    config = BlipConfig(vision_config=dict(image_size=32, patch_size=16, **layer),
                        text_config=dict(vocab_size=len(WORDS), max_position_embeddings=64,
                                         bos_token_id=2, sep_token_id=3, pad_token_id=0, **layer),
                        projection_dim=16)
    BlipForConditionalGeneration(config).save_pretrained(folder)
    return str(folder)


def test_a_local_gpt2_merges_greedily(gpt2_dir):
    merger = Gpt2Merger(gpt2_dir, max_new_tokens=5)
    first = merger.merge("a young boy play a frisbee.", "it is on top of a mountain.")
    assert first is None or (isinstance(first, str) and first == first.strip())
    assert merger.merge("a young boy play a frisbee.", "it is on top of a mountain.") == first


def test_a_local_image_to_text_model_continues_the_prompt(blip_dir):
    details = ModelDetails(blip_dir, max_new_tokens=4)
    image = (np.random.RandomState(0).rand(40, 40, 3) * 255).astype(np.uint8)
    prompt = "the color of the dog"
    first = details.generate(image, "a dog on grass.", 4, prompt)
    assert first == "" or first.startswith(prompt + " ")   # d_g = the prompt and what follows
    assert details.generate(image, "a dog on grass.", 4, prompt) == first


@pytest.mark.parametrize("make", [lambda d: Gpt2Merger(d, 5), lambda d: ModelDetails(d, 5)])
def test_a_folder_without_a_model_is_an_error_offline(make, tmp_path):
    with pytest.raises(Exception):   # transformers' own OSError; nothing is downloaded
        make(str(tmp_path))
