"""Benchmark of the ImageCoDe video stage, printed as ratios measured in one run.

    python -m bench.imagecode_video [--shots 8] [--frames-per-shot 150]

On generated 320x240 videos (pipelines/synthetic.py) it reports:
  1. end-to-end frames/s of the whole build (decode, shots, stand-in encoder, lazy
     BRISQUE/OCR, mining, release) divided by ffmpeg's decode-only frames/s;
  2. BRISQUE and OCR evaluations per selected frame (the naive way: one per decoded frame);
  3. peak memory (max RSS) of a build on a video and on one twice as long.
Each build runs in a fresh process on Beam's in-process runner, so RSS is its own.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from pipelines import synthetic

PHOTOS = ["astronaut", "chelsea", "coffee", "rocket", "motorcycle_left", "motorcycle_right"]
CONFIG = "pipelines/configs/imagecode_sample.yaml"


def segments(n_shots: int, frames_per_shot: int):
    """Pans over real photos; every fourth shot blurred or captioned, as real videos have."""
    effects = ["pan", "pan", "pan+text", "pan", "pan", "pan", "pan+blur", "pan"]
    return [(PHOTOS[i % len(PHOTOS)], frames_per_shot, effects[i % len(effects)])
            for i in range(n_shots)]


def make_inputs(folder: str, name: str, segs) -> str:
    video = os.path.join(folder, f"{name}.mp4")
    synthetic.make_video(video, segs, size=(320, 240))
    manifest = os.path.join(folder, f"{name}.jsonl")
    with open(manifest, "w") as f:
        f.write(json.dumps({"path": video, "source": "bench", "video_id": name, "split": "train"}) + "\n")
    return manifest


def decode_only_fps(video: str, repeats: int = 3) -> float:
    """ffmpeg decoding to the null muxer: the ceiling for any video stage."""
    frames = int(subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
         "stream=nb_read_frames", "-of", "csv=p=0", video], capture_output=True, text=True,
        check=True).stdout.strip())
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", video, "-f", "null", "-"], check=True)
        best = min(best, time.perf_counter() - start)
    return frames / best


def build_in_child(manifest: str, out: str) -> dict:
    """One full build in a fresh process; returns its timing, counters and peak RSS."""
    proc = subprocess.run([sys.executable, "-m", "bench.imagecode_video", "--child", manifest, out],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child(manifest: str, out: str) -> None:
    from pipelines import imagecode  # imported here so import time is not measured
    start = time.perf_counter()
    release = imagecode.run(["--config", CONFIG, "--set", f"inputs.videos={manifest}",
                             "--output", out, "--version", "1.0.0"])
    seconds = time.perf_counter() - start
    stages = json.load(open(os.path.join(release, "MANIFEST.json")))["stages"]
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "stages": stages, "peak_rss_mib": peak_kib / 1024}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shots", type=int, default=8)
    parser.add_argument("--frames-per-shot", type=int, default=150)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0

    work = tempfile.mkdtemp(prefix="bench-imagecode-")
    try:
        segs = segments(args.shots, args.frames_per_shot)
        short = make_inputs(work, "short", segs)
        long_ = make_inputs(work, "long", segs + segs)
        video = short.replace(".jsonl", ".mp4")

        ffmpeg_fps = decode_only_fps(video)
        run_short = build_in_child(short, os.path.join(work, "out-short"))
        run_long = build_in_child(long_, os.path.join(work, "out-long"))

        decoded = run_short["stages"]["shots"]["frame.in"]
        e2e_fps = decoded / run_short["seconds"]
        mining = run_short["stages"]["mining"]
        brisque, ocr = mining.get("frame.brisque_evaluations", 0), mining.get("frame.ocr_evaluations", 0)
        selected = run_short["stages"]["sampling"]["frame.out"]
        results = {
            "video": {"frames": decoded, "size": "320x240", "shots": args.shots},
            "ffmpeg_decode_fps": round(ffmpeg_fps, 1),
            "end_to_end_fps": round(e2e_fps, 1),
            "e2e_over_decode": round(e2e_fps / ffmpeg_fps, 3),
            "brisque_evaluations": brisque, "ocr_evaluations": ocr, "selected_frames": selected,
            "brisque_per_selected_frame": round(brisque / max(selected, 1), 3),
            "ocr_per_selected_frame": round(ocr / max(selected, 1), 3),
            "naive_evaluations_per_selected_frame": round(decoded / max(selected, 1), 3),
            "peak_rss_mib": {"video": round(run_short["peak_rss_mib"], 1),
                             "twice_as_long": round(run_long["peak_rss_mib"], 1)},
            "memory_ratio": round(run_long["peak_rss_mib"] / run_short["peak_rss_mib"], 3),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(json.dumps(results, indent=2))
    print(f"\nend-to-end / decode-only fps : {results['e2e_over_decode']:.2f}   (goal >= 0.5)")
    print(f"BRISQUE evaluations per selected frame: {results['brisque_per_selected_frame']:.2f}, "
          f"OCR: {results['ocr_per_selected_frame']:.2f}"
          f"   (goal <= 1.5; naive {results['naive_evaluations_per_selected_frame']:.2f})")
    print(f"peak memory, twice as long / once : {results['memory_ratio']:.3f}   (goal <= 1.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
