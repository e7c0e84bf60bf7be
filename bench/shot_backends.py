"""Precision and recall of the three shot backends on generated videos with known cuts.

    python -m bench.shot_backends [--videos 8] [--seed 0] [--tolerance 1]

Each video (transforms/video/synthetic.py, 192x144, 25 fps) is 5 to 7 shots of 16 to 45
frames cut hard from one to the next; a shot is a window moving over one of the bundled
photos (pan, zoom or still, some blurred or captioned), and one video in two puts two
shots of the same photo side by side (a cut between different views of one picture). The
true cuts are the segment boundaries. A detected cut is right when it lies within
`tolerance` frames of a true cut not matched yet. Every backend runs with its default
threshold and min_scene_len 15 (ImageCoDe's configs). Printed as a Markdown table.
"""
from __future__ import annotations

import argparse
import os
import random
import tempfile
from typing import Dict, List, Sequence, Tuple

from schemas.records import VideoRef
from transforms.video import synthetic
from transforms.video.shots import BACKENDS, iter_shots

PHOTOS = ["astronaut", "chelsea", "coffee", "rocket", "motorcycle_left", "motorcycle_right",
          "hubble", "ihc", "retina", "camera", "coins", "moon", "page", "brick", "grass"]
EFFECTS = ["pan", "zoom", "still", "pan+blur", "zoom+text", "pan"]


def make_videos(folder: str, n: int, seed: int) -> List[Tuple[str, List[int]]]:
    """(path, true cuts) of `n` generated videos."""
    rng = random.Random(seed)
    out = []
    for v in range(n):
        photos = rng.sample(PHOTOS, rng.randint(5, 7))
        if v % 2:                            # the same photo twice in a row, another view
            at = rng.randrange(1, len(photos))
            photos[at] = photos[at - 1]
        segments = [(p, rng.randint(16, 45), rng.choice(EFFECTS)) for p in photos]
        if v % 2:
            motions = ["pan", "zoom", "still"]
            previous = segments[at - 1][2].split("+")[0]
            segments[at] = (segments[at][0], segments[at][1],
                            next(m for m in motions if m != previous))
        path = os.path.join(folder, f"video{v}.mp4")
        out.append((path, synthetic.make_video(path, segments, size=(192, 144))))
    return out


def detected_cuts(path: str, backend: str) -> List[int]:
    video = VideoRef(path=path, source="bench", video_id=os.path.basename(path), split="train")
    return [s.start_frame for s in iter_shots(video, backend=backend)][1:]


def match(truth: Sequence[int], found: Sequence[int], tolerance: int) -> int:
    """True positives: found cuts within `tolerance` of a true cut, each true cut used once."""
    free = list(truth)
    hits = 0
    for cut in found:
        near = [t for t in free if abs(t - cut) <= tolerance]
        if near:
            free.remove(min(near, key=lambda t: abs(t - cut)))
            hits += 1
    return hits


def measure(videos, tolerance: int) -> Dict[str, dict]:
    results = {}
    for backend in BACKENDS:
        tp = fp = fn = 0
        for path, truth in videos:
            found = detected_cuts(path, backend)
            hits = match(truth, found, tolerance)
            tp, fp, fn = tp + hits, fp + len(found) - hits, fn + len(truth) - hits
        results[backend] = {"true_cuts": tp + fn, "found": tp + fp, "tp": tp,
                            "precision": tp / (tp + fp) if tp + fp else 1.0,
                            "recall": tp / (tp + fn) if tp + fn else 1.0}
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        videos = make_videos(folder, args.videos, args.seed)
        results = measure(videos, args.tolerance)
    print(f"{len(videos)} videos, {sum(len(t) for _, t in videos)} true cuts, "
          f"tolerance {args.tolerance} frame(s)\n")
    print("| backend | cuts found | right | precision | recall |")
    print("|---|---|---|---|---|")
    for backend, r in results.items():
        print(f"| {backend} | {r['found']} | {r['tp']} | {r['precision']:.3f} | {r['recall']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
