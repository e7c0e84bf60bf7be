"""Benchmark: a rebuild after a threshold change against the cold build, on the same
inputs in the same run (issue 4's regeneration workflow), printed as ratios.

    python -m bench.imagecode_rebuild [--shots 8] [--frames-per-shot 150]

On a generated 320x240 video (one shot in eight blurred, one captioned; see
bench/imagecode_video.py) it builds, each in a fresh process:
  1. 1.0.0 cold (empty cache);
  2. 1.0.1 with the same config (everything cached);
  3. 1.1.0 with mining.distance_threshold=0.30 (the issue's example);
  4. 1.2.0 with quality.brisque.max_score=0.70 (a filter threshold);
  5. 1.3.0 with quality.ocr.max_text_chars=12 (the other filter's threshold);
then, in a second output folder, the same cold build and distance change with
quality.score_all_frames=true (every frame scored in the cold build). It reports wall time over the cold build's, and the model work each did: frames
embedded, encoder loads, BRISQUE and OCR scores computed (and taken from the cache),
frames decoded. Every build uses the sample config without its static sets and crowd
rounds (bench/imagecode_video.py VIDEO_ONLY). A cached score is never computed again; a frame the lazy filters never
saw before (a new distance threshold picks other frames) must still be scored once.
It ends with issue 14's rebuild goal for each single threshold change: at most 0.25 of
the cold build, with no frame embedded and no encoder loaded.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from bench.imagecode_video import VIDEO_ONLY, make_inputs, segments
from pipelines.release.write.manifest import remove_tree   # a published release is read-only

CONFIG = "pipelines/imagecode/configs/sample.yaml"
ALL = ("quality.score_all_frames=true",)
# (series, build, version, overrides): each series has its own output folder and cache.
BUILDS = (("lazy", "cold", "1.0.0", ()),
          ("lazy", "same config", "1.0.1", ()),
          ("lazy", "distance 0.35 -> 0.30", "1.1.0", ("mining.distance_threshold=0.30",)),
          ("lazy", "BRISQUE max 0.65 -> 0.70", "1.2.0", ("quality.brisque.max_score=0.70",)),
          ("lazy", "OCR max 10 -> 12 chars", "1.3.0", ("quality.ocr.max_text_chars=12",)),
          ("all", "cold, every frame scored", "1.0.0", ALL),
          ("all", "distance 0.35 -> 0.30, every frame scored", "1.1.0",
           ALL + ("mining.distance_threshold=0.30",)))


def build_in_child(manifest: str, out: str, version: str, overrides) -> dict:
    """One build in a fresh process: its result, plus "cpu_seconds", the user+sys time of
    that process and every process it waited for (imports and start-up included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "bench.imagecode_rebuild", "--child", manifest,
                           out, version, *overrides], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["cpu_seconds"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


def child(manifest: str, out: str, version: str, *overrides: str) -> None:
    from pipelines import build, registry  # imported here so import time is not measured
    benchmark = registry.load("imagecode")
    sets = [arg for override in (*VIDEO_ONLY, *overrides) for arg in ("--set", override)]
    start = time.perf_counter()
    release = build.build(benchmark, ["--config", CONFIG, "--set", f"inputs.videos={manifest}",
                            "--output", out, "--version", version, *sets])
    seconds = time.perf_counter() - start
    manifest_json = json.load(open(os.path.join(release, "MANIFEST.json")))
    own, waited = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    from pipelines.release.write.manifest import run_counters   # the work counters are BUILD.json's
    print(json.dumps({"seconds": seconds, "stages": run_counters(release),
                      "process_cpu_seconds": sum((own.ru_utime, own.ru_stime,
                                                  waited.ru_utime, waited.ru_stime)),
                      "sets": manifest_json["counts"]["tables"]["video_sets"]["total"]}))


def model_work(stages: dict) -> dict:
    embed, mining = stages.get("embed", {}), stages.get("mining", {})
    return {"frames_embedded": embed.get("frame.embedded", 0),
            "encoder_loads": embed.get("model.loaded", 0),
            "brisque_computed": mining.get("frame.brisque_evaluations", 0),
            "brisque_cached": mining.get("frame.brisque_cached", 0),
            "ocr_computed": mining.get("frame.ocr_evaluations", 0),
            "ocr_cached": mining.get("frame.ocr_cached", 0),
            "frames_decoded": (stages.get("shots", {}).get("frame.in", 0)
                               if embed.get("frame.embedded", 0) else 0)
                              + mining.get("frame.decoded", 0)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shots", type=int, default=8)
    parser.add_argument("--frames-per-shot", type=int, default=150)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    work = tempfile.mkdtemp(prefix="bench-rebuild-")
    try:
        manifest = make_inputs(work, "rebuild", segments(args.shots, args.frames_per_shot, True))
        runs = {name: build_in_child(manifest, os.path.join(work, series), version, overrides)
                for series, name, version, overrides in BUILDS}
    finally:
        remove_tree(work, ignore_errors=True)
    cold = {"lazy": runs["cold"]["seconds"], "all": runs["cold, every frame scored"]["seconds"]}
    series_of = {name: series for series, name, _, _ in BUILDS}
    report = {name: {"seconds": round(r["seconds"], 2),
                     "over_cold": round(r["seconds"] / cold[series_of[name]], 3),
                     "video_sets": r["sets"], **model_work(r["stages"])}
              for name, r in runs.items()}
    print(json.dumps(report, indent=1))
    header = ("build", "seconds", "/ cold", "sets", "embedded", "loads", "BRISQUE computed/cached",
              "OCR computed/cached", "decoded")
    print(" | ".join(header))
    for name, r in report.items():
        print(" | ".join(map(str, (name, r["seconds"], r["over_cold"], r["video_sets"],
                                   r["frames_embedded"], r["encoder_loads"],
                                   f"{r['brisque_computed']}/{r['brisque_cached']}",
                                   f"{r['ocr_computed']}/{r['ocr_cached']}", r["frames_decoded"]))))
    print("\nIssue 14's goal: a rebuild after one threshold change <= 0.25 of the cold build, "
          "no model call for cached values (frames embedded, encoder loads)")
    for name in ("distance 0.35 -> 0.30", "BRISQUE max 0.65 -> 0.70", "OCR max 10 -> 12 chars"):
        r = report[name]
        met = r["over_cold"] <= 0.25 and r["frames_embedded"] == 0 and r["encoder_loads"] == 0
        print(f"  {'MET    ' if met else 'NOT MET'}  {name}: {r['over_cold']} of the cold build, "
              f"{r['frames_embedded']} frames embedded, {r['encoder_loads']} encoder loads, "
              f"BRISQUE/OCR computed {r['brisque_computed']}/{r['ocr_computed']} "
              f"(cached {r['brisque_cached']}/{r['ocr_cached']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
