"""Where a cold ImageCoDe video build spends its CPU, per part (issue 34), from a sampling
profile of the whole build process (py-spy, every thread; time in native code counts
for the Python frame that called it).

    pip install py-spy   # a profiler, not a dependency of the project
    python -m bench.imagecode_video_parts MANIFEST [--set k=v ...] [--rate 100]
                                              [--per-unit-videos 4]

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

A sampling profiler sees Python threads only, not FFmpeg's decode threads, so decode's
share is low in it. So the parts that run there, or once per frame the gate asks about,
are also measured per unit (`per_unit_costs`: ffmpeg's own decode, the stage's decodes,
BRISQUE, OCR, JPEG, in CPU ms) and multiplied by the build's counters: the build's CPU
per frame of video against ffmpeg's decode, part by part.
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
import time

# (part, marks): a sample goes to the part of the innermost frame of its stack that
# carries one of these marks (a frame may carry the marks of one part only): the shots
# are decoded and detected inside the embedder's loop, and BRISQUE runs inside the
# miner, so the innermost frame decides. The decode is split by who asked.
PARTS = (
    ("BRISQUE", ("transforms/image/brisque.py",)),
    ("OCR", ("transforms/image/ocr.py",)),
    ("embedding", ("transforms/image/encoders.py", "transforms/image/embed.py")),
    ("publishing (JPEG, release files)", ("transforms/video/frame_images.py",
                                          "pipelines/imagecode/release.py")),
    ("cache (Parquet shards)", ("transforms/cache/store.py", "pipelines/imagecode/records.py")),
    ("decode", ("transforms/video/decode.py",)),
    ("shot detection", ("transforms/video/shots.py", "transforms/core/hashing.py")),
    ("mining", ("pipelines/imagecode/video/mining.py", "pipelines/imagecode/video/scoring.py")),
)
MINING = ("pipelines/imagecode/video/mining.py", "pipelines/imagecode/video/scoring.py")   # the rule, its stage
# innermost frames of a thread that waits (py-spy may still sample it as busy)
IDLE = ("wait (threading.py)", "_wait_for_tstate_lock", "get (queue.py)",
        "_worker (concurrent/futures/thread.py:81)", "Reporter._loop (pipelines/progress.py")


def samples_by_part(raw: str, classify) -> collections.Counter:
    """py-spy's raw stacks (`frame;frame;... count` a line) summed by `classify(frames)`,
    the part a stack belongs to ("" for none)."""
    samples = collections.Counter()
    with open(raw) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            part = classify(stack.split(";"))
            if part:
                samples[part] += int(count)
    return samples


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
                    return ("decode in the miner" if any(m in f for m in MINING for f in frames)
                            else "decode for shots")
                return part
    return "rest (Beam, graph, release)"


def per_unit_costs(manifest: str, videos: int = 4, every: int = 10) -> dict:
    """CPU ms per unit of the parts that run on native threads a Python profiler does not
    see (FFmpeg's decode threads), or that the build runs once per frame the gate asks
    about, measured here on the manifest's first `videos` videos with
    time.process_time (every thread of this process; for ffmpeg, the CPU of the ended
    process): ffmpeg to the null muxer (the issue's "decode"), per frame; the shot
    stage's decode (RGB, every frame) and the miner's forward decode (frames not
    converted), per frame; BRISQUE, OCR (Tesseract in process) and the published JPEG,
    per frame they run on (every `every`-th frame)."""
    from transforms.image.brisque import BrisqueScorer
    from transforms.image.ocr import TextDetector
    from transforms.video.decode import ForwardFrameReader, iter_frames
    from transforms.video.frame_images import jpeg_bytes
    with open(manifest) as f:
        paths = [json.loads(line)["path"] for line in f if line.strip()][:videos]
    paths = [p if os.path.isabs(p) else os.path.join(os.path.dirname(manifest), p) for p in paths]
    sample, lengths = [], {}

    def ms_per(work, units) -> float:
        start = time.process_time()
        work()
        return round(1000 * (time.process_time() - start) / units(), 3)

    def shot_decode():
        for path in paths:
            for index, frame in iter_frames(path):
                lengths[path] = index + 1
                if index % every == 0:
                    sample.append(frame)

    def forward_decode():
        for path in paths:
            reader = ForwardFrameReader(path)
            try:   # asks for the last frame: reads the whole video, converts none
                reader.frames_of(0, lengths[path], (lengths[path] - 1,))
            finally:
                reader.close()

    def ffmpeg():
        for path in paths:
            subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", path, "-f", "null", "-"],
                           check=True)

    out = {"decode_rgb_for_shots": ms_per(shot_decode, lambda: sum(lengths.values()))}
    frames = sum(lengths.values())
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ffmpeg()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["ffmpeg_decode"] = round(1000 * ((after.ru_utime - before.ru_utime)
                                         + (after.ru_stime - before.ru_stime)) / frames, 3)
    out["forward_decode_no_rgb"] = ms_per(forward_decode, lambda: frames)
    scorer, text = BrisqueScorer(device="cpu"), TextDetector(backend="tesserocr")
    scorer.score_normalised(sample[:1]), text.text_chars(sample[0])   # loaded and compiled first
    out["brisque_per_frame_scored"] = ms_per(
        lambda: [scorer.score_normalised([f]) for f in sample], lambda: len(sample))
    out["ocr_per_frame_read"] = ms_per(lambda: [text.text_chars(f) for f in sample], lambda: len(sample))
    out["jpeg_per_frame_kept"] = ms_per(lambda: [jpeg_bytes(f, 95) for f in sample], lambda: len(sample))
    return {"frames": frames, "ms": out}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("manifest")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--rate", type=int, default=50, help="samples a second")
    parser.add_argument("--stacks", help="keep py-spy's raw stacks in this file")
    parser.add_argument("--per-unit-videos", type=int, default=4,
                        help="videos the per-unit costs are measured on (0: none)")
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
        samples = samples_by_part(raw, classify)
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
    if args.per_unit_videos:
        print_against_decode(result, per_unit_costs(args.manifest, args.per_unit_videos), cpu)
    return 0


def print_against_decode(result: dict, units: dict, cpu: float) -> None:
    """The build's CPU per frame of video next to ffmpeg's decode: the parts measured per
    unit times how often the build ran them (its counters)."""
    stages = result["stages"]
    frames = stages["shots"]["frame.in"]
    mining = stages.get("mining", {})
    ms = units["ms"]
    decode = ms["ffmpeg_decode"]
    # the frame cache keeps a JPEG of every frame scored (BRISQUE scores each first) or published
    kept = mining.get("frame.brisque_evaluations") or mining.get("frame.out", 0)
    parts = (("decode for shots (RGB)", ms["decode_rgb_for_shots"] * frames),
             ("decode in the miner (not converted)",
              ms["forward_decode_no_rgb"] * mining.get("frame.decoded", 0)),
             ("BRISQUE", ms["brisque_per_frame_scored"] * mining.get("frame.brisque_evaluations", 0)),
             ("OCR", ms["ocr_per_frame_read"] * mining.get("frame.ocr_evaluations", 0)),
             ("JPEG of the frames kept (scored, or published)", ms["jpeg_per_frame_kept"] * kept))
    print(json.dumps(units))
    print(f"\nAgainst ffmpeg's decode ({decode:.2f} CPU ms a frame, measured on "
          f"{units['frames']:,} frames of the manifest's first videos): CPU ms per frame of "
          "video, and in decodes\n")
    print("| part | CPU ms per frame of video | decodes |")
    print("|---|---|---|")
    for name, total_ms in parts:
        print(f"| {name} | {total_ms / frames:.2f} | {total_ms / frames / decode:.2f} |")
    whole = 1000 * cpu / frames
    print(f"| the whole build (imports included) | {whole:.2f} | {whole / decode:.2f} |")
    print(f"\nbuild / decode in CPU: {decode / whole:.3f}")


if __name__ == "__main__":
    sys.exit(main())
