"""F10 (§3.2.2(3)) and F13 (§3.2.3) as models: what continues a prompted caption with
the image, and what merges <d_c, d_g> into one sentence.

Detail generators (`details.kind`):
  model    a local image-to-text model directory (transformers' AutoProcessor +
           AutoModelForImageTextToText, e.g. BLIP or GIT; the paper's VinVL_base is not in
           transformers, so any such model is a labelled substitute). It is given the image
           and "<caption> <prompt>" and decodes greedily (`details.max_new_tokens`);
           d_g is the prompt and what follows it.
  standin  a declared deterministic stand-in for the embedded sample: it names the
           colour nearest to the image's mean (transforms/image/text_encoders.PALETTE)
           after the prompt ("the color of the dog" -> "the color of the dog is brown").
           Not a captioner.
  file     the user's generated details, joined in pipelines/fg/pipeline.py.

Mergers (`merge.kind`):
  rules    pipelines/fg/merge_rules.merge_rule_based, the inverse of F12's split rules
           (an honest stand-in for the trained GPT-2)
  gpt2     a local GPT-2 directory fine-tuned on the release's merge_training/ pairs; its
           input is "<d'_c> <d'_g> =" as in those pairs, decoded greedily
  file     the user's merged sentences, joined in pipelines/fg/pipeline.py.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from transforms.image.text_encoders import nearest_colour

MERGE_SEPARATOR = " = "   # merge_training/ pairs: "<d'_c> <d'_g> = <sentence>"

# Table 1's templates -> what the stand-in appends after the prompt words
_STANDIN_TAIL = {1: "in a {c} scene", 2: "a {c} area", 3: "{c}", 4: "is {c}", 5: "{c}"}


def mean_colour_name(image: np.ndarray) -> str:
    """The palette colour nearest the mean of the image's central half."""
    h, w = image.shape[:2]
    centre = image[h // 4: h - h // 4 or h, w // 4: w - w // 4 or w]
    return nearest_colour(centre.reshape(-1, 3).mean(axis=0))


class StandinDetails:
    """Deterministic stand-in detail generator (module docstring)."""
    identity = {"kind": "standin", "what": "names the colour nearest the image centre's mean "
                "after the prompt; NOT a captioner (§3.2.2(3) used VinVL_base)"}

    def generate(self, image: np.ndarray, caption: str, template: int, prompt: str) -> str:
        return f"{prompt} {_STANDIN_TAIL[template].format(c=mean_colour_name(image))}"


class ModelDetails:
    """A local transformers image-to-text model (module docstring)."""

    def __init__(self, model_dir: str, max_new_tokens: int):
        # AutoModelForImageTextToText: transformers 5 removed its old name, AutoModelForVision2Seq
        from transformers import AutoModelForImageTextToText, AutoProcessor
        self.processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
        self.model = AutoModelForImageTextToText.from_pretrained(model_dir, local_files_only=True).eval()
        self.max_new_tokens = max_new_tokens

    def generate(self, image: np.ndarray, caption: str, template: int, prompt: str) -> str:
        import torch
        from PIL import Image
        context = f"{caption.rstrip()} {prompt}"
        inputs = self.processor(images=Image.fromarray(image), text=context, return_tensors="pt")
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
        text = self.processor.batch_decode(out, skip_special_tokens=True)[0].strip()
        at = text.lower().rfind(prompt.lower())
        tail = text[at + len(prompt):] if at >= 0 else text
        tail = tail.strip()
        return f"{prompt} {tail}" if tail else ""


class Gpt2Merger:
    """A local GPT-2 fine-tuned on merge_training/ (module docstring)."""

    def __init__(self, model_dir: str, max_new_tokens: int):
        from transformers import AutoModelForCausalLM, AutoTokenizer
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
        self.max_new_tokens = max_new_tokens

    def merge(self, d_c: str, d_g: str) -> Optional[str]:
        import torch
        prompt = f"{d_c.strip()} {d_g.strip()}{MERGE_SEPARATOR}"
        ids = self.tokenizer(prompt, return_tensors="pt")
        with torch.inference_mode():
            out = self.model.generate(**ids, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      pad_token_id=self.tokenizer.eos_token_id)
        text = self.tokenizer.decode(out[0][ids["input_ids"].shape[1]:], skip_special_tokens=True)
        return text.split("\n")[0].strip() or None


class RuleMerger:
    identity = {"kind": "rules", "what": "pipelines/fg/merge_rules.merge_rule_based: the inverse "
                "of F12's split rules; NOT GPT-2 (§3.2.3)"}

    def merge(self, d_c: str, d_g: str) -> Optional[str]:
        from pipelines.fg.merge_rules import merge_rule_based
        merged = merge_rule_based(d_c, d_g)
        return merged.strip() if merged and merged.strip() else None
