"""The GPU half of the design, measured in one run: prints one JSON line.

    python -m bench.gpu               # full sizes, on a CUDA GPU (about 5 minutes on an H100)
    python -m bench.gpu --cpu-smoke   # tiny sizes on the CPU: every section runs (CI)

Only torch and this project's code (FAISS where installed). Sections:
  clip     CLIP ViT-B-16 image embedding (the real open_clip architecture with seeded
           random weights, through the project's encoder: embed.checkpoint, batched
           preprocessing, prefetch) in frames/s at fp32, fp16 and bf16; how far CUDA fp32
           embeddings are from CPU fp32 ones, and fp16/bf16 from fp32 (largest element
           difference and largest change of a pairwise distance: what could move a
           decision at a distance threshold)
  brisque  BRISQUE features and scores on the GPU in frames/s, the largest score
           difference from the CPU (float64 both), and whether the published scores
           (BRISQUE/100 rounded to 6 decimals: transforms/core/precision.py) are equal
  knn      exact kNN, a database of 1M x 512 unit vectors and 10k queries drawn from it
           (exclude_self, k=10): the torch backend on the GPU against the CPU (and FAISS,
           where installed): equal lists (ids and distances), recall, the recall of the
           float32 top-k alone, the float32 error measured against float64 (the search
           assumes < 1e-4), and the pipeline's grouping (64 MiB groups, one reused search)
  video    the video stage's embedding: ShotEmbedder (ImageCoDe's embed-in-the-decoder
           path) over shots of video frames, frames/s
Throughput is wall time around synchronised device work (a GPU's time is not CPU time),
after one warm-up batch. Any section that fails records its error; the rest still run.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback

import numpy as np

SIZES = {
    "full": dict(model="ViT-B-16", clip_frames=4096, clip_batch=256, clip_check=64,
                 frame_hw=(240, 320), brisque_frames=512, brisque_check=16,
                 knn_n=1_000_000, knn_d=512, knn_queries=10_000, knn_k=10, knn_error_queries=2000,
                 knn_group_queries=1000, video_shots=32, video_frames=48),
    "medium": dict(model="ViT-B-16", clip_frames=32, clip_batch=16, clip_check=4,
                   frame_hw=(240, 320), brisque_frames=16, brisque_check=4,
                   knn_n=100_000, knn_d=512, knn_queries=500, knn_k=10, knn_error_queries=200,
                   knn_group_queries=100, video_shots=2, video_frames=16),
    "smoke": dict(model="tiny", clip_frames=6, clip_batch=4, clip_check=3,
                  frame_hw=(48, 64), brisque_frames=4, brisque_check=2,
                  knn_n=3000, knn_d=32, knn_queries=40, knn_k=5, knn_error_queries=20,
                  knn_group_queries=10, knn_group_bytes=128 * 32 * 4, video_shots=2, video_frames=3),
}
TINY_CONFIG = {   # a ViT small enough for CI, built by open_clip like ViT-B-16
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 2, "layers": 1},
}


def _sync(device: str) -> None:
    import torch
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(device: str, fn, *args):
    _sync(device)
    start = time.perf_counter()
    out = fn(*args)
    _sync(device)
    return out, time.perf_counter() - start


def _frames(n: int, hw, seed: int):
    """Video-like frames: photos (scikit-image's, bundled) cropped at moving offsets, with
    noise, so BRISQUE sees scene statistics and CLIP sees different pictures."""
    from skimage import data
    rng = np.random.default_rng(seed)
    photos = [data.astronaut(), data.chelsea(), data.coffee(), data.rocket()]
    h, w = hw
    out = []
    for j in range(n):
        photo = photos[j % len(photos)]
        y = int(rng.integers(0, max(1, photo.shape[0] - h)))
        x = int(rng.integers(0, max(1, photo.shape[1] - w)))
        crop = photo[y:y + h, x:x + w].astype(np.int16)
        crop = np.pad(crop, ((0, h - crop.shape[0]), (0, w - crop.shape[1]), (0, 0)), mode="edge")
        out.append(np.clip(crop + rng.integers(-8, 9, crop.shape), 0, 255).astype(np.uint8))
    return out


def _random_clip(size: dict, folder: str) -> dict:
    """A checkpoint of the architecture with seeded random weights, and the spec's fields."""
    import open_clip
    import torch
    fields = dict(kind="open_clip", model_name=size["model"], pretrained="openai")
    if size["model"] == "tiny":
        config = os.path.join(folder, "bench-tiny-vit.json")
        with open(config, "w") as f:
            json.dump(TINY_CONFIG, f)
        open_clip.add_model_config(config)
        fields = dict(kind="open_clip", model_name="bench-tiny-vit", pretrained="none", model_config=config)
    torch.manual_seed(0)
    model = open_clip.create_model(fields["model_name"], pretrained=None,
                                   force_quick_gelu=fields["pretrained"] == "openai")
    checkpoint = os.path.join(folder, "random-weights.bin")
    torch.save(model.state_dict(), checkpoint)
    return dict(fields, checkpoint=checkpoint)


def _pairwise(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return np.sqrt(np.maximum(0, np.sum(x * x, 1)[:, None] + np.sum(x * x, 1)[None, :] - 2 * x @ x.T))


def _compare(a: np.ndarray, b: np.ndarray) -> dict:
    return {"max_abs_element": float(np.abs(a.astype(np.float64) - b).max()),
            "max_abs_distance": float(np.abs(_pairwise(a) - _pairwise(b)).max())}


def bench_clip(size: dict, device: str, folder: str, fields: dict) -> dict:
    from transforms.image.encoders import EncoderSpec, build_encoder
    frames = _frames(size["clip_frames"], size["frame_hw"], 1)
    out = {"model": size["model"], "frames": len(frames), "frame_hw": list(size["frame_hw"]),
           "batch_size": size["clip_batch"], "weights": "seeded random (real architecture)"}
    check = frames[:size["clip_check"]]
    embeddings = {}
    for precision in ("fp32", "fp16", "bf16"):
        if device == "cpu" and precision == "fp16":
            continue   # half-precision kernels are a GPU's; bf16 covers the CPU's short path
        encoder = build_encoder(EncoderSpec(batch_size=size["clip_batch"], device=device,
                                            precision=precision, **fields))
        encoder.encode(frames[:size["clip_batch"]])                         # warm-up
        _, seconds = _timed(device, encoder.encode, frames)
        out[f"{precision}_frames_per_s"] = round(len(frames) / seconds, 1)
        embeddings[precision] = encoder.encode(check)
        del encoder
    cpu = build_encoder(EncoderSpec(batch_size=size["clip_batch"], device="cpu", precision="fp32", **fields))
    out[f"{device}_fp32_vs_cpu_fp32"] = _compare(embeddings["fp32"], cpu.encode(check))
    for precision in ("fp16", "bf16"):
        if precision in embeddings:
            out[f"{precision}_vs_fp32"] = _compare(embeddings[precision], embeddings["fp32"])
    if "fp16_frames_per_s" in out:
        out["fp16_over_fp32"] = round(out["fp16_frames_per_s"] / out["fp32_frames_per_s"], 2)
    return out


def bench_brisque(size: dict, device: str) -> dict:
    from transforms.core.precision import rounded_array
    from transforms.image.brisque import NORMALISER, BrisqueScorer
    frames = _frames(size["brisque_frames"], size["frame_hw"], 2)
    scorer = BrisqueScorer(device=device)
    scorer.score(frames[:2])                                                   # warm-up
    scores, seconds = _timed(device, scorer.score, frames)
    features, feature_seconds = _timed(device, scorer.features, frames)
    check = frames[:size["brisque_check"]]
    cpu = BrisqueScorer(device="cpu")
    cpu_scores = cpu.score(check)
    return {"frames": len(frames), "frame_hw": list(size["frame_hw"]),
            "scores_frames_per_s": round(len(frames) / seconds, 1),
            "features_frames_per_s": round(len(frames) / feature_seconds, 1),
            # native points; the kernels' and the batch's noise (another batch here)
            "max_abs_score_vs_cpu": float(np.abs(scores[:len(check)] - cpu_scores).max()),
            # what the gate compares and a release publishes (transforms/core/precision.py)
            "published_scores_equal_to_cpu": bool(np.array_equal(
                rounded_array(scores[:len(check)] / NORMALISER), rounded_array(cpu_scores / NORMALISER))),
            "max_abs_feature_vs_cpu": float(np.abs(features[:len(check)] - cpu.features(check)).max()),
            "score_range": [float(np.min(scores)), float(np.max(scores))]}


def _unit_vectors(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, 100_000):       # in blocks: no float64 copy of a 1M x 512 array
        block = rng.standard_normal((min(100_000, n - start), d), dtype=np.float32)
        out[start:start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def bench_knn(size: dict, device: str) -> dict:
    from transforms.vectors.knn import (SEARCH_BYTES, FlatSearch, KnnSpec, _REL_TOL, float32_error_bound,
                                        merge_topk, shard_topk)
    n, d, k = size["knn_n"], size["knn_d"], size["knn_k"]
    database = _unit_vectors(n, d, 3)
    ids = [f"{j:07d}" for j in range(n)]
    drawn = np.sort(np.random.default_rng(4).choice(n, size=size["knn_queries"], replace=False))
    queries, query_ids = database[drawn], [ids[j] for j in drawn]
    out = {"n": n, "d": d, "queries": len(queries), "k": k, "exclude_self": True}

    def run(spec: KnnSpec):
        search = FlatSearch(spec)
        return _timed(spec.device, shard_topk, queries, query_ids, database, ids, k, True, search)

    lists = {}
    try:
        import faiss   # noqa: F401
        variants = [("faiss", "cpu")] + ([("faiss", "cuda")] if device == "cuda" and faiss.get_num_gpus() else [])
    except ImportError:
        variants = []
    variants += [("torch", "cpu")] + ([("torch", "cuda")] if device == "cuda" else [])
    for backend, where in variants:
        lists[f"{backend}_{where}"], seconds = run(KnnSpec(backend, where))
        out[f"{backend}_{where}_s"] = round(seconds, 2)
    reference_name = "faiss_cpu" if "faiss_cpu" in lists else "torch_cpu"
    reference = lists[reference_name]
    out["reference"] = reference_name
    out["equal_to_reference"] = {name: found == reference for name, found in lists.items()}
    out["recall_vs_reference"] = {
        name: sum(len({i for _, i in a} & {i for _, i in b}) for a, b in zip(found, reference))
        / sum(len(b) for b in reference) for name, found in lists.items()}

    # the float32 top-k alone (no float64 re-rank), and the float32 error it carries
    gpu = FlatSearch(KnnSpec("torch", device))
    gpu.load(database)
    squared, rows = gpu.search(queries, k + 1)
    plain = [[ids[r] for r in row if ids[r] != q][:k] for row, q in zip(rows, query_ids)]
    out["float32_only_recall"] = (sum(len(set(p) & {i for _, i in b}) for p, b in zip(plain, reference))
                                  / sum(len(b) for b in reference))
    out["float32_only_equal_order"] = plain == [[i for _, i in b] for b in reference]
    m = size["knn_error_queries"]
    squared, rows = gpu.search(queries[:m], k + 8)
    # a non-finite distance is reported with where it is: NaNs were once seen here, when
    # the OCR stage had set OMP_THREAD_LIMIT in the test process (transforms/core/devices.py)
    nonfinite = np.argwhere(~np.isfinite(squared))
    out["float32_nonfinite_distances"] = int(len(nonfinite))
    if len(nonfinite):
        out["float32_nonfinite_first"] = nonfinite[:5].tolist()
    out["float32_rel_error_max"] = float32_error_bound(queries[:m], database, squared, rows)
    out["float32_rel_error_assumed"] = _REL_TOL
    out["float32_error_device"] = gpu.device
    del gpu

    # the pipeline's way: 64 MiB groups of rows, one search reused across them, merged
    g = size["knn_group_queries"]
    group_rows = max(1, size.get("knn_group_bytes", SEARCH_BYTES) // (4 * d))
    reused = FlatSearch(KnnSpec("torch", device))
    _sync(device)
    start = time.perf_counter()
    best = [[] for _ in range(g)]
    for first in range(0, n, group_rows):
        found = shard_topk(queries[:g], query_ids[:g], database[first:first + group_rows],
                           ids[first:first + group_rows], k, True, reused)
        best = [merge_topk([b, f], k) for b, f in zip(best, found)]
    _sync(device)
    out["grouped"] = {"groups": -(-n // group_rows), "queries": g,
                      "seconds": round(time.perf_counter() - start, 2), "equal_to_reference": best == reference[:g]}
    return out


def bench_video(size: dict, device: str, fields: dict) -> dict:
    from schemas.records import ShotFrames, VideoRef
    from transforms.image.embed import ShotEmbedder
    from transforms.image.encoders import EncoderSpec
    per_shot = size["video_frames"]
    pool = _frames(per_shot * 2, size["frame_hw"], 5)
    video = VideoRef(path="bench.mp4", source="bench", video_id="bench", split="train")
    shots = [ShotFrames(video=video, shot_index=s, start_frame=s * per_shot, end_frame=(s + 1) * per_shot,
                        fps=25.0, frame_indices=list(range(s * per_shot, (s + 1) * per_shot)),
                        frames=pool[(s % 2) * per_shot:(s % 2 + 1) * per_shot])
             for s in range(size["video_shots"])]
    embedder = ShotEmbedder(EncoderSpec(batch_size=size["clip_batch"], device=device, **fields))
    embedder.setup()
    list(embedder.embed(shots[:1]))                                            # warm-up (loads)
    done, seconds = _timed(device, lambda: list(embedder.embed(shots)))
    frames = sum(len(s.embeddings) for s in done)
    return {"shots": len(shots), "frames_per_shot": per_shot, "frames": frames,
            "shots_per_batch": embedder.spec.shots_per_batch, "frames_per_s": round(frames / seconds, 1)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-smoke", action="store_true", help="tiny sizes on the CPU (CI)")
    parser.add_argument("--size", choices=sorted(SIZES), help="default: full, or smoke with --cpu-smoke")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--sections", default="knn,clip,brisque,video")
    parser.add_argument("--clip-batch", type=int, help="frames per forward pass (default: the size's)")
    parser.add_argument("--out", help="also write the report here (bench/results/gpu-<device>.json), "
                                      "with the commit and the date")
    args = parser.parse_args(argv)
    import torch
    size = SIZES[args.size or ("smoke" if args.cpu_smoke else "full")]
    if args.clip_batch:
        size = dict(size, clip_batch=args.clip_batch)
    device = "cpu" if args.cpu_smoke else args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no CUDA device", file=sys.stderr)
        return 2
    report = {"bench": "gpu", "size": args.size or ("smoke" if args.cpu_smoke else "full"), "device": device,
              "torch": torch.__version__, "cuda_runtime": torch.version.cuda, "python": platform.python_version(),
              "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
              "cpu_threads": torch.get_num_threads()}
    try:
        import faiss
        report["faiss"] = faiss.__version__
    except ImportError:
        report["faiss"] = None
    started = time.perf_counter()
    failed = []
    with tempfile.TemporaryDirectory() as folder:
        fields = None
        for name in args.sections.split(","):
            t0 = time.perf_counter()
            try:
                if name in ("clip", "video") and fields is None:
                    fields = _random_clip(size, folder)
                if name == "clip":
                    report[name] = bench_clip(size, device, folder, fields)
                elif name == "brisque":
                    report[name] = bench_brisque(size, device)
                elif name == "knn":
                    report[name] = bench_knn(size, device)
                elif name == "video":
                    report[name] = bench_video(size, device, fields)
                else:
                    raise ValueError(f"unknown section {name!r}")
            except Exception as e:   # noqa: BLE001 - one section's failure must not lose the others'
                failed.append(name)
                report[name] = {"error": f"{type(e).__name__}: {e}"[:800],
                                "trace": traceback.format_exc()[-1500:]}
            report.setdefault("section_s", {})[name] = round(time.perf_counter() - t0, 1)
            # each section as it ends, so a run stopped early still leaves what it measured
            print(json.dumps({name: report[name]}, sort_keys=True), file=sys.stderr, flush=True)
    report["total_s"] = round(time.perf_counter() - started, 1)
    report["commit"], report["date"] = code_revision(), time.strftime("%Y-%m-%d", time.gmtime())
    print(json.dumps(report, sort_keys=True))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
            f.write("\n")
    return 1 if failed else 0


def code_revision() -> str:
    """The checkout's commit, read from .git without the git program (an air-gapped GPU
    node may not have it); "unknown" outside a checkout."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        git = os.path.join(root, ".git")
        if os.path.isfile(git):   # a worktree: "gitdir: <path>"
            git = open(git).read().split(":", 1)[1].strip()
        head = open(os.path.join(git, "HEAD")).read().strip()
        if not head.startswith("ref: "):
            return head[:12]
        ref = head[5:]
        for folder in (git, os.path.dirname(os.path.dirname(git.rstrip("/"))) if "worktrees" in git else git):
            if os.path.isfile(os.path.join(folder, ref)):
                return open(os.path.join(folder, ref)).read().strip()[:12]
        return "unknown"
    except (OSError, IndexError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
