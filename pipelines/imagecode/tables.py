"""Arrow schemas of ImageCoDe's release tables, and the mapping from records to rows.

One row per FrameSet in `parquet/video_sets/` (and one tf.train.Example with the same
fields in `tfrecord/`), per static set and per kept description. `staged_images` is a
working path and never reaches the release; `image_paths` are relative to the version
folder.
"""
from __future__ import annotations

import pyarrow as pa

from pipelines.imagecode.records import FrameSet

FRAMESET_SCHEMA = pa.schema([
    pa.field("set_name", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("video_id", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("shot_index", pa.int64(), nullable=False),
    pa.field("set_index", pa.int64(), nullable=False),
    pa.field("frame_indices", pa.list_(pa.int64()), nullable=False),
    pa.field("image_paths", pa.list_(pa.string()), nullable=False),
    pa.field("brisque_scores", pa.list_(pa.float64()), nullable=False),
    pa.field("text_chars", pa.list_(pa.int64()), nullable=False),
    pa.field("distance_min", pa.float64(), nullable=False),
    pa.field("distance_mean", pa.float64(), nullable=False),
    pa.field("distance_max", pa.float64(), nullable=False),
])


def frameset_to_row(fs: FrameSet) -> dict:
    """A FrameSet as a plain-Python row of FRAMESET_SCHEMA (numpy scalars converted)."""
    n = len(fs.frame_indices)
    per_frame = {"image_paths": fs.image_paths, "brisque_scores": fs.brisque_scores,
                 "text_chars": fs.text_chars}
    for name, values in per_frame.items():
        if len(values) != n:  # a row whose lists disagree cannot be read frame by frame
            raise ValueError(f"{fs.set_name}: {len(values)} {name} for {n} frames")
    return {
        "set_name": str(fs.set_name),
        "source": str(fs.source),
        "video_id": str(fs.video_id),
        "split": str(fs.split),
        "shot_index": int(fs.shot_index),
        "set_index": int(fs.set_index),
        "frame_indices": [int(i) for i in fs.frame_indices],
        "image_paths": [str(p) for p in fs.image_paths],
        "brisque_scores": [float(s) for s in fs.brisque_scores],
        "text_chars": [int(c) for c in fs.text_chars],
        "distance_min": float(fs.distance_min),
        "distance_mean": float(fs.distance_mean),
        "distance_max": float(fs.distance_max),
    }


STATIC_SET_SCHEMA = pa.schema([
    pa.field("set_name", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("image_ids", pa.list_(pa.string()), nullable=False),      # query first
    pa.field("image_paths", pa.list_(pa.string()), nullable=False),    # compat/image-sets/...
    pa.field("source_paths", pa.list_(pa.string()), nullable=False),   # where they came from
    pa.field("distances", pa.list_(pa.float64()), nullable=False),     # to the query
    pa.field("distance_mean", pa.float64(), nullable=False),           # all pairs in the set
])


DESCRIPTION_SCHEMA = pa.schema([
    pa.field("description_id", pa.string(), nullable=False),
    pa.field("set_name", pa.string(), nullable=False),
    pa.field("target_index", pa.int64(), nullable=False),
    pa.field("description", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("is_video", pa.bool_(), nullable=False),
    pa.field("image_paths", pa.list_(pa.string()), nullable=False),    # canonical order
    pa.field("retrievers", pa.int64(), nullable=False),
    pa.field("correct", pa.int64(), nullable=False),
    pa.field("tokens", pa.int64(), nullable=False),                    # spaCy rule-based tokens
])


def description_to_row(kept, tokens: int) -> dict:
    """A KeptDescription (pipelines.imagecode.rounds_schema) as a row of DESCRIPTION_SCHEMA."""
    return {
        "description_id": str(kept.description_id), "set_name": str(kept.set_name),
        "target_index": int(kept.target_index), "description": str(kept.text),
        "split": str(kept.split), "source": str(kept.source), "is_video": bool(kept.is_video),
        "image_paths": [str(p) for p in kept.image_paths], "retrievers": int(kept.retrievers),
        "correct": int(kept.correct), "tokens": int(tokens),
    }
