"""How each benchmark's build grows with its input: CPU seconds and peak memory at three
sizes a factor 4 apart, the growth exponents between them, and a projection to the
published sizes (issues 27 and 28).

    make bench-scale                              # every series, full sizes (long: ~1-2 h on 2 cores)
    BENCH_SIZES=small make bench-scale            # sizes / 8 (or less), for development
    python -m bench.bench_scale [--sizes full|small] [--only vsr,knn] [--code DIR]
                                [--work DIR] [--json FILE]

Inputs are generated once under --work (default build/bench-scale/inputs), seeded, in
each benchmark's real input format (bench/scale_inputs.py). Each build runs as its own
process (`python -m pipelines <benchmark> build ... --quiet --no-explorer`, Beam's
in-process runner) and is measured from outside:
  cpu_s     user + system seconds of the process and every descendant (getrusage of the
            waited children: workers included)
  peak_gb   the largest sum of the resident set sizes of the process tree, sampled every
            0.1 s (psutil; pages shared between processes count once per process)
  wall_s    for reference only: the machine may be shared
Growth exponent between sizes s1 < s2: log(m2 / m1) / log(s2 / s1) (1 = linear). The
projection to a published size P from the two largest sizes s2 < s3 is the larger of the
straight line through them (a fixed start-up plus a cost per item) and the power law
m(s3) * (P / s3)^e with their exponent (growth faster than linear). `--code DIR` runs the builds of another checkout (the generators stay this
one's), to measure code before a change the same way.

Series (size = what grows):
  vsr         COCO instances file, images (about 7 instances each)  -> COCO train2017, 118,287 images
  nlvr2       public JSON Lines (copies of dev + test1, renumbered) -> NLVR2 train, 86,373 lines
  bd2bb       crowd tuples (+ captions, CoNLL-U parses)             -> the ~18,000 tuples collected (§3.1)
  fg          pool images, 1,000 targets (small: 125; stand-in encoder) -> the 123k-image pool
  fg-targets  targets, pool of 20,000 images (small: 2,500)         -> MSCOCO's 5,000 targets
  knn         ImageCoDe static sets over 512-d vectors (clip-retrieval layout),
              4,845 sets (§3.1); full sizes add 1,000,000           -> Open Images, 1.74M images
  videos      ImageCoDe video stage, short synthetic videos (3 shots of ~30 frames)
                                                                    -> 1,000 videos
Not a test: figures depend on the machine and its load; docs/benchmarks.md quotes runs.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence
from pipelines.release.write.manifest import remove_tree   # a published release is read-only

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = os.path.abspath(__file__)


@dataclass
class Series:
    name: str
    unit: str
    full: Sequence[int]
    small: Sequence[int]
    published: int
    published_label: str
    command: Callable[[str, int, str, bool], List[str]] = field(repr=False)   # (work, size, out, small) -> argv


def _build(benchmark: str, config: str, sets: Sequence[str], out: str) -> List[str]:
    args = [sys.executable, "-m", "pipelines", benchmark, "build", "--config", config]
    for s in sets:
        args += ["--set", s]
    return args + ["--output", out, "--version", "1.0.0", "--quiet", "--no-explorer"]


def _vsr(work: str, size: int, out: str, small: bool = False) -> List[str]:
    from bench.scale_inputs import coco_instances
    path = coco_instances(os.path.join(work, f"vsr-{size}"), size)
    return _build("vsr", "paper", [f"inputs.coco=[{path}]"], out)


def _nlvr2(work: str, size: int, out: str, small: bool = False) -> List[str]:
    from bench.scale_inputs import nlvr2_lines
    path = nlvr2_lines(os.path.join(work, f"nlvr2-{size}"), size)
    return _build("nlvr2", "public", [f"inputs.public=[{path}]"], out)


def _bd2bb(work: str, size: int, out: str, small: bool = False) -> List[str]:
    from bench.scale_inputs import bd2bb_inputs
    paths = bd2bb_inputs(os.path.join(work, f"bd2bb-{size}"), size)
    return _build("bd2bb", "paper", [f"inputs.tuples={paths['tuples']}", f"inputs.captions={paths['captions']}",
                                     f"inputs.parses={paths['parses']}", "embed.device=cpu"], out)


def _fg(targets: int, pool: int, work: str, out: str) -> List[str]:
    from bench.scale_inputs import fg_inputs
    paths = fg_inputs(os.path.join(work, "fg"), targets, pool)
    return _build("fg", "sample", [f"inputs.captions={paths['captions']}", f"inputs.images={paths['images']}",
                                   f"inputs.pool={paths['pool']}", "similar.shards=8", "coarse.pool=new"], out)


def _knn(work: str, size: int, out: str, small: bool = False) -> List[str]:
    from bench.scale_inputs import embedding_folder
    folder = embedding_folder(os.path.join(work, f"vectors-{size}"), size)
    return [sys.executable, CHILD, "--knn-child", folder, out]


def _videos(work: str, size: int, out: str, small: bool = False) -> List[str]:
    from bench.scale_inputs import video_manifest
    manifest = video_manifest(os.path.join(work, "videos"), size)
    return _build("imagecode", "sample", [f"inputs.videos={manifest}", "static.images=null",
                                          "crowd.descriptions=null", "crowd.retrievals=null"], out)


SERIES = [
    Series("vsr", "images", (5_000, 20_000, 80_000), (1_000, 4_000, 16_000), 118_287,
           "COCO train2017 (118,287 images, 860,001 instances)", _vsr),
    Series("nlvr2", "lines", (3_500, 14_000, 56_000), (875, 3_500, 14_000), 86_373,
           "NLVR2 train (86,373 lines)", _nlvr2),
    Series("bd2bb", "tuples", (5_000, 20_000, 80_000), (500, 2_000, 8_000), 18_000,
           "BD2BB's ~18,000 collected tuples (§3.1)", _bd2bb),
    Series("fg", "pool images", (10_000, 40_000, 160_000), (1_000, 4_000, 16_000), 123_000,
           "a 123k-image pool (COCO unlabeled2017)", lambda w, s, o, small: _fg(125 if small else 1000, s, w, o)),
    Series("fg-targets", "targets", (1_000, 5_000), (125, 625), 5_000,
           "MSCOCO-FG's 5,000 targets", lambda w, s, o, small: _fg(s, 2_500 if small else 20_000, w, o)),
    Series("knn", "vectors", (10_000, 40_000, 160_000, 1_000_000), (2_500, 10_000, 40_000), 1_740_000,
           "Open Images (1.74M images)", _knn),
    Series("videos", "videos", (2, 8, 32), (1, 2, 4), 1_000, "1,000 videos", _videos),
]


# --------------------------------------------------------------------------- measuring

def measure(argv: List[str], cwd: str, env: dict, log: str) -> dict:
    """Run argv to its end; its CPU seconds (tree), peak RSS (tree, GB), wall seconds."""
    import psutil
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=err, stderr=subprocess.STDOUT)
        peak = [0]
        done = threading.Event()

        def sample():
            root = psutil.Process(proc.pid)
            while not done.is_set():
                try:
                    total = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
                    peak[0] = max(peak[0], total)
                except psutil.Error:
                    pass
                done.wait(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        rc = proc.wait()
        done.set()
        sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        raise RuntimeError(f"{' '.join(argv[:6])} ... exited {rc}; see {log}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": round(cpu, 1), "peak_gb": round(peak[0] / 2 ** 30, 3),
            "wall_s": round(time.perf_counter() - start, 1)}


def exponent(s1: float, m1: float, s2: float, m2: float) -> Optional[float]:
    if min(s1, m1, s2, m2) <= 0 or s1 == s2:
        return None
    return round(math.log(m2 / m1) / math.log(s2 / s1), 2)


def summarise(series: Series, runs: List[dict]) -> dict:
    runs = sorted(runs, key=lambda r: r["size"])
    growth = [{"from": a["size"], "to": b["size"],
               "cpu": exponent(a["size"], a["cpu_s"], b["size"], b["cpu_s"]),
               "memory": exponent(a["size"], a["peak_gb"], b["size"], b["peak_gb"])}
              for a, b in zip(runs, runs[1:])]
    out = {"series": series.name, "unit": series.unit, "runs": runs, "growth": growth}
    if len(runs) >= 2:
        a, b, g = runs[-2], runs[-1], growth[-1]
        inside = [(x, y) for x, y in zip(runs, runs[1:]) if x["size"] <= series.published <= y["size"]]
        if inside:   # between two measured sizes: the power law through them
            a, b = inside[0]
            g = {key: exponent(a["size"], a[key], b["size"], b[key]) for key in ("cpu_s", "peak_gb")}
            g = {"cpu": g["cpu_s"], "memory": g["peak_gb"]}

        def project(key: str, e: Optional[float]) -> float:
            if inside:
                return b[key] * (series.published / b["size"]) ** (e if e is not None else 1.0)
            line = b[key] + (b[key] - a[key]) / (b["size"] - a["size"]) * (series.published - b["size"])
            power = b[key] * (series.published / b["size"]) ** (e if e is not None else 1.0)
            return max(line, power, 0.0)
        out["projection"] = {"to": series.published_label, "size": series.published,
                             "cpu_s": round(project("cpu_s", g["cpu"])),
                             "peak_gb": round(project("peak_gb", g["memory"]), 2)}
    sixteen = [r for r in runs if r["size"] == 16 * runs[0]["size"]]
    if sixteen:
        out["memory_at_16x_over_smallest"] = round(sixteen[0]["peak_gb"] / runs[0]["peak_gb"], 2)
    return out


def markdown(results: List[dict]) -> str:
    lines = ["| series | size | CPU s | peak GB | wall s | CPU exponent | memory exponent |",
             "|---|---|---|---|---|---|---|"]
    for res in results:
        exps = {g["to"]: g for g in res["growth"]}
        for run in res["runs"]:
            g = exps.get(run["size"], {})
            lines.append(f"| {res['series']} | {run['size']:,} {res['unit']} | {run['cpu_s']:,} | "
                         f"{run['peak_gb']} | {run['wall_s']:,} | {g.get('cpu', '')} | {g.get('memory', '')} |")
    lines += ["", "| series | projection to | CPU s | peak GB | memory at 16x / smallest |", "|---|---|---|---|---|"]
    for res in results:
        p = res.get("projection")
        if p:
            lines.append(f"| {res['series']} | {p['to']} | {p['cpu_s']:,} | {p['peak_gb']} | "
                         f"{res.get('memory_at_16x_over_smallest', '')} |")
    return "\n".join(lines)


def run(sizes: str, only: Sequence[str], code: str, work: str, json_path: Optional[str],
        inputs: Optional[str] = None, largest: Optional[int] = None) -> List[dict]:
    env = {**os.environ, "PYTHONPATH": code, "PYTHONHASHSEED": "0"}
    inputs = inputs or os.path.join(work, "inputs")
    results = []
    for series in SERIES:
        if only and series.name not in only:
            continue
        runs = []
        for size in (series.full if sizes == "full" else series.small):
            if largest and size > largest:
                continue
            out = os.path.join(work, "out", f"{series.name}-{size}")
            remove_tree(out, ignore_errors=True)
            argv = series.command(inputs, size, out, sizes == "small")   # generates the inputs first (not measured)
            log = os.path.join(work, "logs", f"{series.name}-{size}.log")
            os.makedirs(os.path.dirname(log), exist_ok=True)
            figures = measure(argv, code, env, log)
            runs.append({"size": size, **figures})
            print(f"{series.name} {size:,} {series.unit}: {figures}", flush=True)
            remove_tree(out, ignore_errors=True)
        results.append(summarise(series, runs))
        if json_path:
            with open(json_path, "w") as f:
                json.dump({"sizes": sizes, "code": code, "results": results}, f, indent=1)
    print(markdown(results))
    return results


# --------------------------------------------------------------------------- the kNN build

def knn_child(folder: str, out: str, sets: int = 4845, k: int = 9, shards: int = 8) -> None:
    """ImageCoDe's static sets (pipelines/imagecode/static/sets.py) over an embedding
    folder: `sets` sampled queries, their k nearest; the sets written as JSON Lines."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.beam_runners import runner_for
    from pipelines.imagecode.static.sets import BuildStaticSets
    from schemas.records import ImageEmbedding
    from transforms.core.stage import MAIN
    from transforms.vectors.embedding_folders import ReadEmbeddingFolder

    os.makedirs(out, exist_ok=True)
    options = PipelineOptions([])
    with beam.Pipeline(runner=runner_for(options), options=options) as p:
        built = (p | ReadEmbeddingFolder(folder, "img", "image_path")
                 | beam.MapTuple(lambda path, v: ImageEmbedding(path.rsplit("/", 1)[-1][:-4], path, "", v))
                 | BuildStaticSets(seed=0, n_sets=sets, k=k, num_shards=shards,
                                   split_ratios={"train": 0.8, "valid": 0.1, "test": 0.1}))
        main = built[MAIN] if hasattr(built, "__getitem__") else built
        _ = (main | beam.Map(lambda s: json.dumps({"set": s.set_name, "ids": s.image_ids}))
             | beam.io.WriteToText(os.path.join(out, "sets"), ".jsonl"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", choices=("full", "small"), default=os.environ.get("BENCH_SIZES") or "full")
    parser.add_argument("--only", default="", help="comma-separated series names")
    parser.add_argument("--code", default=ROOT, help="the checkout whose pipelines are built")
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench-scale"))
    parser.add_argument("--inputs", default=None, help="where the generated inputs are kept (default WORK/inputs)")
    parser.add_argument("--largest", type=int, default=None, help="skip sizes above this")
    parser.add_argument("--json", default=None, help="write the figures here (default WORK/results-SIZES.json)")
    parser.add_argument("--knn-child", nargs=2, metavar=("FOLDER", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.knn_child:
        knn_child(*args.knn_child)
        return
    sys.path.insert(0, ROOT)
    only = [s for s in args.only.split(",") if s]
    unknown = set(only) - {s.name for s in SERIES}
    if unknown:
        parser.error(f"unknown series {sorted(unknown)}; known: {', '.join(s.name for s in SERIES)}")
    os.makedirs(args.work, exist_ok=True)
    run(args.sizes, only, os.path.abspath(args.code), os.path.abspath(args.work),
        args.json or os.path.join(args.work, f"results-{args.sizes}.json"),
        os.path.abspath(args.inputs) if args.inputs else None, args.largest)


if __name__ == "__main__":
    main()
