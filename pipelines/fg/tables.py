"""Arrow schemas of FG's release tables (Chen et al., SIGIR '23), and the mapping from
records (pipelines/fg/records.py) to rows:

    captions       one row per target image and caption position (AssembleCaptions)
    similar_sets   one row per target: S_t with its scores (F5)
    pool           the new pool (F6), originals first

Every column is described where it is declared (the dataset card and the TFRecord
feature spec show these descriptions).
"""
from __future__ import annotations

import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from pipelines.fg.records import Caption, SimilarSet
from schemas.columns import described
from transforms.core.precision import rounded
from transforms.core.stage import StageFn

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
