"""ImageCoDe's collection (Krojer et al. 2022, §3.1-§4) as a Beam pipeline.

    videos -> shots -> CLIP embeddings -> one video per decoded content
           -> greedy sets (lazy BRISQUE / OCR) -> sampling                             (§3.1)
    images -> byte dedupe -> CLIP embeddings -> one image per decoded content
           -> sampled queries + 9 exact nearest neighbours                              (§3.1)
    sets -> describer tasks -> descriptions -> retriever tasks -> keep rule               (§3.2-3.3)
         -> release: tables, compat/ (public image sets + annotation files), rejects,
            statistics and plots (§4), manifest, data card

Run:  python -m pipelines imagecode build --config paper \
          --set inputs.videos=videos.jsonl --output out --version 1.0.0 [Beam options]
"""
from __future__ import annotations

import logging
from typing import Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.crowd.agreement import ComputeAgreement, WorkerPools
from pipelines.imagecode.crowd.records import (DESCRIBE_TASKS, RETRIEVE_TASKS, AnnotationSet,
                                               DescribeTask, RetrieveTask, describe_row_labels,
                                               retrieve_row_labels)
from pipelines.imagecode.crowd.rounds import (DESCRIBE_LABELSTUDIO, JUDGED, RETRIEVE_LABELSTUDIO,
                                              ApplyKeepRule, MakeDescribeTasks, MakeRetrieveTasks,
                                              ReadDescriptions, ReadRetrievals, WriteTasks, task_row)
from pipelines.imagecode.crowd.worker_pages import write_worker_pages
from pipelines.imagecode.leakage import CheckLeakage
from pipelines.imagecode.params import (CrowdParams, ImageCodeRules, StaticParams, StatsParams,
                                        VideoParams, crowd_params, leakage_params, static_params,
                                        stats_params, video_params)
from pipelines.imagecode.release import (VIDEO_SETS, DescriptionRows, PublishCompatImages,
                                         WriteFrameSets, WritePublicAnnotations)
from pipelines.imagecode.set_stats import WithinSetDistanceStats
from pipelines.imagecode.static.release import PublishStaticSets
from pipelines.imagecode.static.sets import BuildStaticSets
from pipelines.imagecode.tables import DESCRIPTION_SCHEMA, STATIC_SET_SCHEMA
from pipelines.imagecode.video.content import OnePlanPerContent
from pipelines.imagecode.video.plans import PlanVideos, StoreNewFrames, StoreNewScores
from pipelines.imagecode.video.sampling import SampleSetsPerSource
from pipelines.imagecode.video.scoring import BRISQUE_SCORES, NEW_FRAMES, NEW_SCORES, MineFrameSets
from pipelines.release.write import assemble as release
from pipelines.release.write.manifest import read_stats
from pipelines.release.write.tables import Table
from schemas.layout import work_dir
from transforms.cache.read_through import WRITTEN
from transforms.cache.store import relative_cache_path
from transforms.core.histograms import HistogramFn
from transforms.core.stage import MAIN, REJECTS
from transforms.crowd.labelstudio import LABELSTUDIO_DIR, WriteLabelStudioRound
from transforms.crowd.pages import PAGES_DIR
from transforms.crowd.shown import ReadTaskViews
from transforms.image.collection import HashAndDedupe, ReadImageCollection
from transforms.image.content import OneImagePerContent
from transforms.image.embed import EmbedImages
from transforms.image.embed_cache import EmbedImagesCached
from transforms.io.release import WriteRejects, WriteReport, WriteTable
from transforms.text.stats import LanguageStatsPerSplit
from transforms.video.manifest import ReadVideoManifest

BENCHMARK = "imagecode"
STATIC_SETS = "static_sets"
BRISQUE_BINS = (0.0, 1.3, 65)  # BRISQUE/100 from 0 to 1.3 in steps of 0.02 (data card plot)
DESCRIPTIONS = "descriptions"
CROWD_DIR = "crowd"   # <release>/crowd/: the exported task files of both rounds
log = logging.getLogger("pipelines.imagecode.pipeline")


def build_pipeline(p: beam.Pipeline, cfg: ImageCodeConfig, rules: ImageCodeRules,
                   staging_dir: str, cache_root: Optional[str] = None) -> None:
    """Wire the stages; reads like §3.1-§3.3. Each part gets its settings from params.py
    (nothing here reads the config); the encoder and quality gate are `rules` (built
    once, params.build_rules). Writes into `staging_dir`; reuses and adds cached results
    under `cache_root` (None: no cache)."""
    run_id = f"{BENCHMARK}-{FileSystems.split(staging_dir.rstrip('/'))[1].rsplit('-', 1)[-1]}"
    videos, video_sets, rejects, cache_files = _video_sets(
        p, video_params(cfg), rules, staging_dir, cache_root, run_id)
    static_rows, static_rejects, static_files = _static_sets(
        p, static_params(cfg), rules, staging_dir, cache_root, run_id)
    rejects += static_rejects
    if cache_root:
        _ = ((cache_files + static_files) | "Cache files written" >> beam.Flatten()
             | "Relative cache files" >> beam.Map(lambda path: relative_cache_path(cache_root, path))
             | "Write cache files" >> WriteReport(staging_dir, "cache_files"))

    annotation_sets = (
        (video_sets | "Video sets for the rounds" >> beam.Map(AnnotationSet.from_frame_set),
         static_rows | "Static sets for the rounds" >> beam.Map(AnnotationSet.from_static_row))
        | "Sets for the rounds" >> beam.Flatten())
    stats = stats_params(cfg)
    rejects += _crowd_rounds(p, crowd_params(cfg), stats, staging_dir, annotation_sets)

    distances = (
        (video_sets | "Video distances" >> beam.Map(lambda s: (s.source, s.distance_mean)),
         static_rows | "Static distances" >> beam.Map(lambda r: (r["source"], r["distance_mean"])))
        | "All distances" >> beam.Flatten())
    _ = (distances | "Within-set distances" >> WithinSetDistanceStats(stats.static_sources)
         | "Write distance stats" >> WriteReport(staging_dir, "set_distances"))
    _ = ({"video_sets": video_sets, "videos": videos[MAIN], "video_rejects": videos[REJECTS],
          "static_rows": static_rows}
         | "Leakage" >> CheckLeakage() | "Write leakage" >> WriteReport(staging_dir, "leakage"))
    _ = (rejects | "All rejects" >> beam.Flatten() | "Write rejects" >> WriteRejects(staging_dir))


def _video_sets(p, v: VideoParams, rules: ImageCodeRules, staging_dir: str,
                cache_root: Optional[str], run_id: str):
    """§3.1 Video Frames: shots, CLIP embeddings, greedy sets with lazy quality filters.
    Returns {MAIN: the videos mined (with their frame digests), REJECTS: the manifest's
    rejects and the duplicates found by their frames}, the released sets, all rejects and
    the cache files."""
    listed = p | "Read manifest" >> ReadVideoManifest(v.videos)
    cache = rules.video_cache_spec(cache_root, run_id, v.jpeg_quality) if cache_root else None
    plans = listed[MAIN] | "Shots and embeddings" >> PlanVideos(
        **v.plan_settings(rules.encoder, FileSystems.join(work_dir(staging_dir), "embeddings")),
        cache=cache)
    # the same frames in other bytes (one video muxed two ways) are known only now
    unique = plans[MAIN] | "One video per decoded content" >> OnePlanPerContent()
    videos = {MAIN: unique[MAIN] | "Mined videos" >> beam.Map(lambda plan: plan.video),
              REJECTS: (listed[REJECTS], unique[REJECTS]) | "Video line rejects" >> beam.Flatten()}
    mined = unique[MAIN] | "Mine frame sets" >> MineFrameSets(
        **v.mine_settings(rules.quality, work_dir(staging_dir)))
    cache_files = []
    if cache:
        cache_files = [plans[WRITTEN],
                       mined[NEW_SCORES] | "Store new scores" >> StoreNewScores(cache),
                       mined[NEW_FRAMES] | "Store new frame images" >> StoreNewFrames(cache)]
    _ = (mined[BRISQUE_SCORES]
         | "BRISQUE distribution" >> beam.CombineGlobally(HistogramFn(*BRISQUE_BINS))
         | "Write BRISQUE distribution" >> WriteReport(staging_dir, "brisque"))
    sampled = mined[MAIN] | "Sample per source" >> SampleSetsPerSource(
        seed=v.sampling.seed, quotas=v.sampling.quotas, default=v.sampling.default)
    released = sampled[MAIN] | "Publish images" >> PublishCompatImages(staging_dir)
    _ = released | "Write video sets" >> WriteFrameSets(staging_dir)
    return (videos, released, [listed[REJECTS], plans[REJECTS], unique[REJECTS], mined[REJECTS],
                               sampled[REJECTS]], cache_files)


def _static_sets(p, s: StaticParams, rules: ImageCodeRules, staging_dir: str,
                 cache_root: Optional[str], run_id: str):
    """§3.1 Static Pictures: every image embedded, sampled queries, their 9 nearest."""
    if not s.images:
        return p | "No static sets" >> beam.Create([]), [], []
    images = p | "Read images" >> ReadImageCollection(s.images)
    unique = images[MAIN] | "Drop duplicate images" >> HashAndDedupe(s.max_pixels)
    cache_files = []
    if cache_root:
        embedded = unique[MAIN] | "Embed images (cached)" >> EmbedImagesCached(
            rules.encoder, rules.encoder_fingerprint, cache_root, run_id, s.max_pixels)
        cache_files = [embedded[WRITTEN]]
    else:
        embedded = unique[MAIN] | "Embed images" >> EmbedImages(rules.encoder, s.max_pixels)
    # the same pixels in other bytes (a PNG of a JPEG's pixels) are known once decoded
    distinct = embedded[MAIN] | "One image per decoded content" >> OneImagePerContent()
    sets = distinct[MAIN] | "Nearest neighbours" >> BuildStaticSets(
        **s.sets_settings(FileSystems.join(staging_dir, ".vectors")))
    rows = ((sets[MAIN], distinct[MAIN]) | "Publish static sets" >> PublishStaticSets(
        staging_dir, s.source, s.jpeg_quality, s.max_pixels))
    _ = rows | "Write static sets" >> WriteTable(staging_dir, STATIC_SETS, STATIC_SET_SCHEMA,
                                                 lambda row: row)
    return rows, [images[REJECTS], unique[REJECTS], embedded[REJECTS], distinct[REJECTS],
                  sets[REJECTS]], cache_files


def _crowd_rounds(p, c: CrowdParams, stats: StatsParams, staging_dir: str, sets) -> list:
    """§3.2 describer tasks -> descriptions -> §3.3 retriever tasks -> the keep rule. Each
    answer is read against the task as this build shows it (crowd/rounds.py)."""
    crowd = FileSystems.join(staging_dir, CROWD_DIR)
    tasks = sets | "Describer tasks" >> MakeDescribeTasks(c.seed, c.targets_per_set)
    _ = tasks[MAIN] | "Export describer tasks" >> WriteTasks(
        FileSystems.join(crowd, DESCRIBE_TASKS), DescribeTask)
    _ = (tasks[MAIN] | "Describe rows for Label Studio" >> beam.Map(lambda t: (t.task_id, task_row(t)))
         | "Label Studio describe" >> WriteLabelStudioRound(
             FileSystems.join(crowd, LABELSTUDIO_DIR), "describe", DESCRIBE_LABELSTUDIO,
             c.image_base_url))
    rejects = [tasks[REJECTS]]
    pages = FileSystems.join(crowd, PAGES_DIR)
    if not c.descriptions:
        write_worker_pages(pages, c.image_base_url, tasks[MAIN])
        return rejects
    described = p | "Read descriptions" >> ReadDescriptions(
        c.descriptions, sets, tasks[MAIN],
        _earlier_tasks(p, c.descriptions_tasks_release, DESCRIBE_TASKS, describe_row_labels))
    retrieve_tasks = described[MAIN] | "Retriever tasks" >> MakeRetrieveTasks(c.seed, sets)
    _ = retrieve_tasks[MAIN] | "Export retriever tasks" >> WriteTasks(
        FileSystems.join(crowd, RETRIEVE_TASKS), RetrieveTask)
    _ = (retrieve_tasks[MAIN] | "Retrieve rows for Label Studio" >> beam.Map(lambda t: (t.task_id, task_row(t)))
         | "Label Studio retrieve" >> WriteLabelStudioRound(
             FileSystems.join(crowd, LABELSTUDIO_DIR), "retrieve", RETRIEVE_LABELSTUDIO, c.image_base_url))
    rejects += [described[REJECTS], retrieve_tasks[REJECTS]]
    write_worker_pages(pages, c.image_base_url, tasks[MAIN], retrieve_tasks[MAIN])
    if not c.retrievals:
        return rejects
    retrieved = p | "Read retrievals" >> ReadRetrievals(
        c.retrievals, sets, retrieve_tasks[MAIN],
        _earlier_tasks(p, c.retrievals_tasks_release, RETRIEVE_TASKS, retrieve_row_labels))
    judged = ({"descriptions": described[MAIN], "retrievals": retrieved[MAIN], "sets": sets}
              | "Keep rule" >> ApplyKeepRule())
    kept = judged[MAIN]
    _ = (kept | "Description rows" >> beam.ParDo(DescriptionRows())
         | "Write descriptions" >> WriteTable(staging_dir, DESCRIPTIONS, DESCRIPTION_SCHEMA,
                                              lambda row: row))
    _ = kept | "Public annotation files" >> WritePublicAnnotations(staging_dir)
    _ = (judged[JUDGED] | "Agreement" >> ComputeAgreement()
         | "Write agreement" >> WriteReport(staging_dir, "agreement"))
    _ = ({"descriptions": described[MAIN], "retrievals": retrieved[MAIN]}
         | "Worker pools" >> WorkerPools() | "Write pools" >> WriteReport(staging_dir, "worker_pools"))
    _ = (kept | "Split and text" >> beam.Map(lambda d: (d.split, d.text))
         | "Language statistics" >> LanguageStatsPerSplit(stats.parser)
         | "Write language stats" >> WriteReport(staging_dir, "language"))
    return rejects + [retrieved[REJECTS], judged[REJECTS]]


def crowd_task_file(release: str, name: str) -> str:
    """A release's exported task file: <release>/crowd/<name>.jsonl."""
    return FileSystems.join(release, CROWD_DIR, f"{name}.jsonl")


def _earlier_tasks(p, release: Optional[str], name: str, labels_of):
    """(task id, TaskView) of the task file `name` of an earlier release (route 2 of
    transforms/crowd/shown.py), or None when no release is named."""
    if not release:
        return None
    return p | f"Tasks of {name} as exported" >> ReadTaskViews(
        [crowd_task_file(release, name)], "task_id", labels_of)


# What one stage passes on, the next must take in (checked before a release is written).
STAGE_LINKS = (
    ("manifest", "line.out", "shots", "video.in"),
    ("shots", "frame.out", "embed", "frame.in"),
    ("shots", "video.out", "video_content", "video.in"),
    ("shots", "shot.out", "video_content", "shot.in"),
    ("shots", "frame.out", "video_content", "frame.in"),
    ("video_content", "shot.out", "mining", "shot.in"),
    ("video_content", "frame.out", "mining", "frame.in"),
    ("mining", "set.out", "sampling", "set.in"),
    ("mining", "frame.out", "sampling", "frame.in"),
)


def check_split_conflicts(cfg: ImageCodeConfig, staging_dir: str) -> None:
    """With `leakage.on_conflict: fail`, a manifest that lists one video content (bytes or
    decoded frames) in two splits stops the build before anything is published. Judged
    after the run, on the leakage report it wrote, so the decision is the same on every
    runner."""
    leakage = leakage_params(cfg)
    if leakage.on_conflict != "fail":
        return
    report = (read_stats(staging_dir, "leakage") or [{}])[0]
    n = report.get("video_split_conflicts_rejected", 0)
    if n:
        examples = "; ".join(report.get("video_split_conflict_examples", []))
        raise release.ReleaseError(
            f"leakage.on_conflict is 'fail' and {n} line(s) of {leakage.videos} list a video "
            f"whose content an earlier line lists in another split: {examples}. Fix the "
            "manifest, or set leakage.on_conflict=reject to keep the first line of each.")


def released_tables(cfg: ImageCodeConfig) -> dict:
    """Tables this config writes, each with the counter its row count must equal and the
    column that identifies a row (a set by its name, a description by its id)."""
    tables = {VIDEO_SETS: Table("sampling", "set.out", key="set_name")}
    if static_params(cfg).images:
        tables[STATIC_SETS] = Table("static_sets", "set.out", key="set_name")
    if crowd_params(cfg).retrievals:
        tables[DESCRIPTIONS] = Table("retrieve", "description.out", key="description_id")
    return tables
