"""Where a same-config ImageCoDe rebuild spends its CPU, part by part (issue 34), from a
sampling profile of the rebuild's process (py-spy, every thread, idle threads left out).

    pip install py-spy   # a profiler, not a dependency of the project
    python -m bench.imagecode_rebuild_parts [--videos 32] [--seconds 12] [--dir DIR]
                                            [--rate 100] [--stacks FILE]

Makes (or reuses) the videos of bench/imagecode_rebuild_videos.py, builds them cold
(1.0.0, not profiled), then builds 1.0.1 with the same config under `py-spy record` and
gives each sample (one thread's stack at one moment) to the first part below whose mark
is in its stack, phase first (imports, the Beam run, graph construction, the release),
then what inside it. CPU s per part = the rebuild process's own CPU seconds (user +
sys, its getrusage; the profiler's excluded) times the part's share of the busy samples.

py-spy sees Python threads only: CPU spent on native threads of their own (FFmpeg's
decode threads when the explorer decodes the frames it pictures) shows in no part, so
each part's CPU s is a little high by that share (the explorer's decode is measured
apart in docs/benchmarks.md).

`--imports` measures instead, in a fresh process, what importing a build's libraries
costs one after the other, in the order a build meets them (time.process_time around
each import; a library already loaded by an earlier one costs nothing again): the floor
under any rebuild, however little it does.
"""
from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

from bench.imagecode_rebuild import build_in_child
from bench.imagecode_rebuild_videos import make_videos, video_arguments
from bench.imagecode_video_parts import samples_by_part

# The innermost frame of a thread that waits (py-spy may still count it busy).
WAITS = ("wait", "select", "poll", "_wait_for_tstate_lock", "get", "acquire", "sleep", "accept")
# (part, marks): the first part with a mark in the stack wins, so the order matters:
# an import inside any phase is an import; a cache read inside the Beam run is the cache's.
PARTS = (
    ("imports (Beam, torch via apache_beam.ml, matplotlib, ...)", ("importlib._bootstrap",)),
    ("run: cache shards read and checksummed", ("_ReadShard",)),
    ("run: cache entries read by reference", ("read_entry",)),
    ("run: mining replayed from the cache", ("pipelines/imagecode/video/mining.py",
                                             "pipelines/imagecode/video/scoring.py")),
    ("run: Beam's runner and the other steps", ("Pipeline.run (",)),
    ("graph construction (Beam's transforms)", ("ImageCoDe.build (",)),
    ("models and identities (prepare)", ("ImageCoDe.prepare (",)),
    ("release: explorer, rejected frames decoded", ("explorer_frames.py",)),
    ("release: explorer, the rest", ("write_explorer",)),
    ("release: notes' diff", ("pipelines/release/check/diff.py",)),
    ("release: data card and plots", ("plots.py", "datacard.py", "describe")),
    ("release: files, manifest, checks", ("build_release (",)),
)
OTHER = "the rest (start-up, progress, logs)"


def classify(frames: list) -> str:
    """The part of one stack (outermost frame first); "" for a thread waiting."""
    inner = frames[-1].split(" (")[0] if frames else ""
    if not inner or inner.split(".")[-1] in WAITS or inner.startswith("process "):
        return ""
    for part, marks in PARTS:
        if any(mark in frame for frame in frames for mark in marks):
            return part
    return OTHER


# (what, statement): in the order a build imports them.
IMPORTS = (("apache_beam", "import apache_beam"),
           ("apache_beam.ml (RunInference: torch, scipy.optimize)", "import apache_beam.ml.inference.base"),
           ("matplotlib (the data card's plots)", "import matplotlib.figure, matplotlib.backends.backend_agg"),
           ("cv2", "import cv2"),
           ("the project's modules for a build", "import pipelines.imagecode.benchmark, "
                                                 "pipelines.build, pipelines.release.write.assemble"))
IMPORT_CHILD = """
import json, time
out = []
for name, statement in {imports!r}:
    start = time.process_time()
    exec(statement)
    out.append((name, time.process_time() - start))
print(json.dumps(out))
"""


def import_costs() -> list:
    """[(library, CPU s)] of importing a build's libraries in a fresh process."""
    proc = subprocess.run([sys.executable, "-c", IMPORT_CHILD.format(imports=IMPORTS)],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def parts_of(raw: str) -> collections.Counter:
    return samples_by_part(raw, classify)


def main() -> int:
    parser = video_arguments(__doc__)
    parser.add_argument("--rate", type=int, default=100, help="samples a second")
    parser.add_argument("--stacks", help="keep py-spy's raw stacks in this file")
    parser.add_argument("--imports", type=int, default=0, metavar="N",
                        help="only measure the imports, N times (no build)")
    args = parser.parse_args()
    if args.imports:
        runs = [import_costs() for _ in range(args.imports)]
        print("| import | CPU s, each run |\n|---|---|")
        for i, (name, _) in enumerate(runs[0]):
            print(f"| {name} | {' / '.join(f'{run[i][1]:.2f}' for run in runs)} |")
        print(f"| all | {' / '.join(f'{sum(c for _, c in run):.2f}' for run in runs)} |")
        return 0
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    manifest = make_videos(os.path.join(args.dir, f"{args.videos}x{args.seconds}s"),
                           args.videos, args.seconds)
    out = tempfile.mkdtemp(prefix="bench-rebuild-parts-")
    try:
        cold = build_in_child(manifest, out, "1.0.0", ())
        raw = os.path.join(out, "stacks.txt")
        proc = subprocess.run(
            [spy, "record", "-r", str(args.rate), "--subprocesses", "-f", "raw", "-o", raw, "--",
             sys.executable, "-m", "bench.imagecode_rebuild", "--child", manifest, out, "1.0.1"],
            capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-3000:])
        # the build's result is its last JSON line (py-spy prints lines of its own)
        result = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
        samples = parts_of(raw)
        if args.stacks:
            shutil.copyfile(raw, args.stacks)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    cpu, total = result["process_cpu_seconds"], sum(samples.values())
    print(json.dumps({"cold_cpu_seconds": round(cold["cpu_seconds"], 1),
                      "rebuild_cpu_seconds": round(cpu, 1), "samples": dict(samples)}, indent=1))
    print(f"\nsame-config rebuild: {cpu:.1f} CPU s in its process (cold build "
          f"{cold['cpu_seconds']:.1f}); shares of its busy samples ({total:,})\n")
    print("| part | share | CPU s | of cold |")
    print("|---|---|---|---|")
    for part, n in samples.most_common():
        print(f"| {part} | {n / total:.1%} | {cpu * n / total:.2f} | "
              f"{cpu * n / total / cold['cpu_seconds']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
