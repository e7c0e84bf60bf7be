"""Where a cold ImageCoDe video build spends its CPU, per part (issue 34), from a sampling
profile of the whole build process (py-spy, every thread; time in native code counts
for the Python frame that called it).

    pip install py-spy   # a profiler, not a dependency of the project
    python -m bench.imagecode_video_parts MANIFEST [--set k=v ...] [--rate 100]

Builds MANIFEST once, cold, in a child process run under `py-spy record` (the
sample config without static sets and crowd rounds, bench/imagecode_video.py
VIDEO_ONLY; `--set` adds overrides, e.g. quality.brisque.enabled=false), and reads back
its samples. Each sample is one thread's stack at one moment: it is given to the part
of its innermost frame that belongs to one:

  BRISQUE, OCR, embedding (stand-in or CLIP encoder), shot detection (the detector's
  scores), decode for shots / decode in the miner (PyAV, the ffmpeg pipe, RGB
  conversion: split by who asked), publishing (JPEG, release files), cache (Parquet
  shards), mining (the greedy rule and its bookkeeping), imports (any stack inside
  the import machinery: torch, Beam, the models' modules), and the rest: Beam's runner,
  graph construction, release writing.

py-spy leaves out threads it sees idle (and a stack whose innermost frame is a wait is
dropped too), so the shares are of CPU, not of wall time. The parts are printed as
shares of the samples and as CPU ms per frame: the build process's own CPU seconds
(user + sys, its getrusage, the profiler's excluded) times the share, over the frames
decoded for shots.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

# (part, marks): a sample goes to the part of the innermost frame of its stack that
# carries one of these marks (a frame may carry the marks of one part only): the shots
# are decoded and detected inside the embedder's loop, and BRISQUE runs inside the
# miner, so the innermost frame decides. The decode is split by who asked.
PARTS = (
    ("BRISQUE", ("transforms/image/brisque.py",)),
    ("OCR", ("transforms/image/ocr.py",)),
    ("embedding", ("transforms/image/encoders.py", "transforms/image/embed.py")),
    ("publishing (JPEG, release files)", ("transforms/video/frame_images.py",
                                          "pipelines/imagecode/publish.py")),
    ("cache (Parquet shards)", ("transforms/cache/store.py", "pipelines/imagecode/records.py")),
    ("decode", ("transforms/video/decode.py",)),
    ("shot detection", ("transforms/video/shots.py", "transforms/core/hashing.py")),
    ("mining", ("pipelines/imagecode/mining.py",)),
)
MINING = "pipelines/imagecode/mining.py"
# innermost frames of a thread that waits (py-spy may still sample it as busy)
IDLE = ("wait (threading.py)", "_wait_for_tstate_lock", "get (queue.py)",
        "_worker (concurrent/futures/thread.py:81)", "Reporter._loop (pipelines/progress.py")


def classify(frames: list) -> str:
    """The part of one stack (frames outermost first, as py-spy's raw output lists them);
    "" for a thread waiting."""
    if not frames or not frames[-1] or any(mark in frames[-1] for mark in IDLE):
        return ""
    if any("importlib._bootstrap" in frame for frame in frames):
        return "imports"
    for frame in reversed(frames):
        for part, marks in PARTS:
            if any(mark in frame for mark in marks):
                if part == "decode":
                    return ("decode in the miner" if any(MINING in f for f in frames)
                            else "decode for shots")
                return part
    return "rest (Beam, graph, release)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("manifest")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--rate", type=int, default=50, help="samples a second")
    parser.add_argument("--stacks", help="keep py-spy's raw stacks in this file")
    args = parser.parse_args()
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    work = tempfile.mkdtemp(prefix="bench-video-parts-")
    try:
        raw = os.path.join(work, "stacks.txt")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(
            [spy, "record", "-r", str(args.rate), "-f", "raw",
             "-o", raw, "--", sys.executable, "-m", "bench.imagecode_rebuild", "--child",
             os.path.abspath(args.manifest), os.path.join(work, "out"), "1.0.0", *args.overrides],
            capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-3000:])
        # the build's result is its last JSON line (py-spy prints its own lines too)
        result = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
        samples = collections.Counter()
        with open(raw) as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                part = classify(stack.split(";"))
                if part:
                    samples[part] += int(count)
        if args.stacks:
            shutil.copyfile(raw, args.stacks)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with_profiler = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu = result["process_cpu_seconds"]   # the build's own (py-spy's is in with_profiler)
    frames = result["stages"]["shots"]["frame.in"]
    total = sum(samples.values())
    print(json.dumps({"frames": frames, "cpu_seconds": round(cpu, 1),
                      "cpu_seconds_with_profiler": round(with_profiler, 1),
                      "samples": dict(samples)}, indent=1))
    print(f"\n{frames:,} frames; {cpu:.1f} CPU s in the build's process; shares of the "
          f"build's busy samples ({total:,})\n")
    print("| part | share | CPU ms per frame |")
    print("|---|---|---|")
    for part, n in samples.most_common():
        print(f"| {part} | {n / total:.1%} | {1000 * cpu * n / total / max(frames, 1):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
