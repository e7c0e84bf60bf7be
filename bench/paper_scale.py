"""ImageCoDe at the paper's size, on paper: each figure computed from measured per-part
rates, with its formula (the table in docs/benchmarks.md, "The paper's scale").

    python -m bench.paper_scale [--cpu bench/results/real_model_cpu.json]
                                [--gpu bench/results/gpu-<device>.json]
                                [--hours msr-vtt=41.2,video-storytelling=10,youcook=10]
                                [--fps 30] [--precision int8] [--workers 50 --worker-cores 4]

The paper (§3.1) embeds every frame of every scene of three video sources and Open
Images' 1.74M pictures, then retrieves each sampled picture's 9 nearest neighbours.
Inputs:
  - the real model's CPU cost per decoded frame of the whole video stage, per picture of
    the static sets, and the embedding's share of them (`bench/real_model.py`);
  - the exact kNN of the paper's 4,845 sampled queries against 1.74M vectors on the CPU,
    KNN_CPU_S (docs/benchmarks.md, "Growth with the input": projected from 10k-1M);
  - the GPU's rates: from `--gpu` (bench/gpu.py's JSON) where given, else GPU_PROSE, the
    2026-11-28 H200 run that left no file (labelled so in the output).
The hours of video: MSR-VTT's 41.2 h are published (Xu et al. 2016); the paper gives no
duration for Video-Storytelling or YouCook, so their 10 h each are assumptions (pass
--hours with the real figures). Frames at --fps (30: MSR-VTT's clips are mostly 30 fps).
Set-ups: this machine (its cores), one 16-core machine with one GPU (the CPU part on 16
cores, embedding and BRISQUE on the GPU, overlapped: the slower of the two), and N
workers of C cores each (CPU only: the total CPU over N x C).
"""
from __future__ import annotations

import argparse
import json
import os

OPEN_IMAGES = 1_740_000            # §3.1: Open Images V6, 1.74M images
SAMPLED_SETS = 4_845               # §3.1: the static sets sampled
KNN_CPU_S = 370.0                  # 4,845 queries x 1.74M x 512, FAISS CPU, projected (docs/benchmarks.md)
BRISQUE_CPU_MS = 17.9              # one frame's BRISQUE on the CPU (docs/benchmarks.md, video stage per part)
GPU_PROSE = {"device": "NVIDIA H200 (2026-11-28 run, figures in prose: no JSON was committed)",
             "clip_fp16_frames_per_s": 7769.0, "brisque_frames_per_s": 652.0,
             "knn_1m_10k_queries_s": 1.9}
GPU_CORES = 16


def parse_hours(text: str) -> dict:
    hours = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        hours[name.strip()] = float(value)
    return hours


def gpu_rates(path) -> dict:
    """The GPU's rates from bench/gpu.py's report (its own keys), the kNN's time brought to
    10k queries against 1M vectors (linear in both), the faster GPU backend's."""
    if not path:
        return dict(GPU_PROSE)
    with open(path) as f:
        report = json.load(f)
    knn = report["knn"]
    gpu_s = min(knn[key] for key in ("faiss_cuda_s", "torch_cuda_s") if key in knn)
    return {"device": f"{report.get('gpu') or report['device']} (bench/gpu.py at {report.get('commit', '?')})",
            "clip_fp16_frames_per_s": report["clip"]["fp16_frames_per_s"],
            "brisque_frames_per_s": report["brisque"]["scores_frames_per_s"],
            "knn_1m_10k_queries_s": gpu_s * (10_000 / knn["queries"]) * (1_000_000 / knn["n"])}


def hours_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:,.1f} min"
    return f"{seconds / 3600:,.1f} h"


def paper_scale(cpu: dict, gpu: dict, hours: dict, fps: float, precision: str,
                workers: int, worker_cores: int, cores: int) -> list:
    """[(row, formula, this machine, 16 cores + GPU, N workers)] as text."""
    video = cpu["video"][precision]
    frames = sum(hours.values()) * 3600 * fps
    # a build of the bench's size pays the encoder's set-up (int8's quantisation) once per
    # worker; at the paper's size that is nothing a frame, so it is left out of the rate
    setup_s = cpu.get("encoder", {}).get(precision, {}).get("setup_cpu_s", 0.0)
    frame_cpu_ms = video["cpu_ms_per_frame"] - 1000 * setup_s / cpu["video"]["frames"]
    embed_ms = video["cpu_ms_per_frame"] * video["embedding_share"]   # embedding ms a decoded frame
    brisque_ms = BRISQUE_CPU_MS * video["brisque_evaluations"] / cpu["video"]["frames"]
    rest_ms = frame_cpu_ms - embed_ms - brisque_ms
    static = cpu["static"]
    picture_embed_ms = static[f"embed_{precision}_cpu_ms_per_picture"]
    picture_ms = static["decode_cpu_ms_per_picture"] + picture_embed_ms

    video_cpu_s = frames * frame_cpu_ms / 1000
    video_gpu_s = max(frames * rest_ms / 1000 / GPU_CORES,
                      frames / gpu["clip_fp16_frames_per_s"]
                      + frames * video["brisque_evaluations"] / cpu["video"]["frames"] / gpu["brisque_frames_per_s"])
    static_cpu_s = OPEN_IMAGES * picture_ms / 1000
    static_gpu_s = max(OPEN_IMAGES * static["decode_cpu_ms_per_picture"] / 1000 / GPU_CORES,
                       OPEN_IMAGES / gpu["clip_fp16_frames_per_s"])
    # the GPU's kNN: 10k queries against 1M in knn_1m_10k_queries_s; linear in both
    knn_gpu_s = gpu["knn_1m_10k_queries_s"] * (SAMPLED_SETS / 10_000) * (OPEN_IMAGES / 1_000_000)
    all_pairs_cpu_s = KNN_CPU_S * OPEN_IMAGES / SAMPLED_SETS
    all_pairs_gpu_s = gpu["knn_1m_10k_queries_s"] * (OPEN_IMAGES / 10_000) * (OPEN_IMAGES / 1_000_000)
    n = workers * worker_cores
    rows = [
        (f"video frames: {frames:,.0f}", f"{sum(hours.values()):.1f} h x 3600 x {fps:g} fps", "", "", ""),
        ("video stage", f"frames x {frame_cpu_ms:.1f} CPU ms ({precision}, its set-up of {setup_s:.0f} CPU s "
         f"once a worker left out; embedding {embed_ms:.1f}, "
         f"BRISQUE {brisque_ms:.1f}, the rest {rest_ms:.1f}); GPU: max(rest / 16 cores, "
         f"frames / {gpu['clip_fp16_frames_per_s']:,.0f} fp16 + BRISQUE frames / {gpu['brisque_frames_per_s']:,.0f})",
         hours_text(video_cpu_s / cores), hours_text(video_gpu_s), hours_text(video_cpu_s / n)),
        ("static sets: decode + embed 1.74M pictures",
         f"1.74M x {picture_ms:.1f} CPU ms (decode {static['decode_cpu_ms_per_picture']:.1f}, "
         f"embed {picture_embed_ms:.1f}); GPU: max(decode / 16 cores, 1.74M / {gpu['clip_fp16_frames_per_s']:,.0f})",
         hours_text(static_cpu_s / cores), hours_text(static_gpu_s), hours_text(static_cpu_s / n)),
        ("static sets: exact kNN, 4,845 queries x 1.74M",
         f"{KNN_CPU_S:.0f} CPU s (FAISS CPU); GPU: {gpu['knn_1m_10k_queries_s']} s x 0.4845 x 1.74",
         hours_text(KNN_CPU_S / cores), hours_text(knn_gpu_s), hours_text(KNN_CPU_S / n)),
        ("(every picture's 9 neighbours, 1.74M x 1.74M)",
         f"{KNN_CPU_S:.0f} CPU s x 1.74M / 4,845; GPU: {gpu['knn_1m_10k_queries_s']} s x 174 x 1.74",
         hours_text(all_pairs_cpu_s / cores), hours_text(all_pairs_gpu_s), hours_text(all_pairs_cpu_s / n)),
        ("total (video + static + 4,845-query kNN)", "the sum",
         hours_text((video_cpu_s + static_cpu_s + KNN_CPU_S) / cores),
         hours_text(video_gpu_s + static_gpu_s + knn_gpu_s),
         hours_text((video_cpu_s + static_cpu_s + KNN_CPU_S) / n)),
    ]
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", default="bench/results/real_model_cpu.json")
    parser.add_argument("--gpu", default=None)
    parser.add_argument("--hours", default="msr-vtt=41.2,video-storytelling=10,youcook=10")
    parser.add_argument("--fps", type=float, default=30)
    parser.add_argument("--precision", default="int8")
    parser.add_argument("--workers", type=int, default=50)
    parser.add_argument("--worker-cores", type=int, default=4)
    args = parser.parse_args(argv)
    with open(args.cpu) as f:
        cpu = json.load(f)
    gpu = gpu_rates(args.gpu)
    cores = cpu["machine"]["cores"]
    rows = paper_scale(cpu, gpu, parse_hours(args.hours), args.fps, args.precision,
                       args.workers, args.worker_cores, cores)
    print(f"CPU rates: {os.path.relpath(args.cpu)} (commit {cpu['commit']}, {cpu['machine']['cpu']}); "
          f"GPU: {gpu['device']}; hours {args.hours}")
    print(f"| part | formula | this machine ({cores} cores) | 16 cores + 1 GPU | "
          f"{args.workers} workers x {args.worker_cores} cores |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
