"""Benchmark: rebuilds against the cold build on many distinct videos (issue 34), in CPU
seconds and frames decoded, measured in one run.

    python -m bench.imagecode_rebuild_videos [--videos 32] [--seconds 12] [--dir DIR]

Generates `--videos` distinct videos of two scenes each (12 s at 25 fps by default:
9,600 frames for 32), 320x240, with a fixed seed (transforms/video/synthetic.py; the
pairs of photos and motions are drawn by random.Random(SEED), and one scene in eight
is blurred, one in eight captioned, so both filters reject frames). The videos are
written once into `--dir` and reused while their list is the same (a shared machine
need not encode them again). Then, each build in a fresh process with the sample config
(stand-in encoder, both filters on, the default cache under the output folder) but its
static sets and crowd rounds (bench/imagecode_video.py VIDEO_ONLY), one after the other
into one output folder:

  1. cold (empty cache)                          1.0.0
  2. the same config, a new version              1.0.1
  3. mining.distance_threshold 0.35 -> 0.30      1.1.0
  4. quality.brisque.max_score 0.65 -> 0.70      1.2.0

Per build: CPU seconds (user + sys of the build's process and every process it waited
for: resource.getrusage(RUSAGE_CHILDREN) around it, imports included), its ratio to the
cold build's, frames decoded (for shots, when the video stage decoded any, plus the
miner's frame.decoded), frames the miner served from the cache, frames embedded and
BRISQUE/OCR values computed. Ends with issue 34's goals: a same-config rebuild decodes
0 frames and costs <= 0.08 of the cold build; a distance change <= 0.12.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import sys
import tempfile

from bench.imagecode_rebuild import build_in_child
from transforms.video import synthetic

SEED = 34
FPS = 25
SIZE = (320, 240)
MOTIONS = ("pan", "zoom")
BUILDS = (("cold", "1.0.0", ()),
          ("same config, new version", "1.0.1", ()),
          ("mining.distance_threshold 0.35 -> 0.30", "1.1.0", ("mining.distance_threshold=0.30",)),
          ("quality.brisque.max_score 0.65 -> 0.70", "1.2.0", ("quality.brisque.max_score=0.70",)))
GOALS = {"same config, new version": 0.08, "mining.distance_threshold 0.35 -> 0.30": 0.12}


def video_segments(n_videos: int, seconds: int):
    """Per video its two scenes (photo, frames, effect), distinct across videos: pairs of
    (photo, motion) drawn without repeats, a scene in eight blurred, one captioned."""
    rng = random.Random(SEED)
    scenes = [(photo, motion) for photo in sorted(synthetic.PHOTOS) for motion in MOTIONS]
    pairs = [pair for pair in itertools.permutations(scenes, 2) if pair[0][0] != pair[1][0]]
    chosen = rng.sample(pairs, n_videos)
    frames = seconds * FPS // 2
    out = []
    for pair in chosen:
        segments = []
        for photo, motion in pair:
            roll = rng.randrange(8)
            effect = motion + ("+blur" if roll == 0 else "+text" if roll == 1 else "")
            segments.append((photo, frames, effect))
        out.append(segments)
    return out


def make_videos(folder: str, n_videos: int, seconds: int) -> str:
    """The videos and their manifest in `folder`, made unless the folder holds them for
    the same list already; returns the manifest."""
    segments = video_segments(n_videos, seconds)
    os.makedirs(folder, exist_ok=True)
    listing = os.path.join(folder, "segments.json")
    manifest = os.path.join(folder, "videos.jsonl")
    wanted = json.dumps(segments)
    if os.path.isfile(listing) and open(listing).read() == wanted and os.path.isfile(manifest):
        return manifest
    lines = []
    for i, segs in enumerate(segments):
        path = os.path.join(folder, f"v{i:03d}.mp4")
        synthetic.make_video(path, segs, fps=FPS, size=SIZE)
        lines.append(json.dumps({"path": path, "source": "bench", "video_id": f"v{i:03d}",
                                 "split": ("train", "valid", "test")[i % 3]}))
    with open(manifest, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(listing, "w") as f:
        f.write(wanted)
    return manifest


def work_done(stages: dict) -> dict:
    shots, embed, mining = (stages.get(s, {}) for s in ("shots", "embed", "mining"))
    embedded = embed.get("frame.embedded", 0)
    return {"frames_decoded": (shots.get("frame.in", 0) if embedded else 0)
                              + mining.get("frame.decoded", 0),
            "served_from_cache": mining.get("frame.served_from_cache", 0),
            "frames_embedded": embedded,
            "brisque_computed": mining.get("frame.brisque_evaluations", 0),
            "ocr_computed": mining.get("frame.ocr_evaluations", 0)}


def video_arguments(description: str) -> argparse.ArgumentParser:
    """The arguments of a bench on these videos: how many, how long, where they are kept."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--videos", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=12)
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(),
                                                      "imagecode-rebuild-videos"))
    return parser


def main() -> int:
    args = video_arguments(__doc__).parse_args()
    manifest = make_videos(os.path.join(args.dir, f"{args.videos}x{args.seconds}s"),
                           args.videos, args.seconds)
    out = tempfile.mkdtemp(prefix="bench-rebuild-videos-")
    try:
        runs = {name: build_in_child(manifest, out, version, overrides)
                for name, version, overrides in BUILDS}
        cache_bytes = {}
        for stage in sorted(os.listdir(os.path.join(out, ".cache"))):
            folder = os.path.join(out, ".cache", stage)
            cache_bytes[stage] = sum(os.path.getsize(os.path.join(folder, f))
                                     for f in os.listdir(folder) if f.endswith(".parquet"))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    cold = runs["cold"]["cpu_seconds"]
    report = {name: {"cpu_seconds": round(r["cpu_seconds"], 1),
                     "of_cold": round(r["cpu_seconds"] / cold, 3),
                     "video_sets": r["sets"], **work_done(r["stages"])}
              for name, r in runs.items()}
    frames = runs["cold"]["stages"]["shots"]["frame.in"]
    kept = cache_bytes.get("frame_image", 0)
    print(json.dumps({"videos": args.videos, "frames": frames, "builds": report,
                      "cache_bytes": cache_bytes}, indent=1))
    print(f"\n{args.videos} videos x {args.seconds} s ({frames:,} frames), stand-in encoder, "
          "filters on, default cache; CPU s = user+sys of the build process and its children\n")
    print("| build | CPU s | of cold | frames decoded | served from cache | embedded | "
          "BRISQUE / OCR computed | sets |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in report.items():
        print(f"| {name} | {r['cpu_seconds']} | {r['of_cold']} | {r['frames_decoded']:,} | "
              f"{r['served_from_cache']:,} | {r['frames_embedded']:,} | "
              f"{r['brisque_computed']} / {r['ocr_computed']} | {r['video_sets']} |")
    print(f"\nframe images kept: {kept / 1e6:.1f} MB after the four builds")
    print("\nIssue 34's goals")
    same = report["same config, new version"]
    print(f"  {'MET    ' if same['frames_decoded'] == 0 else 'NOT MET'}  same config decodes 0 "
          f"frames: {same['frames_decoded']}")
    for name, goal in GOALS.items():
        r = report[name]
        print(f"  {'MET    ' if r['of_cold'] <= goal else 'NOT MET'}  {name}: <= {goal} of the "
              f"cold build: {r['of_cold']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
