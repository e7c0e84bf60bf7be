"""The paper's CLIP (ViT-B/16) with seeded random weights, saved as OpenAI ships its
`ViT-B-16.pt`: what the benches and tests embed with where the real weights cannot be had
(no PyPI package ships them). It costs what the real model costs; its embeddings are not
CLIP's, and nothing built with it is a release of the benchmark.
"""
from __future__ import annotations

import copy


def save_openai_format(path: str, seed: int = 1):
    """Writes a full-size CLIP ViT-B/16 with seeded random weights to `path` as OpenAI's
    release is: a TorchScript archive of the whole model whose state dict has OpenAI's
    names (open_clip's CLIP keeps them), its convolution, linear and attention weights and
    both projections in fp16 (clip.model.convert_weights), the embeddings and layer norms
    fp32. Returns the model in fp32 with the same (fp16-rounded) weights."""
    import open_clip
    import torch
    torch.manual_seed(seed)
    model = open_clip.create_model("ViT-B-16", pretrained=None, force_quick_gelu=True).eval()
    half = {name for name, p in model.named_parameters()
            if p.dim() >= 2 and not name.endswith(("embedding", "embedding.weight"))}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in half:
                p.copy_(p.half().float())
        # a copy: the traced module shares its parameters with the module it traced
        traced = torch.jit.trace_module(copy.deepcopy(model), {"encode_image": torch.zeros(1, 3, 224, 224)},
                                        check_trace=False)
        for module_name, module in traced.named_modules():
            for param_name, param in list(module.named_parameters(recurse=False)):
                if (f"{module_name}.{param_name}" if module_name else param_name) in half:
                    param.data = param.data.half()
    traced.save(path)
    return model
