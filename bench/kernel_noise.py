"""How far the kernels a CPU's instructions select move the values a release is made of,
and whether the published (rounded) values move: prints one JSON line.

    python -m bench.kernel_noise [--frames 8] [--clip-frames 8] [--texts 200]

Each model runs twice, in child processes: once with the machine's own kernels, once with
every library that picks its kernels at run time held to AVX2 (transforms/core/
kernels.py: ATen, oneDNN and MKL inside torch, OpenBLAS inside numpy, numpy's own loops). On a machine without AVX-512 both runs use the same kernels
and every difference is 0. Measured:
  brisque    native BRISQUE scores of video-like frames (float64: MKL's product in the
             SVR), and the frames scored alone against in one batch (same kernels)
  clip_fp32  open_clip ViT-B-16 image embeddings with seeded random weights (the paper's
             architecture, through the project's encoder), and the pairwise distances
  minilm     all-MiniLM-L6-v2 sentence embeddings (BD2BB's encoder) of sentences
For each: the largest difference, and how many published values differ once rounded
(transforms/core/precision.py). The figures are in docs/rebuilding.md, "The same release".
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(kind: str, args: argparse.Namespace, out: str) -> None:
    """Computes one model's values with this process's kernels into `out` (.npz)."""
    from bench.gpu import _frames
    if kind == "brisque":
        from transforms.image.brisque import BrisqueScorer
        frames = _frames(args.frames, (240, 320), 2)
        scorer = BrisqueScorer(device="cpu")
        batch = scorer.score(frames)
        alone = np.concatenate([scorer.score([f]) for f in frames])
        np.savez(out, values=batch, alone=alone)
    elif kind == "clip_fp32":
        from transforms.image.encoders import EncoderSpec, build_encoder
        import open_clip
        import torch
        torch.manual_seed(0)
        model = open_clip.create_model("ViT-B-16", pretrained=None, force_quick_gelu=True)
        checkpoint = os.path.join(os.path.dirname(out), "vit-b-16-random.bin")
        torch.save(model.state_dict(), checkpoint)
        encoder = build_encoder(EncoderSpec(kind="open_clip", model_name="ViT-B-16", pretrained="openai",
                                            checkpoint=checkpoint, batch_size=args.clip_frames,
                                            device="cpu", precision="fp32"))
        np.savez(out, values=encoder.encode(_frames(args.clip_frames, (240, 320), 1)))
    elif kind == "minilm":
        from transforms.text.sentence_embed import SentenceEncoderSpec, encode, load_encoder
        rng = np.random.default_rng(0)
        words = ("a person wants to cook dinner for the family and buys fresh vegetables at "
                 "the market before it rains while the children play football in a park").split()
        texts = [" ".join(rng.choice(words, size=int(rng.integers(4, 14)))) for _ in range(args.texts)]
        np.savez(out, values=encode(load_encoder(SentenceEncoderSpec(device="cpu")), texts, 64))


def _pairwise(x: np.ndarray) -> np.ndarray:
    from transforms.vectors.distances import pairwise_distances
    return pairwise_distances(x)


def _compare(kind: str, own: dict, avx2: dict) -> dict:
    from transforms.core.precision import rounded_array
    a, b = own["values"].astype(np.float64), avx2["values"].astype(np.float64)
    out = {"values": int(a.size), "max_abs_difference": float(np.abs(a - b).max())}
    if kind == "brisque":
        published = rounded_array(a / 100), rounded_array(b / 100)
        out["max_abs_batch_vs_alone"] = float(np.abs(a - own["alone"]).max())
        out["published_values_differing"] = int((published[0] != published[1]).sum())
    else:
        raw = np.sqrt(((a[:, None] - a[None]) ** 2).sum(-1)), np.sqrt(((b[:, None] - b[None]) ** 2).sum(-1))
        out["max_abs_distance_difference"] = float(np.abs(raw[0] - raw[1]).max())
        distances = _pairwise(a), _pairwise(b)
        out["published_distances"] = int(distances[0].size)
        out["published_distances_differing"] = int((distances[0] != distances[1]).sum())
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--clip-frames", type=int, default=8)
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--kinds", default="brisque,clip_fp32,minilm")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args, args.out)
        return 0
    from transforms.core.kernels import avx2_kernels
    report = {"kernels_held": avx2_kernels()}
    with tempfile.TemporaryDirectory() as folder:
        for kind in args.kinds.split(","):
            results = []
            for name, extra in (("own", {}), ("avx2", avx2_kernels())):
                out = os.path.join(folder, f"{kind}-{name}.npz")
                subprocess.run([sys.executable, "-m", "bench.kernel_noise", "--child", kind, "--out", out,
                                "--frames", str(args.frames), "--clip-frames", str(args.clip_frames),
                                "--texts", str(args.texts)],
                               cwd=ROOT, env={**os.environ, **extra, "PYTHONPATH": ROOT}, check=True)
                results.append(dict(np.load(out)))
            report[kind] = _compare(kind, *results)
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
