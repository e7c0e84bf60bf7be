"""F16: what an FG release writes (Chen et al., SIGIR '23; the public layout of the
release in ../realdata/fg/).

    parquet/ + tfrecord/ captions       one row per target image and caption position
                         similar_sets   one row per target: S_t with its scores (F5)
                         pool           the new pool (F6), originals first
    compat/Annotations/<MSCOCO|Flickr30K>_FG_ann.json   image id -> 5 captions, normalised as
                                        the public release is (captions.normalise_caption)
    compat/Images/<MSCOCO|Flickr30K>_FG_img_filenames.npy  the new pool's file names (the
                                        public repository's names)
    review/review_sheet.jsonl           the sheet a correction round starts from (F15)
    merge_training/pairs.jsonl          F12's <d'_c, d'_g> -> sentence pairs (train GPT-2 on them)
"""
from __future__ import annotations

import json
import os
from typing import Dict, List

import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from pipelines.fg.records import Caption, SimilarSet
from schemas.columns import described
from transforms.core.precision import rounded
from transforms.core.stage import StageFn

COMPAT_PREFIX = {"mscoco": "MSCOCO", "flickr30k": "Flickr30K"}
CAPTIONS, SIMILAR_SETS, POOL = "captions", "similar_sets", "pool"
NAN = float("nan")

# Every table leads with its row id (its declared key, pipelines/fg/pipeline.py
# released_tables) and has the house's `split` and `source` columns (the release counts rows by them): FG is a
# test benchmark, so split is "test"; source is the configuration.
SPLIT = "test"
_SPLIT_SOURCE = [("split", pa.string()), ("source", pa.string())]

_CONFIGURATION = "the configuration: mscoco (MSCOCO-FG) or flickr30k (Flickr30K-FG)"

CAPTION_SCHEMA = described(pa.schema([
    ("caption_id", pa.string()), ("image_id", pa.string()), ("caption_index", pa.int64()), ("original", pa.string()),
    ("renovated", pa.string()), ("changed", pa.int64()), ("coarse", pa.int64()),
    ("own_rank", pa.int64()), ("template", pa.int64()), ("noun", pa.string()),
    ("detail", pa.string()), ("clipscore_before", pa.float64()), ("clipscore_after", pa.float64()),
    ("corrected", pa.int64()),
] + _SPLIT_SOURCE), {
    "caption_id": "the caption's id: <image_id>#<position>",
    "image_id": "the test image the caption describes",
    "caption_index": "the caption's position among the image's 5 (0-4, as in the annotation file)",
    "original": "the caption as the old benchmark has it",
    "renovated": "the caption as this release has it: the merged finer-grained sentence when "
                 "one was picked (§3.2.3), a human correction (§3.2.4), else the original",
    "changed": "1 when renovated differs from original",
    "coarse": "1 when the caption is coarse-grained: its own image is not ranked first among "
              "the pool by the caption (§3.2.1)",
    "own_rank": "the rank of the caption's own image for it (1 = first); 0 when not ranked",
    "template": "the Table 1 prompt template (1-5) of the picked detail; 0 when none",
    "noun": "the noun the picked detail is about; empty when none",
    "detail": "the generated detail d_g that was merged; empty when none",
    "clipscore_before": "the CLIPScore of the original caption with its image",
    "clipscore_after": "the CLIPScore of the renovated caption with its image",
    "corrected": "1 when a human correction replaced the model's text (§3.2.4)",
    "split": "test: FG is a test benchmark",
    "source": _CONFIGURATION,
})
SIMILAR_SCHEMA = described(pa.schema([
    ("target", pa.string()), ("members", pa.list_(pa.string())),
    ("image_scores", pa.list_(pa.float64())), ("text_scores", pa.list_(pa.float64())),
    ("sources", pa.list_(pa.string())),
] + _SPLIT_SOURCE), {
    "target": "the test image the set is for",
    "members": "the set S_t: the target, then its similar images (image ids of the pool)",
    "image_scores": "each member's cosine to the target by image->image search; NaN when "
                    "image search did not find it",
    "text_scores": "each member's best cosine to the target's captions by text->image search; "
                   "NaN when text search did not find it",
    "sources": "why each member is there: target, image (image->image) or text (text->image)",
    "split": "test: FG is a test benchmark",
    "source": _CONFIGURATION,
})
POOL_SCHEMA = described(pa.schema([
    ("image_id", pa.string()), ("position", pa.int64()), ("file_name", pa.string()),
    ("path", pa.string()), ("original", pa.int64()),
] + _SPLIT_SOURCE), {
    "image_id": "the image's id",
    "position": "the image's place in the new pool (compat/Images/*_FG_img_filenames.npy), 0 first",
    "file_name": "the image's file name, as the public file names list holds it",
    "path": "the image file the build read, relative to the input root (BUILD.json "
            "input_root)",
    "original": "1 for an image of the old test set, 0 for one added from the pool (§3.1.3)",
    "split": "test: FG is a test benchmark",
    "source": _CONFIGURATION,
}, input_paths=("path",))


def annotation_path(configuration: str) -> str:
    return f"compat/Annotations/{COMPAT_PREFIX[configuration]}_FG_ann.json"


def filenames_path(configuration: str) -> str:
    """The public repository's name (Images/MSCOCO_FG_img_filenames.npy,
    Images/Flickr30K_FG_img_filenames.npy)."""
    return f"compat/Images/{COMPAT_PREFIX[configuration]}_FG_img_filenames.npy"


def with_split(configuration: str):
    """row function -> the same with split and source set."""
    def wrap(to_row):
        return lambda item: {"split": SPLIT, "source": configuration, **to_row(item)}
    return wrap


def similar_row(s: SimilarSet) -> dict:
    def score(x):   # ranked by the exact cosine, published rounded (transforms/core/precision.py)
        return NAN if x is None else rounded(x)
    return {"target": s.target, "members": [m.image_id for m in s.members],
            "image_scores": [score(m.image_score) for m in s.members],
            "text_scores": [score(m.text_score) for m in s.members],
            "sources": [m.source for m in s.members]}


def pool_row(row: dict) -> dict:
    return {"position": row["position"], "image_id": row["image_id"],
            "file_name": FileSystems.split(row["path"])[1], "path": row["path"],
            "original": int(row["original"])}


class AssembleCaptions(StageFn):
    """(caption key, {"caption": [Caption], "rank": [(rank, coarse)], "pick": [Candidate],
    "correction": [text]}) -> the caption's release row. Stage "release", level "caption"."""
    stage, level = "release", "caption"

    def judge(self, keyed):
        key, groups = keyed
        caption: Caption = groups["caption"][0]
        rank, coarse = groups["rank"][0] if groups["rank"] else (0, False)
        pick = groups["pick"][0] if groups["pick"] else None
        correction = groups["correction"][0] if groups["correction"] else None
        renovated = correction if correction is not None else (pick.merged if pick else caption.text)
        yield {"caption_id": key, "image_id": caption.image_id, "caption_index": caption.index,
               "original": caption.text, "renovated": renovated,
               "changed": int(renovated != caption.text), "coarse": int(coarse),
               "own_rank": int(rank), "template": pick.template if pick else 0,
               "noun": pick.noun if pick else "", "detail": pick.detail if pick else "",
               "clipscore_before": rounded(caption.score),
               "clipscore_after": rounded(pick.merged_score if pick else caption.score),
               "corrected": int(correction is not None)}


def annotations(rows: List[dict], order: List[str], keep: str, html_escape: bool) -> Dict[str, List[str]]:
    """{image id: the 5 released captions in position order, normalised as the public
    release is}, images in the captions input's order (compat.py: the public files keep
    the source's order)."""
    from pipelines.fg.captions import normalise_caption
    by_image: Dict[str, Dict[int, str]] = {}
    for row in rows:
        by_image.setdefault(row["image_id"], {})[row["caption_index"]] = row["renovated"]
    return {image: [normalise_caption(text, keep=keep, html_escape=html_escape)
                    for _, text in sorted(by_image[image].items())]
            for image in order if image in by_image}


def write_bytes(path: str, data: bytes, mime: str = "application/octet-stream") -> str:
    with FileSystems.create(path, mime_type=mime) as f:
        f.write(data)
    return path


def write_compat(rows: List[dict], pool: List[dict], staging: str, configuration: str,
                 order: List[str], keep: str, html_escape: bool) -> str:
    """Both public files (pipelines/fg/compat.py), each written once by one worker; the
    staging folder is local (compat.py writes with the file system's own calls)."""
    from pipelines.fg.compat import write_annotations, write_image_filenames
    for relative in (annotation_path(configuration), filenames_path(configuration)):
        os.makedirs(os.path.dirname(os.path.join(staging, relative)), exist_ok=True)
    write_annotations(os.path.join(staging, annotation_path(configuration)),
                      annotations(rows, order, keep, html_escape))
    names = [FileSystems.split(r["path"])[1] for r in sorted(pool, key=lambda r: r["position"])]
    write_image_filenames(os.path.join(staging, filenames_path(configuration)), names)
    return staging


def write_json_lines(path: str, rows: List[dict]) -> str:
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    with FileSystems.create(path, mime_type="application/jsonl") as f:
        f.write(text.encode("utf-8"))
    return path
