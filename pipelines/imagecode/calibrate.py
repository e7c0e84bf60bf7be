"""What would this threshold give? Sets per source for candidate thresholds, from cached
results only: nothing is decoded, embedded or scored, and no release is written.

    python -m pipelines imagecode calibrate --release releases/imagecode/1.0.0 \
        --param mining.distance_threshold --values 0.25,0.3,0.35,0.4 [--set KEY=VALUE] [--json]

The release's MANIFEST.json gives the resolved config and the cache it used; `--set`
changes that config first (e.g. another manifest of videos). Each video whose shot list
and frame embeddings are cached is mined again per candidate, with the BRISQUE and OCR
scores the cache holds. A frame the gate would consult but that has no cached score
(the lazy filters never saw it) is counted as passing and reported as "unscored": the
counts are exact where that column is 0. Videos without cached shots or embeddings are
listed as not counted. Only the ImageCoDe video sets have candidates so far.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from typing import Dict, List, Optional

from pipelines.cli import check_beam_options
from pipelines.config import apply_override, from_dict
from pipelines.imagecode.config import ImageCodeConfig
from transforms.core.errors import UserError
from transforms.io.paths import url_scheme

# Beam, the release readers and the miner (torch, through the quality gate) are imported
# by the functions that use them, once the command's arguments are known to be right:
# `calibrate --help` and a mistyped argument answer without them.

BENCHMARK = "imagecode"  # the only benchmark with candidates so far
# The thresholds a calibration can vary, and how each reaches the miner.
PARAMS = ("mining.distance_threshold", "quality.brisque.max_score", "quality.ocr.max_text_chars")


def load_release_config(release: str, overrides: List[str]) -> tuple:
    """(config, cache root) of a release, with `overrides` applied."""
    from pipelines.release.check.diff import load_manifest
    from pipelines.release.check.verify import load_build_record
    from pipelines.release.write.locations import resolved_config
    manifest = load_manifest(release)
    if manifest.get("benchmark") != BENCHMARK:
        raise UserError(f"calibrate knows ImageCoDe releases only, not {manifest.get('benchmark')!r}")
    # where the cache and the inputs were is the build's record (MANIFEST.json's before format 3)
    build = {**manifest, **load_build_record(release)}
    if not build.get("cache_root"):
        raise UserError(f"{release} was built without a cache: nothing to calibrate from")
    # a release holds its paths relative (pipelines/release/write/locations.py): back to this machine's
    raw = resolved_config(manifest["config"], ImageCodeConfig, build.get("input_root"), release)
    for override in overrides:
        apply_override(raw, override)
    cache_root = build["cache_root"]
    if not url_scheme(cache_root) and not os.path.isabs(cache_root):
        cache_root = os.path.normpath(os.path.join(release, cache_root))
    return from_dict(ImageCodeConfig, raw), cache_root


def parse_values(text: str) -> List[float]:
    """`--values 0.25,0.3,8`: numbers (an int where it has no point)."""
    values = []
    for item in (v.strip() for v in text.split(",") if v.strip()):
        try:
            values.append(float(item) if "." in item else int(item))
        except ValueError:
            raise UserError(f"--values: {item!r} is not a number (give e.g. 0.25,0.3)") from None
    if not values:
        raise UserError("--values: give one candidate or more, e.g. 0.25,0.3")
    return values


def candidate_runs(cfg: ImageCodeConfig, param: str, values: List[float]) -> List[dict]:
    """Miner settings per candidate: distance threshold and filter thresholds, those of
    the build (params.py) but the one varied."""
    if param not in PARAMS:
        raise UserError(f"--param must be one of {', '.join(PARAMS)}")
    from pipelines.imagecode.params import quality_rule, video_params
    threshold, max_scores = video_params(cfg).distance_threshold, quality_rule(cfg).thresholds()
    runs = []
    for value in values:
        run = {"value": value, "threshold": threshold, "max_scores": dict(max_scores)}
        if param == "mining.distance_threshold":
            run["threshold"] = value
        elif param == "quality.brisque.max_score":
            run["max_scores"]["brisque"] = value
        else:
            run["max_scores"]["ocr"] = value
        runs.append(run)
    return runs


def calibrate(cfg: ImageCodeConfig, cache_root: str, runs: List[dict],
              beam_args: Optional[List[str]] = None) -> dict:
    """{"rows": [{value, source, sets, unscored, videos}], "uncached": [video keys]}."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.beam_runners import runner_for
    from pipelines.imagecode.params import build_rules, video_params
    from pipelines.imagecode.video.content import OnePlanPerContent
    from pipelines.imagecode.video.plans import UNCACHED, LookUpCachedPlans
    from transforms.core.stage import MAIN
    from transforms.video.manifest import ReadVideoManifest

    v = video_params(cfg)   # as the build's video stages have them
    cache = build_rules(cfg).video_cache_spec(cache_root, run_id="calibrate")  # it only reads
    with tempfile.TemporaryDirectory() as tmp:
        result_path = os.path.join(tmp, "calibration.json")
        options = PipelineOptions(beam_args or [])
        with beam.Pipeline(runner=runner_for(options), options=options) as p:
            videos = p | "Read manifest" >> ReadVideoManifest(v.videos)
            looked = videos[MAIN] | "Cached plans" >> LookUpCachedPlans(
                v.shots, v.set_size, cache, v.truncation_tolerance)
            # as a build would: one video per decoded content (the cached lists know it)
            unique = looked[MAIN] | "One video per decoded content" >> OnePlanPerContent()

            def per_candidate(plan):
                # the cached embeddings, read once for every candidate
                plan = dataclasses.replace(plan, shots=plan.embedded_shots(), embeddings=None)
                for run in runs:
                    counts = sets_from_known_scores(plan, run["threshold"], v.set_size, run["max_scores"])
                    yield (run["value"], plan.video.source), (counts["sets"], counts["unscored"], 1)

            totals = (unique[MAIN] | "Mine per candidate" >> beam.FlatMap(per_candidate)
                      | "Sum" >> beam.CombinePerKey(lambda rows: tuple(map(sum, zip(*rows)))))
            uncached = looked[UNCACHED] | "Uncached keys" >> beam.Map(lambda v: ("uncached", v.key))
            rows = totals | "Rows" >> beam.MapTuple(lambda key, t: ("rows", (key, t)))
            _ = ((rows, uncached) | beam.Flatten() | beam.combiners.ToList()
                 | "Write result" >> beam.Map(_write_result, result_path))
        with open(result_path) as f:
            found = json.load(f)
    out_rows = []
    for (value, source), (sets, unscored, videos) in sorted(map(tuple, found["rows"]),
                                                            key=lambda r: (r[0][0], r[0][1])):
        quota = v.sampling.quota(source)
        out_rows.append({"value": value, "source": source, "sets": sets,
                         "kept": sets if quota is None else min(sets, quota),
                         "unscored": unscored, "videos": videos})
    return {"rows": out_rows, "uncached": sorted(found["uncached"])}


def sets_from_known_scores(plan, threshold: float, set_size: int,
                           max_scores: Dict[str, float]) -> Dict[str, int]:
    """What the miner would make of `plan` (a records.VideoPlan, its embeddings at hand)
    from its known scores alone, by the miner's rule (video/mining.py) and the gate's
    (video/quality_gate.py): {"sets": complete sets, "unscored": frames the gate
    consulted without a known score}. `max_scores` holds the thresholds of the filters
    that are on ("brisque", "ocr"; QualityRule.thresholds). An unscored frame counts as
    passing, so the answer is exact when "unscored" is 0."""
    from pipelines.imagecode.video.mining import mine_sets
    from pipelines.imagecode.video.quality_gate import QualityGate  # the gate's own rule, fed known values
    on = object()
    gate = QualityGate(on if "brisque" in max_scores else None, max_scores.get("brisque", 0.0),
                       on if "ocr" in max_scores else None, max_scores.get("ocr", 0))
    totals = {"sets": 0, "unscored": 0}
    for shot in plan.embedded_shots():
        def known(name: str, position: int, passing: float):
            value = plan.known_scores.get(name, {}).get(shot.frame_indices[position])
            if value is None:
                totals["unscored"] += 1
                return passing
            return value

        def accept(position: int) -> Optional[str]:
            return gate.judge(lambda: known("brisque", position, float("-inf")),
                              lambda: known("ocr", position, 0)).reason
        totals["sets"] += len(mine_sets(shot.embeddings, threshold, set_size, accept).sets)
    return totals


def _write_result(items, path: str) -> None:
    rows = [list(map(list, body)) for kind, body in items if kind == "rows"]
    with open(path, "w") as f:
        json.dump({"rows": [[list(k), list(t)] for k, t in rows],
                   "uncached": [body for kind, body in items if kind == "uncached"]}, f)


def render(param: str, current, result: dict) -> str:
    lines = [f"{param} (current: {current})",
             f"{'value':>10}  {'source':<20} {'videos':>6} {'sets':>6} {'kept':>6} {'unscored':>9}"]
    for r in result["rows"]:
        lines.append(f"{r['value']:>10}  {r['source']:<20} {r['videos']:>6} {r['sets']:>6} "
                     f"{r['kept']:>6} {r['unscored']:>9}")
    lines.append("kept: after sampling.sets_per_source; unscored: frames the filters would "
                 "check that have no cached score (counted as passing)")
    if result["uncached"]:
        lines.append(f"not counted ({len(result['uncached'])} videos without cached shots and "
                     f"embeddings): {', '.join(result['uncached'][:10])}")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines imagecode calibrate",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--release", required=True, help="a version folder built with the cache")
    parser.add_argument("--param", required=True, choices=PARAMS)
    parser.add_argument("--values", required=True, help="comma-separated candidates")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args, beam_args = parser.parse_known_args(argv)
    try:   # exit 2 for what the user can fix; anything else is ours (a traceback, exit 1)
        values = parse_values(args.values)
        check_beam_options(beam_args, ImageCodeConfig,
                           own_options=[o for a in parser._actions for o in a.option_strings])
        cfg, cache_root = load_release_config(args.release, args.set)
        result = calibrate(cfg, cache_root, candidate_runs(cfg, args.param, values), beam_args)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    current = {"mining.distance_threshold": cfg.mining.distance_threshold,
               "quality.brisque.max_score": cfg.quality.brisque.max_score,
               "quality.ocr.max_text_chars": cfg.quality.ocr.max_text_chars}[args.param]
    print(json.dumps(result, indent=1) if args.json else render(args.param, current, result))
    return 0

