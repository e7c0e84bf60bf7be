"""Arrow schemas of ImageCoDe's release tables, and the mapping from records to rows.

One row per FrameSet in `parquet/video_sets/` (and one tf.train.Example with the same
fields in `tfrecord/`), per static set and per kept description. `staged_images` is a
working path and never reaches the release; `image_paths` are relative to the version
folder, and the release embeds those images beside them (`images`, schemas/columns.py);
a static set's `source_paths` are relative to the input root BUILD.json records.
Every column is described where it is declared (the dataset card and the TFRecord
feature spec show these descriptions).
"""
from __future__ import annotations

import pyarrow as pa

from pipelines.imagecode.records import FrameSet
from schemas.columns import described

_SET_NAME = ("the set's name in the public grammar: <source>-video<video id>-shot<k>_<j> for a "
             "video set, open-images-<n>_<query image id> for a static set; its images are "
             "compat/image-sets/<set_name>/")
_IMAGE_PATHS = ("the set's images (10 in the paper), paths relative to the release folder "
                "(compat/image-sets/<set_name>/img<n>.jpg)")

FRAMESET_SCHEMA = described(pa.schema([
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
]), {
    "set_name": _SET_NAME,
    "source": "the video collection the set comes from (msr-vtt, video-storytelling, youcook)",
    "video_id": "the video's id in its collection, as the video manifest gives it",
    "split": "train, valid or test: the split of the set's video (§3.1)",
    "shot_index": "the shot of the video the frames come from, 0 first (TransNetV2 shots)",
    "set_index": "the set's number among the sets mined from that shot, 0 first",
    "frame_indices": "the frame number in the video of each image, in order (img<n>.jpg names n)",
    "image_paths": _IMAGE_PATHS + ", in frame order",
    "brisque_scores": "each frame's BRISQUE score divided by 100 (lower is sharper; §3.1 filter)",
    "text_chars": "the characters Tesseract OCR read in each frame (§3.1 text filter)",
    "distance_min": "the smallest Euclidean distance between two frames of the set (CLIP space)",
    "distance_mean": "the mean pairwise Euclidean distance between the set's frames",
    "distance_max": "the largest Euclidean distance between two frames of the set",
}, images={"image_paths": "images"})


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


STATIC_SET_SCHEMA = described(pa.schema([
    pa.field("set_name", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("image_ids", pa.list_(pa.string()), nullable=False),      # query first
    pa.field("image_paths", pa.list_(pa.string()), nullable=False),    # compat/image-sets/...
    pa.field("source_paths", pa.list_(pa.string()), nullable=False),   # where they came from
    pa.field("distances", pa.list_(pa.float64()), nullable=False),     # to the query
    pa.field("distance_mean", pa.float64(), nullable=False),           # all pairs in the set
]), {
    "set_name": _SET_NAME,
    "source": "the static images' collection (open-images in the paper)",
    "split": "train, valid or test, drawn for the set by a hash of the seed and its name",
    "query_id": "the image id of the sampled query image (the set's first image)",
    "image_ids": "the ids of the set's images: the query, then its nearest neighbours, "
                 "nearest first",
    "image_paths": _IMAGE_PATHS + ", in image_ids order",
    "source_paths": "the image files the set was copied from, relative to the input root "
                    "(MANIFEST.json input_root), in image_ids order",
    "distances": "each image's Euclidean distance to the query (CLIP space); the query's is 0",
    "distance_mean": "the mean pairwise Euclidean distance between the set's images",
}, images={"image_paths": "images"}, input_paths=("source_paths",))


DESCRIPTION_SCHEMA = described(pa.schema([
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
]), {
    "description_id": "the description's id, as the describe round's answers give it",
    "set_name": "the set the description was written for (a row of video_sets or static_sets)",
    "target_index": "the position in image_paths (0 first) of the image the description describes",
    "description": "the contextual description: what tells the target apart from the other images of the set",
    "split": "train, valid or test: the split of the set",
    "source": "the set's collection (msr-vtt, video-storytelling, youcook, open-images)",
    "is_video": "true for a set of video frames, false for a static set",
    "image_paths": _IMAGE_PATHS + ", in the order the target index counts",
    "retrievers": "the retrievers who tried to find the target from the description (§3.3)",
    "correct": "how many of them found it; the description is kept when enough did (§3.3)",
    "tokens": "the description's tokens by spaCy's rule-based English tokenizer (Table 4)",
}, images={"image_paths": "images"})


def description_to_row(kept, tokens: int) -> dict:
    """A KeptDescription (pipelines.imagecode.crowd.records) as a row of DESCRIPTION_SCHEMA."""
    return {
        "description_id": str(kept.description_id), "set_name": str(kept.set_name),
        "target_index": int(kept.target_index), "description": str(kept.text),
        "split": str(kept.split), "source": str(kept.source), "is_video": bool(kept.is_video),
        "image_paths": [str(p) for p in kept.image_paths], "retrievers": int(kept.retrievers),
        "correct": int(kept.correct), "tokens": int(tokens),
    }
