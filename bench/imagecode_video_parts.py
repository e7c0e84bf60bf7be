"""Where a cold ImageCoDe video build spends its CPU, per part (issue 34), from a sampling
profile of the whole build process (py-spy, every thread, native frames included).

    pip install py-spy   # a profiler, not a dependency of the project
    python -m bench.imagecode_video_parts MANIFEST [--set k=v ...] [--rate 100]

Builds MANIFEST once, cold, in a child process run under `py-spy record --native` (the
sample config without static sets and crowd rounds, bench/imagecode_video.py
VIDEO_ONLY; `--set` adds overrides, e.g. quality.brisque.enabled=false), and reads back
its samples. Each sample is one thread's stack at one moment: it is given to the first
part whose mark is in the stack, innermost frame first:

  BRISQUE, OCR, embedding (stand-in or CLIP encoder), shot detection (the detector's
  scores), decode for shots / decode in the miner (PyAV, the ffmpeg pipe, RGB
  conversion: split by who asked), publishing (JPEG, release files), cache (Parquet
  shards), mining (the greedy rule and its bookkeeping), and the rest: imports, Beam's
  runner, graph construction, release writing.

py-spy leaves out threads it sees idle (and a stack whose innermost frame is a wait is
dropped too), so the shares are of CPU, not of wall time. The parts are printed as shares of the samples and as CPU ms per frame (the
build's CPU seconds, from getrusage, times the share, over the frames decoded for shots).
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

# (part, marks): a sample goes to the first part one of whose marks is in a frame of its
# stack, frames searched from the innermost out. Order matters: BRISQUE runs inside the
# miner, the decode inside shot detection.
PARTS = (
    ("BRISQUE", ("transforms/image/brisque.py",)),
    ("OCR", ("transforms/image/ocr.py", "tesserocr", "libtesseract")),
    ("embedding", ("transforms/image/encoders.py", "transforms/image/embed.py", "open_clip")),
    ("publishing (JPEG, release files)", ("frame_images.py", "PIL/", "libjpeg",
                                          "pipelines/imagecode/publish.py")),
    ("cache (Parquet shards)", ("transforms/cache/store.py", "records.py")),
)
DECODE = ("transforms/video/decode.py", "libavcodec", "libswscale", "av/")
SHOTS = "transforms/video/shots.py"
MINING = "pipelines/imagecode/mining.py"
IDLE = ("wait (threading.py)", "_wait_for_tstate_lock", "select (", "poll (", "epoll",
        "futex", "pthread_cond_wait", "get (queue.py)", "sem_wait", "recv (")


def classify(frames: list) -> str:
    """The part of one stack (frames outermost first, as py-spy's raw output lists them)."""
    inner_first = frames[::-1]
    if inner_first and any(mark in inner_first[0] for mark in IDLE):
        return ""
    for part, marks in PARTS:
        if any(mark in frame for frame in inner_first for mark in marks):
            return part
    if any(mark in frame for frame in inner_first for mark in DECODE):
        return "decode in the miner" if any(MINING in f for f in frames) else "decode for shots"
    if any(SHOTS in frame for frame in frames):
        return "shot detection"
    if any(MINING in frame for frame in frames):
        return "mining"
    return "rest (imports, Beam, graph, release)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("manifest")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--rate", type=int, default=100, help="samples a second")
    args = parser.parse_args()
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    work = tempfile.mkdtemp(prefix="bench-video-parts-")
    try:
        raw = os.path.join(work, "stacks.txt")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(
            [spy, "record", "--native", "-r", str(args.rate), "-f", "raw",
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
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # py-spy's own CPU is in the children's time too; the build's is its share of samples
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    frames = result["stages"]["shots"]["frame.in"]
    total = sum(samples.values())
    print(json.dumps({"frames": frames, "cpu_seconds_with_profiler": round(cpu, 1),
                      "samples": dict(samples)}, indent=1))
    print(f"\n{frames:,} frames; {cpu:.1f} CPU s (build and profiler); shares of the "
          f"build's busy samples ({total:,})\n")
    print("| part | share | CPU ms per frame |")
    print("|---|---|---|")
    for part, n in samples.most_common():
        print(f"| {part} | {n / total:.1%} | {1000 * cpu * n / total / max(frames, 1):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
