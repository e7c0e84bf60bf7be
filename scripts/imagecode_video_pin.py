"""What ImageCoDe's video stage decided, as content digests, to show that a change of how
the stage runs (issue 28: bounded memory) changed no decision.

    .venv/bin/python scripts/imagecode_video_pin.py inputs WORK
    .venv/bin/python scripts/imagecode_video_pin.py build WORK SNAPSHOT.json
    .venv/bin/python scripts/imagecode_video_pin.py compare BEFORE.json AFTER.json

`inputs` writes, once, the videos every build reads: the embedded sample, and a mixed
manifest (bench videos with blurred and captioned shots, one video muxed three ways
across splits, a truncated download, a video whose shots are all too short, a corrupt
file). Make them once and build before and after from the same files: the encoder's
output is not promised to be byte-identical across ffmpeg builds.

`build` runs each scenario of SCENARIOS in order (cache cold, then warm, then a threshold
change that reuses part of it; filters on and off; with and without a cache) into
WORK/out, and records per release every table (row-sorted), reject, counter and compat
file (pipelines/release/check/digest.py), plus `calibrate` answered from the sample's cache.
Paths are digested relative to WORK, so two checkouts compare equal. `compare` prints
every difference and exits 1 when there is one.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run as a script: the project's packages come from this checkout

from pipelines.release.check.digest import differences, release_digest  # noqa: E402
from pipelines.release.write.manifest import remove_tree  # noqa: E402  (releases are read-only)

CONFIG = os.path.join(ROOT, "pipelines/imagecode/configs/sample.yaml")
VIDEO_ONLY = ("static.images=null", "crowd.descriptions=null", "crowd.retrievals=null")
FILTERS_OFF = ("quality.brisque.enabled=false", "quality.ocr.enabled=false")
NO_CACHE = ("cache.enabled=false",)


def _sample_inputs(work: str) -> tuple:
    folder = os.path.join(work, "inputs", "sample")
    return (f"inputs.videos={folder}/videos.jsonl", f"static.images={folder}/images.jsonl",
            f"crowd.descriptions={folder}/crowd/descriptions.csv",
            f"crowd.retrievals={folder}/crowd/retrievals.jsonl")


def _mixed_inputs(work: str) -> tuple:
    return (f"inputs.videos={os.path.join(work, 'inputs', 'mixed', 'videos.jsonl')}", *VIDEO_ONLY)


# (name, inputs, output folder, version, overrides): in order; one folder shares a cache.
SCENARIOS = (
    ("sample cold", _sample_inputs, "sample", "1.0.0", ()),
    ("sample warm", _sample_inputs, "sample", "1.0.1", ()),
    ("sample distance 0.30", _sample_inputs, "sample", "1.1.0", ("mining.distance_threshold=0.30",)),
    ("sample filters off, no cache", _sample_inputs, "sample-off", "1.0.0", FILTERS_OFF + NO_CACHE),
    ("mixed cold", _mixed_inputs, "mixed", "1.0.0", ()),
    ("mixed warm", _mixed_inputs, "mixed", "1.0.1", ()),
    ("mixed every frame scored", _mixed_inputs, "mixed", "1.2.0", ("quality.score_all_frames=true",)),
    ("mixed filters off cold", _mixed_inputs, "mixed-off", "1.0.0", FILTERS_OFF),
    ("mixed filters off warm", _mixed_inputs, "mixed-off", "1.0.1", FILTERS_OFF),
    ("mixed stride 2, no cache", _mixed_inputs, "mixed-stride", "1.0.0",
     ("decode.stride=2",) + NO_CACHE),
)


def make_inputs(work: str) -> None:
    from bench.imagecode_video import segments
    from pipelines.imagecode.sample import make_imagecode_sample
    from transforms.video import synthetic

    make_imagecode_sample(os.path.join(work, "inputs", "sample"))
    folder = os.path.join(work, "inputs", "mixed")
    if os.path.exists(os.path.join(folder, "videos.jsonl")):
        return
    os.makedirs(folder, exist_ok=True)
    at = lambda name: os.path.join(folder, name)  # noqa: E731
    synthetic.make_video(at("mixed-a.mp4"), segments(8, 40, mixed=True), size=(320, 240))
    synthetic.make_video(at("mixed-b.mp4"), segments(6, 50, mixed=True)[::-1], size=(320, 240))
    synthetic.make_video(at("faststart.mp4"), [("astronaut", 30, "pan"), ("chelsea", 30, "zoom")])
    for name, extra in (("tail.mp4", []), ("other-mux.mp4", ["-movflags", "+faststart",
                                                             "-metadata", "comment=again"])):
        subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", at("faststart.mp4"),
                        "-c", "copy", *extra, at(name)], check=True)
    synthetic.make_truncated_video(at("cut.mp4"), keep=0.6,
                                   segments=[("coffee", 48, "pan"), ("rocket", 48, "zoom")])
    synthetic.make_video(at("short.mp4"), [("hubble", 8, "still"), ("rocket", 6, "pan")])
    synthetic.make_corrupt_video(at("corrupt.mp4"))
    lines = [("mixed-a.mp4", "a", "train"), ("faststart.mp4", "first", "train"),
             ("cut.mp4", "cut", "valid"), ("mixed-b.mp4", "b", "test"),
             ("tail.mp4", "tail", "test"),            # same_content_other_split (by frames)
             ("short.mp4", "short", "valid"),         # every shot too short
             ("other-mux.mp4", "again", "train"),     # duplicate_video_content (by frames)
             ("corrupt.mp4", "corrupt", "train")]     # unreadable_video
    with open(at("videos.jsonl"), "w") as f:
        for path, video_id, split in lines:
            f.write(json.dumps({"path": path, "source": "bench", "video_id": video_id,
                                "split": split}) + "\n")


def build(work: str, snapshot: str) -> None:
    from pipelines import build as build_command
    from pipelines.imagecode import calibrate

    work = os.path.abspath(work)
    out_root = os.path.join(work, "out")
    remove_tree(out_root, ignore_errors=True)
    digests = {}
    for name, inputs, folder, version, overrides in SCENARIOS:
        sets = [arg for o in (*inputs(work), *overrides) for arg in ("--set", o)]
        release = build_command.build("imagecode", ["--config", CONFIG, "--output",
                                                    os.path.join(out_root, folder), "--version", version,
                                                    *sets])
        digests[name] = release_digest(release, root=work + "/")
        print(f"{name}: " + ", ".join(f"{t} {d['rows']}" for t, d in digests[name]["tables"].items()),
              flush=True)
    cfg, cache_root = calibrate.load_release_config(
        os.path.join(out_root, "sample", "imagecode", "1.0.0"), [])
    result = calibrate.calibrate(cfg, cache_root, calibrate.candidate_runs(
        cfg, "mining.distance_threshold", [0.25, 0.35, 0.5]))
    digests["calibrate"] = {"tables": {"result": json.loads(json.dumps(result))}}
    with open(snapshot, "w") as f:
        json.dump(digests, f, indent=1, sort_keys=True)


def compare(before: str, after: str) -> int:
    a, b = json.load(open(before)), json.load(open(after))
    problems = []
    for label in sorted(a.keys() | b.keys()):
        problems += differences(a.get(label, {}), b.get(label, {}), label=f"{label}: ")
    print("\n".join(problems) if problems else
          f"identical: every table, compat file, reject and counter of {len(a)} builds")
    return 1 if problems else 0


if __name__ == "__main__":
    verb, *args = sys.argv[1:]
    if verb == "inputs":
        make_inputs(*args)
        sys.exit(0)
    sys.exit(build(*args) or 0 if verb == "build" else compare(*args))
