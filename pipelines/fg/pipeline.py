"""MSCOCO-FG / Flickr30K-FG (Chen et al., "Rethinking Benchmarks for Cross-modal
Image-text Retrieval", SIGIR '23, §3) as a Beam pipeline: one pipeline, two
configurations (`configuration: mscoco | flickr30k`).

    captions + target images + candidate pool -> embeddings                F0-F2   §3.1.1-§3.1.2(1)
      -> the pool once per decoded content, without the targets' copies
      -> image->image top-k' and text->image top-k'' (exact sharded kNN)   F3-F4   §3.1.2(2)
      -> S_t: the target plus 9 (similar.merge_rule)                       F5      §3.1.2(3)
      -> the new pool: union of all S_t, originals first                  F6      §3.1.3
    every caption -> coarse if its own image is not ranked first           F7      §3.2.1
      -> nouns -> Table 1 prompts -> details d_g -> CLIPScore filter       F8-F11  §3.2.2
      -> merge <d_c, d_g> -> CLIPScore filter -> best pick                 F13-F14 §3.2.3
    fine-grained captions -> merge-training pairs                          F12     §3.2.3(1)
    renovated captions -> review sheet; corrections applied                F15     §3.2.4
    -> release: tables, compat/ (public layout), rejects, data card        F16

Run:  python -m pipelines fg build --config paper --set inputs.captions=... \
          --set inputs.images=... --set inputs.pool=... --output out --version 1.0.0
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.fg import reasons
from pipelines.fg.captions import CAPTIONS_PER_IMAGE
from pipelines.fg.coarse import FINE, DetectCoarse
from pipelines.fg.config import FgConfig
from pipelines.fg.corrections import ApplyCorrections, correction_view, review_sheet
from pipelines.fg.filetexts import JoinFileTexts
from pipelines.fg.generators import Gpt2Merger, ModelDetails, RuleMerger, StandinDetails
from pipelines.fg.inputs import (AttachPrecomputed, DropCopiesOfTargets, DropTargetsFromPool,
                                 JoinTargets, read_image_vectors, read_text_vectors)
from pipelines.fg.records import Caption
from pipelines.fg.release import write_compat, write_json_lines
from pipelines.fg.renovate import (ClipScoreFilter, EncodeCaptions, GenerateDetails, MakePrompts,
                                   MergeSentences, PickBest, SplitFineGrained)
from pipelines.fg.similar import BuildSimilarSets, NewPool, pool_rows, targets_sharing_pixels
from pipelines.fg.tables import (CAPTION_SCHEMA, CAPTIONS, POOL, POOL_SCHEMA, SIMILAR_SCHEMA,
                                 SIMILAR_SETS, AssembleCaptions, pool_row, similar_row, with_split)
from pipelines.fg.tagger import NONE
from pipelines.release.write.tables import Table
from schemas.records import ImageEmbedding
from transforms.core.stage import MAIN, REJECTS, stage_pardo
from transforms.crowd.shown import FINGERPRINT
from transforms.image.collection import ReadImageCollection
from transforms.image.content import OneImagePerContent
from transforms.image.embed import EmbedImages
from transforms.io.release import WriteRejects, WriteTable
from transforms.vectors.knn import SearchVectorFiles
from transforms.vectors.vector_files import ReadRows, RemoveFolderWhenDone, WriteVectorFiles

BATCH = 256          # captions / candidates per text-encoder call
COARSE_BATCH = 2048  # captions per pass over the retrieval pool's files (F7)


def _batched(pcoll, label: str, size: int = BATCH):
    return pcoll | label >> beam.BatchElements(min_batch_size=1, max_batch_size=size)


def build_pipeline(p: beam.Pipeline, cfg: FgConfig, captions: Dict[str, List[str]], staging_dir: str) -> None:
    """Wire the stages; reads like §3. Writes into `staging_dir`."""
    rejects = []
    spec = cfg.embed.spec()
    rows_of = with_split(cfg.configuration)
    sim = cfg.similar
    scratch = FileSystems.join(staging_dir, ".vectors")   # vector files, removed when searched

    # F0-F2: targets and pool, embedded
    targets_read = p | "Read target images" >> ReadImageCollection(cfg.inputs.images)
    pool_read = p | "Read pool images" >> ReadImageCollection(cfg.inputs.pool)
    candidates = pool_read[MAIN] | "Targets join the pool once" >> stage_pardo(DropTargetsFromPool(list(captions)))
    if cfg.inputs.image_embeddings:   # precomputed CLIP vectors (clip-retrieval layout)
        vectors = read_image_vectors(p, cfg.inputs.image_embeddings, cfg.embed.image_id_column,
                                     FileSystems.join(scratch, "precomputed"), sim.shards)
        target_images = targets_read[MAIN] | "Target vectors (precomputed)" >> AttachPrecomputed(vectors, sim.shards)
        pool_images = candidates[MAIN] | "Pool vectors (precomputed)" >> AttachPrecomputed(vectors, sim.shards)
    else:
        target_images = targets_read[MAIN] | "Embed target images" >> EmbedImages(spec)
        pool_images = candidates[MAIN] | "Embed pool images" >> EmbedImages(spec)
    rejects += [targets_read[REJECTS], pool_read[REJECTS], candidates[REJECTS],
                target_images[REJECTS], pool_images[REJECTS]]
    joined = ({"captions": p | "Captions" >> beam.Create(sorted(captions.items())),
               "image": target_images[MAIN] | "Key target images" >> beam.Map(lambda e: (e.image_id, e))}
              | "Captions with images" >> beam.CoGroupByKey()
              | "Targets" >> stage_pardo(JoinTargets()))
    targets = joined[MAIN]
    rejects.append(joined[REJECTS])
    target_vectors = targets | "Target vectors" >> beam.Map(lambda t: ImageEmbedding(
        t.image_id, t.path, "", t.embedding, t.pixels_sha256))
    # duplicates by decoded pixels: one pool image per content, and none with a target's.
    # The pool's vectors go to files where they are made; only the images' ids, paths and
    # digests go through the dedupe's grouping steps (the in-process runner holds a
    # grouping step's whole input), and the candidate pool's files are the embedded
    # files less the duplicates' rows.
    embedded_files = pool_images[MAIN] | "Pool vectors to files" >> WriteVectorFiles(
        FileSystems.join(scratch, "embedded"), sim.shards)
    pool_refs = pool_images[MAIN] | "Pool without vectors" >> beam.Map(dataclasses.replace, embedding=None)
    distinct = pool_refs | "One pool image per content" >> OneImagePerContent()
    pool_kept = distinct[MAIN] | "Pool without targets' copies" >> DropCopiesOfTargets(target_vectors)
    rejects += [distinct[REJECTS], pool_kept[REJECTS]]
    dropped = ((distinct[REJECTS], pool_kept[REJECTS]) | "Pool images dropped" >> beam.Flatten()
               | "Dropped ids" >> beam.Map(lambda r: r.item_id))
    images_side = beam.pvalue.AsDict(target_vectors | "Image by id" >> beam.Map(lambda e: (e.image_id, e.embedding)))

    captions_in = targets | "Captions of targets" >> beam.FlatMap(
        lambda t: [Caption(t.image_id, i, text) for i, text in enumerate(t.captions)])
    precomputed = (beam.pvalue.AsDict(read_text_vectors(p, cfg.inputs.text_embeddings, cfg.embed.text_column))
                   if cfg.inputs.text_embeddings else None)
    encoded = (_batched(captions_in, "Batch captions")
               | "Encode captions" >> stage_pardo(EncodeCaptions(spec, cfg.filters.prefix, cfg.filters.weight),
                                                  images_side, precomputed))
    all_captions = encoded[MAIN]

    # F3-F6: similar sets and the new pool. The candidate pool (the targets and the kept
    # pool images) is written to files per shard (transforms/vectors/vector_files.py):
    # both searches and the coarse test read them a file at a time, so no worker ever
    # holds the pool. Only file references are flattened: a flatten of vectors would be
    # held whole. The files live in the staging folder until the last reader is done.
    pool_folder = FileSystems.join(scratch, "pool")
    pool_files = ((target_vectors | "Targets to files" >> WriteVectorFiles(pool_folder, sim.shards),
                   embedded_files | "Kept pool vectors" >> ReadRows(without=beam.pvalue.AsList(dropped))
                   | "Kept pool to files" >> WriteVectorFiles(pool_folder, sim.shards))
                  | "Candidate pool" >> beam.Flatten())
    by_image = ((target_vectors, pool_files)
                | "Image to image top-k'" >> SearchVectorFiles(
                    sim.image_k, FileSystems.join(scratch, "image-queries"), exclude_self=True,
                    spec=sim.knn.spec()))
    text_queries = all_captions | "Text queries" >> beam.Map(
        lambda c: ImageEmbedding(c.key, "", "", c.embedding))
    by_text = ((text_queries, pool_files)
               | "Text to image top-k''" >> SearchVectorFiles(
                   sim.text_k, FileSystems.join(scratch, "text-queries"), exclude_self=False,
                   spec=sim.knn.spec())
               | "Per target" >> beam.MapTuple(lambda key, found: (key.rpartition("#")[0],
                                                                   (int(key.rpartition("#")[2]), found))))
    sets = ({"target": targets | "Key targets" >> beam.Map(lambda t: (t.image_id, t)),
             "image": by_image, "text": by_text}
            | "Group searches" >> beam.CoGroupByKey()
            | "Similar sets" >> stage_pardo(BuildSimilarSets(sim.set_size, sim.merge_rule),
                                            beam.pvalue.AsDict(targets_sharing_pixels(target_vectors))))
    rejects.append(sets[REJECTS])
    _ = sets[MAIN] | "Write similar sets" >> WriteTable(staging_dir, SIMILAR_SETS, SIMILAR_SCHEMA, rows_of(similar_row))
    pooled = sets[MAIN] | "New pool" >> NewPool()
    rejects.append(pooled[REJECTS])
    pool_list = (pooled[MAIN] | "Gather pool" >> beam.combiners.ToList()
                 | "Pool order" >> beam.Map(pool_rows))
    _ = (pool_list | "Pool rows" >> beam.FlatMap(lambda rows: rows)
         | "Write pool" >> WriteTable(staging_dir, POOL, POOL_SCHEMA, rows_of(pool_row)))

    # F7: coarse-grained texts, against the old test images or the new pool
    if cfg.coarse.pool == "old":
        retrieval = target_vectors
    else:
        pool_ids = pooled[MAIN] | "Pool ids" >> beam.Map(lambda tm: tm[1].image_id)
        retrieval = pool_files | "New pool vectors" >> ReadRows(beam.pvalue.AsList(pool_ids))
    retrieval_files = retrieval | "Retrieval pool to files" >> WriteVectorFiles(FileSystems.join(scratch, "coarse"))
    coarse = (_batched(all_captions, "Batch for coarse test", COARSE_BATCH)
              | "Coarse texts" >> stage_pardo(DetectCoarse(), beam.pvalue.AsList(retrieval_files), images_side,
                                              outputs=(FINE,)))
    rejects.append(coarse[REJECTS])
    _ = ((by_image, by_text, coarse[MAIN], coarse[FINE]) | "Searched" >> beam.Flatten()
         | "Remove vector files" >> RemoveFolderWhenDone(scratch))

    # F8-F11: nouns, prompts, details, first filter
    prompted = (_batched(coarse[MAIN], "Batch for prompts")
                | "Prompts" >> stage_pardo(MakePrompts(cfg.nouns.tagger, cfg.prompts.templates)))
    rejects.append(prompted[REJECTS])
    if cfg.details.kind == "file":
        detailed = prompted[MAIN] | "Details from file" >> JoinFileTexts(
            "details", cfg.inputs.details, "detail", reasons.NO_DETAIL)
    else:
        paths = beam.pvalue.AsDict(targets | "Target paths" >> beam.Map(lambda t: (t.image_id, t.path)))
        detailed = prompted[MAIN] | "Generate details" >> stage_pardo(
            GenerateDetails(_detail_generator(cfg)), paths)
    rejects.append(detailed[REJECTS])
    filtered = (_batched(detailed[MAIN], "Batch details")
                | "CLIPScore filter 1" >> stage_pardo(ClipScoreFilter(
                    "filter1", spec, cfg.filters.prefix, cfg.filters.weight, cfg.filters.ties_pass,
                    merged=False), images_side))
    rejects.append(filtered[REJECTS])

    # F13-F14: merge, second filter, best pick
    if cfg.merge.kind == "file":
        merged = filtered[MAIN] | "Merged from file" >> JoinFileTexts(
            "merge", cfg.inputs.merged, "merged", reasons.MERGE_FAILED)
    else:
        merged = filtered[MAIN] | "Merge" >> stage_pardo(MergeSentences(_merger(cfg)))
    rejects.append(merged[REJECTS])
    surviving = (_batched(merged[MAIN], "Batch merged")
                 | "CLIPScore filter 2" >> stage_pardo(ClipScoreFilter(
                     "filter2", spec, cfg.filters.prefix, cfg.filters.weight, cfg.filters.ties_pass,
                     merged=True), images_side))
    rejects.append(surviving[REJECTS])
    picked = ({"caption": coarse[MAIN] | "Key coarse" >> beam.Map(lambda c: (c.key, c)),
               "candidates": surviving[MAIN] | "Key candidates" >> beam.Map(lambda c: (c.key, c))}
              | "Candidates per caption" >> beam.CoGroupByKey()
              | "Best pick" >> stage_pardo(PickBest()))
    rejects.append(picked[REJECTS])

    # F12: merge-training pairs from the fine-grained captions
    if cfg.nouns.tagger != NONE:
        pairs = coarse[FINE] | "Split fine-grained" >> stage_pardo(SplitFineGrained(cfg.nouns.tagger))
        rejects.append(pairs[REJECTS])
        path = FileSystems.join(staging_dir, "merge_training", "pairs.jsonl")
        _ = (pairs[MAIN] | "Gather pairs" >> beam.combiners.ToList()
             | "Write pairs" >> beam.Map(lambda rows: write_json_lines(
                 path, sorted(rows, key=lambda r: (r["image_id"], r["caption_index"])))))

    # F15: review sheet and corrections
    renovated = picked[MAIN] | "Renovated" >> beam.Map(lambda c: (c.key, c.merged))
    seed, size = cfg.seed, cfg.corrections.review_size
    sheet = FileSystems.join(staging_dir, "review", "review_sheet.jsonl")
    _ = (picked[MAIN] | "Sheet rows" >> beam.Map(lambda c: {
            "image_id": c.image_id, "caption_index": c.index, "original": c.original,
            "model_text": c.merged, "human_text": c.merged,
            FINGERPRINT: correction_view(c.merged).fingerprint})
         | "Gather sheet" >> beam.combiners.ToList()
         | "Write review sheet" >> beam.Map(lambda rows: write_json_lines(sheet, review_sheet(rows, seed, size))))
    corrections = p | "No corrections" >> beam.Create([])
    if cfg.inputs.corrections:
        applied = renovated | "Corrections" >> ApplyCorrections(cfg.inputs.corrections)
        corrections = applied[MAIN]
        rejects.append(applied[REJECTS])

    # F16: the release
    ranks = ((coarse[MAIN] | "Coarse ranks" >> beam.Map(lambda c: (c.key, (c.rank, True))),
              coarse[FINE] | "Fine ranks" >> beam.Map(lambda c: (c.key, (c.rank, False))))
             | "All ranks" >> beam.Flatten())
    rows = ({"caption": all_captions | "Key captions" >> beam.Map(lambda c: (c.key, c)),
             "rank": ranks, "pick": picked[MAIN] | "Key picks" >> beam.Map(lambda c: (c.key, c)),
             "correction": corrections}
            | "Caption outcomes" >> beam.CoGroupByKey()
            | "Release rows" >> stage_pardo(AssembleCaptions()))
    _ = rows[MAIN] | "Write captions" >> WriteTable(staging_dir, CAPTIONS, CAPTION_SCHEMA, rows_of(dict))
    configuration, keep, escape = cfg.configuration, cfg.release.keep, cfg.release.html_escape
    order = list(captions)   # the public files keep the source's image order (compat.py)
    _ = (rows[MAIN] | "Gather captions" >> beam.combiners.ToList()
         | "Write compat" >> beam.Map(lambda all_rows, pool: write_compat(
             all_rows, pool, staging_dir, configuration, order, keep, escape),
             pool=beam.pvalue.AsSingleton(pool_list)))
    rejects.append(rows[REJECTS])
    _ = rejects | "All rejects" >> beam.Flatten() | "Write rejects" >> WriteRejects(staging_dir)


def _detail_generator(cfg: FgConfig):
    """A picklable factory: the generator is built on the worker."""
    kind, model_dir, tokens = cfg.details.kind, cfg.details.model_dir, cfg.details.max_new_tokens
    return (lambda: StandinDetails()) if kind == "standin" else (lambda: ModelDetails(model_dir, tokens))


def _merger(cfg: FgConfig):
    kind, model_dir, tokens = cfg.merge.kind, cfg.merge.model_dir, cfg.merge.max_new_tokens
    return (lambda: RuleMerger()) if kind == "rules" else (lambda: Gpt2Merger(model_dir, tokens))


def stage_links(cfg: FgConfig) -> list:
    """What one stage passes on, the next takes in (checked before a release is written)."""
    links = [("inputs", "target.out", "similar_sets", "target.in"),
             ("image_content", "image.out", "target_copies", "image.in"),
             ("embed_text", "caption.out", "coarse", "caption.in"),
             ("embed_text", "caption.out", "release", "caption.in"),
             ("coarse", "caption.out", "prompts", "caption.in"),
             ("coarse", "caption.out", "pick", "caption.in"),
             ("prompts", "candidate.out", "details", "candidate.in"),
             ("details", "candidate.out", "filter1", "candidate.in"),
             ("filter1", "candidate.out", "merge", "candidate.in"),
             ("merge", "candidate.out", "filter2", "candidate.in"),
             ("filter2", "candidate.out", "pick", "candidate.in")]
    return links


def check_counts(stages: dict, cfg: FgConfig) -> list:
    """Every target's captions were embedded: embed_text caption.in = n x inputs target.out."""
    n = CAPTIONS_PER_IMAGE
    targets = stages.get("inputs", {}).get("target.out", 0)
    captions = stages.get("embed_text", {}).get("caption.in", 0)
    if captions != n * targets:
        return [f"embed_text.caption.in = {captions} but inputs gave {targets} targets x {n} captions"]
    return []


def released_tables(cfg: FgConfig) -> dict:
    """Tables this config writes: a caption by its id, a similar set by its target image,
    a pool image by its id."""
    return {CAPTIONS: Table("release", "caption.out", key="caption_id"),
            SIMILAR_SETS: Table("similar_sets", "target.out", key="target"),
            POOL: Table("pool", "member.out", key="image_id")}

