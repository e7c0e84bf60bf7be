"""ImageCoDe video-frame sets (Krojer et al. 2022, §3.1 "Video Frames") as a Beam pipeline.

    manifest -> shots -> CLIP embeddings -> greedy sets (lazy BRISQUE / OCR) -> sampling
             -> release (parquet, tfrecord, compat image-sets, rejects, manifest, data card)

Run:  python -m pipelines.imagecode --config pipelines/configs/imagecode.yaml \
          --set inputs.videos=videos.jsonl --output out --version 1.0.0 [Beam options]
"""
from __future__ import annotations

import functools
import logging
import sys
from typing import List, Optional

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import cli, preflight, release
from pipelines import imagecode_datacard as datacard
from pipelines.config import ConfigError, load_config
from pipelines.imagecode_config import ImageCodeConfig
from pipelines.runners import runner_for
from schemas.manifest import work_dir
from transforms.embed import EmbedShots, EncoderSpec, encoder_identity
from transforms.inputs import ReadVideoManifest
from transforms.mining import MineFrameSets
from transforms.quality import build_quality_gate
from transforms.release import PublishCompatImages, WriteFrameSets, WriteRejects
from transforms.sampling import SampleSetsPerSource
from transforms.shots import SplitIntoShots
from transforms.stage import MAIN, REJECTS

BENCHMARK = "imagecode"
log = logging.getLogger("pipelines.imagecode")


def encoder_spec(cfg: ImageCodeConfig) -> EncoderSpec:
    e = cfg.embed
    return EncoderSpec(kind=e.kind, model_name=e.model_name, pretrained=e.pretrained,
                       checkpoint=e.checkpoint, batch_size=e.batch_size, device=e.device,
                       thumbnail_size=e.thumbnail_size)


def quality_gate_factory(cfg: ImageCodeConfig):
    """A picklable zero-argument factory; the gate (and its models) is built on the worker."""
    q = cfg.quality
    return functools.partial(
        build_quality_gate,
        brisque_enabled=q.brisque.enabled, max_brisque=q.brisque.max_score,
        brisque_model_dir=q.brisque.model_dir,
        ocr_enabled=q.ocr.enabled, max_text_chars=q.ocr.max_text_chars,
        min_confidence=q.ocr.min_confidence, lang=q.ocr.lang)


def build_pipeline(p: beam.Pipeline, cfg: ImageCodeConfig, staging_dir: str) -> None:
    """Wire the stages; reads like §3.1. Writes into `staging_dir`."""
    videos = p | "Read manifest" >> ReadVideoManifest(cfg.inputs.videos)
    shots = (
        videos[MAIN]
        | "Spread videos" >> beam.Reshuffle()
        | "Split into shots" >> SplitIntoShots(
            backend=cfg.shots.backend,
            threshold=(cfg.shots.pyscenedetect_threshold if cfg.shots.backend == "pyscenedetect"
                       else cfg.shots.ffmpeg_threshold),
            min_scene_len=cfg.shots.min_scene_len, stride=cfg.decode.stride,
            max_side=cfg.decode.max_side or None, min_frames=cfg.mining.set_size))
    embedded = shots[MAIN] | "Embed frames" >> EmbedShots(encoder_spec(cfg))
    mined = embedded | "Mine frame sets" >> MineFrameSets(
        threshold=cfg.mining.distance_threshold, set_size=cfg.mining.set_size,
        gate_factory=quality_gate_factory(cfg), staging_dir=work_dir(staging_dir),
        jpeg_quality=cfg.release.jpeg_quality)
    sampled = mined[MAIN] | "Sample per source" >> SampleSetsPerSource(
        seed=cfg.seed, quotas=cfg.sampling.sets_per_source, default=cfg.sampling.default)

    released = sampled[MAIN] | "Publish images" >> PublishCompatImages(staging_dir)
    _ = released | "Write sets" >> WriteFrameSets(staging_dir)
    _ = ((videos[REJECTS], shots[REJECTS], mined[REJECTS], sampled[REJECTS])
         | "All rejects" >> beam.Flatten()
         | "Write rejects" >> WriteRejects(staging_dir))


# What one stage passes on, the next must take in (checked before a release is written).
STAGE_LINKS = (
    ("manifest", "line.out", "shots", "video.in"),
    ("shots", "frame.out", "embed", "frame.embedded"),
    ("shots", "shot.out", "mining", "shot.in"),
    ("shots", "frame.out", "mining", "frame.in"),
    ("mining", "set.out", "sampling", "set.in"),
    ("mining", "frame.out", "sampling", "frame.in"),
)


def run(argv: Optional[List[str]] = None) -> str:
    """Build one release; returns its folder."""
    args, beam_args = cli.parse_args(argv, description=__doc__)
    cfg = load_config(args.config, args.set, ImageCodeConfig)
    preflight.check_imagecode(cfg)
    spec = encoder_spec(cfg)
    options = PipelineOptions(beam_args)

    def execute(staging_dir: str):
        pipeline = beam.Pipeline(runner=runner_for(options), options=options)
        build_pipeline(pipeline, cfg, staging_dir)
        result = pipeline.run()
        result.wait_until_finish()
        return result

    return release.build_release(
        benchmark=BENCHMARK, out=args.output, version=args.version, config=cfg,
        execute=execute, models={"image_encoder": encoder_identity(spec)},
        inputs={"videos": cfg.inputs.videos}, links=STAGE_LINKS,
        released_stage=("sampling", "set.out"),
        describe=lambda facts: datacard.describe(cfg, facts))


def main(argv: Optional[List[str]] = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        run(argv)
    except (ConfigError, preflight.PreflightError, release.ReleaseError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
