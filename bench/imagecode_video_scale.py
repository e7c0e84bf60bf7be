"""Benchmark: peak memory of ImageCoDe's video stage as the manifest grows (issue 28).

    python -m bench.imagecode_video_scale [--videos 8,32,128,512] [--long 3] [--warm 128]
                                          [--code DIR] [--out FILE.json]

A build of N short videos must not hold what it decodes or embeds for every video at
once: its peak memory should follow the videos in flight, not the manifest. For each N
it makes a manifest of N distinct generated videos (320x240, 25 fps, 4 shots of 60
frames, ~10 s: MSR-VTT length; one shot in eight blurred, one captioned, as
bench/imagecode_video.py's mixed content), builds it cold in a fresh process (sample
config without static sets and crowd rounds, cache on, filters on: what `make
build-imagecode CONFIG=sample VIDEOS=...` runs), and reports its peak memory: the build
process's max RSS (the kernel's high-water mark, exact: the figure issue 28 quotes), the
largest max RSS of the programs it ran (ffmpeg, ffprobe), and the peak of the whole
process tree's PSS sampled every 0.1 s with psutil (PSS, not RSS: a child forked a moment
before it runs ffmpeg would count the build twice; but pages of libraries shared with
other processes on the machine count in part, so it reads lower than the RSS). Then
the build's CPU seconds (with its children's), wall seconds and frames decoded. `--long`
adds a manifest of that many 5-minute videos (7,500 frames each, the YouCook kind);
`--warm N` rebuilds manifest N from its cache (nothing decoded, embedded or scored
again: a warm cache must stay bounded too).

Videos are stream-copied from a pool of 24 one-shot clips (ffmpeg's concat demuxer, no
re-encode), each video another sequence of clips, so every video has its own frames and
none is a duplicate of another; making 512 of them takes seconds, not an encode each.

`--code DIR` builds with another checkout (e.g. the code before a change); the manifests
and this script stay the same. It ends with issue 28's goal: peak memory at the largest
N at most 1.3x that at the smallest. CPU seconds are noisy on a shared machine; peaks
are not. Each size runs once.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pipelines.release.write.manifest import remove_tree   # a published release is read-only

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONFIG = "pipelines/imagecode/configs/sample.yaml"
VIDEO_ONLY = ("static.images=null", "crowd.descriptions=null", "crowd.retrievals=null")
SIZE = (320, 240)
CLIP_FRAMES = 60
CLIPS_PER_VIDEO = 4
POOL = 24
LONG_CLIPS = 125  # 125 x 60 frames = 7,500 frames: 5 minutes at 25 fps


def make_clips(folder: str) -> list:
    """POOL one-shot clips of CLIP_FRAMES frames: photos panned or zoomed, every eighth
    captioned, every eighth blurred (the filters' work of a real mix)."""
    from transforms.video import synthetic
    photos = sorted(synthetic.PHOTOS)
    os.makedirs(folder, exist_ok=True)
    clips = []
    for k in range(POOL):
        effect = {3: "pan+text", 7: "pan+blur"}.get(k % 8, ("pan", "zoom")[k % 2])
        path = os.path.join(folder, f"clip{k:02d}.mp4")
        if not os.path.exists(path):
            synthetic.make_video(path, [(photos[k % len(photos)], CLIP_FRAMES, effect)], size=SIZE)
        clips.append(path)
    return clips


def clip_sequence(i: int, n_clips: int) -> list:
    """The clips of video i: distinct sequences for i < POOL**2 (a, b are its digits)."""
    a, b = i % POOL, (i // POOL) % POOL
    return [(a + k * (b + 1) + k * k) % POOL for k in range(n_clips)]


def concat(clips: list, sequence: list, path: str) -> None:
    listing = path + ".txt"
    with open(listing, "w") as f:
        f.writelines(f"file '{clips[k]}'\n" for k in sequence)
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "concat", "-safe", "0",
                    "-i", listing, "-c", "copy", "-movflags", "+faststart", path], check=True)
    os.remove(listing)


def make_manifest(folder: str, clips: list, name: str, n: int, n_clips: int) -> str:
    videos = os.path.join(folder, name)
    os.makedirs(videos, exist_ok=True)
    manifest = os.path.join(folder, f"{name}.jsonl")
    with open(manifest, "w") as f:
        for i in range(n):
            path = os.path.join(videos, f"v{i:04d}.mp4")
            if not os.path.exists(path):
                concat(clips, clip_sequence(i, n_clips), path)
            f.write(json.dumps({"path": path, "source": "bench", "video_id": f"v{i:04d}",
                                "split": ("train", "valid", "test")[i % 3]}) + "\n")
    return manifest


class TreePeak:
    """Peak of the summed proportional set size (PSS) of a process and all its
    descendants: resident memory with each shared page split between the processes
    sharing it, so a child forked a moment before it runs ffmpeg is not counted twice."""

    def __init__(self, pid: int, every: float = 0.1):
        import psutil
        self._root = psutil.Process(pid)
        self._every = every
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self):
        import psutil
        while not self._done.is_set():
            total = 0
            try:
                for proc in [self._root, *self._root.children(recursive=True)]:
                    try:
                        total += proc.memory_full_info().pss
                    except psutil.Error:
                        pass  # ended between listing and reading
            except psutil.Error:
                break
            self.peak = max(self.peak, total)
            time.sleep(self._every)

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak


def build(code: str, manifest: str, out: str, version: str = "1.0.0") -> dict:
    """One build in a fresh process running `code`'s pipelines; its figures."""
    env = dict(os.environ, PYTHONPATH=code)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", manifest, out,
                             version], cwd=code, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    watch = TreePeak(proc.pid)
    stdout, stderr = proc.communicate()
    peak = watch.stop()
    if proc.returncode != 0:
        raise RuntimeError(stderr[-3000:])
    result = json.loads(stdout.strip().splitlines()[-1])
    stages = result.pop("stages")
    return {"peak_tree_pss_mib": round(peak / 2**20, 1), "wall_seconds": round(time.perf_counter() - start, 1),
            **{k: round(v, 1) for k, v in result.items()},
            "videos_in": stages["shots"]["video.in"], "frames_decoded": stages["shots"]["frame.in"],
            "frames_embedded": stages["embed"].get("frame.embedded", 0),
            "frames_cached": stages["embed"].get("frame.cached", 0),
            "sets": stages["sampling"]["set.out"]}


def child(manifest: str, out: str, version: str) -> None:
    from pipelines import build as build_command
    sets = [arg for o in VIDEO_ONLY for arg in ("--set", o)]
    cpu = time.process_time()
    release = build_command.build("imagecode", ["--config", CONFIG, "--set", f"inputs.videos={manifest}",
                                                "--output", out, "--version", version, *sets])
    from pipelines.release.write.manifest import run_counters
    stages = run_counters(release)   # the release's counters and the run's work (BUILD.json)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"cpu_seconds": time.process_time() - cpu
                      + children.ru_utime + children.ru_stime,
                      "peak_self_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "largest_child_mib": children.ru_maxrss / 1024,
                      "stages": stages}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--videos", default="8,32,128,512")
    parser.add_argument("--long", type=int, default=3, help="5-minute videos (0: none)")
    parser.add_argument("--warm", type=int, default=0, help="rebuild this size from its cache")
    parser.add_argument("--code", default=ROOT, help="the checkout whose pipelines build")
    parser.add_argument("--work", default="", help="keep inputs here (default: a temp folder)")
    parser.add_argument("--out", default="", help="also write the results here (JSON)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    sys.path.insert(0, ROOT)
    work = args.work or tempfile.mkdtemp(prefix="bench-scale-")
    code = os.path.abspath(args.code)
    results = {}
    try:
        clips = make_clips(os.path.join(work, "clips"))
        runs = [(f"{n} short", n, CLIPS_PER_VIDEO) for n in map(int, args.videos.split(","))]
        if args.long:
            runs.append((f"{args.long} x 5 min", args.long, LONG_CLIPS))
        for name, n, n_clips in runs:
            manifest = make_manifest(work, clips, name.replace(" ", "-"), n, n_clips)
            out = os.path.join(work, "out-" + name.replace(" ", "-"))
            remove_tree(out, ignore_errors=True)
            results[name] = build(code, manifest, out)
            print(name, json.dumps(results[name]), flush=True)
            if args.warm == n and n_clips == CLIPS_PER_VIDEO:
                results[f"{name}, warm cache"] = build(code, manifest, out, "1.0.1")
                print(f"{name}, warm cache", json.dumps(results[f"{name}, warm cache"]), flush=True)
            remove_tree(out, ignore_errors=True)
    finally:
        if not args.work:
            remove_tree(work, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    print("\n| manifest | frames decoded | frames embedded | sets | build max RSS (MiB) "
          "| largest child max RSS (MiB) | tree peak PSS (MiB) | CPU s | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['frames_decoded']:,} | {r['frames_embedded']:,} | {r['sets']} "
              f"| {r['peak_self_mib']:,.0f} | {r['largest_child_mib']:,.0f} "
              f"| {r['peak_tree_pss_mib']:,.0f} | {r['cpu_seconds']:,.0f} | {r['wall_seconds']:,.0f} |")
    short = [(int(name.split()[0]), r) for name, r in results.items()
             if name.endswith("short")]
    if len(short) >= 2:
        (n0, r0), (n1, r1) = min(short, key=lambda s: s[0]), max(short, key=lambda s: s[0])
        ratio = r1["peak_self_mib"] / r0["peak_self_mib"]
        print(f"\nIssue 28's goal: peak memory (build max RSS) at {n1} videos <= 1.3x that at "
              f"{n0}: {ratio:.2f}x  {'MET' if ratio <= 1.3 else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
