"""Arrow schemas of VSR's release tables (`examples`, `image_pairs`), and the mapping from
records (pipelines/vsr/records.py) to rows. Every column is described where it is
declared (the dataset card and the TFRecord feature spec show these descriptions).
"""
from __future__ import annotations

from typing import Dict, Optional

import pyarrow as pa

from pipelines.vsr.records import ImagePair, SplitExample
from pipelines.vsr.relations import relation_category
from schemas.columns import described

_IDS = "ids are strings in every file of the release (Parquet, TFRecord, compat/)"

EXAMPLE_SCHEMA = described(pa.schema([
    pa.field("example_id", pa.string(), nullable=False),
    pa.field("image", pa.string(), nullable=False),
    pa.field("image_link", pa.string(), nullable=False),
    pa.field("caption", pa.string(), nullable=False),
    pa.field("label", pa.int64(), nullable=False),
    pa.field("relation", pa.string(), nullable=False),
    pa.field("relation_category", pa.string(), nullable=False),
    pa.field("subj", pa.string(), nullable=False),
    pa.field("obj", pa.string(), nullable=False),
    pa.field("annotator_id", pa.string(), nullable=False),
    pa.field("vote_true_validator_id", pa.list_(pa.string()), nullable=False),
    pa.field("vote_false_validator_id", pa.list_(pa.string()), nullable=False),
    pa.field("validators", pa.int64(), nullable=False),
    pa.field("agreeing", pa.int64(), nullable=False),
    pa.field("reference_frame", pa.float64()),   # null when unknown
    pa.field("split", pa.string(), nullable=False),              # random split
    pa.field("zeroshot_split", pa.string(), nullable=False),     # "" = not in the zero-shot split
    pa.field("source", pa.string(), nullable=False),             # train2017 / val2017
    pa.field("pair_id", pa.string(), nullable=False),
]), {
    "example_id": "the example's id: the first 16 hex digits of sha256(image, caption)",
    "image": "the COCO 2017 file name of the image (the images are not in the release)",
    "image_link": "the image's URL on images.cocodataset.org",
    "caption": "the caption: \"The <subj> (is) <relation> the <obj>.\"",
    "label": "1 when the caption is true of the image (the writer's label, confirmed by "
             "the validators), 0 when false",
    "relation": "the spatial relation the caption names (one of Table 1's)",
    "relation_category": "the relation's meta-category (Table 1: Adjacency, Directional, ...)",
    "subj": "the caption's subject concept (a COCO category)",
    "obj": "the caption's object concept (a COCO category)",
    "annotator_id": "the writer of the caption; " + _IDS,
    "vote_true_validator_id": "the validators who judged the caption true (§3.2), as counted; "
                              + _IDS,
    "vote_false_validator_id": "the validators who judged it false, as counted; " + _IDS,
    "validators": "the validators counted",
    "agreeing": "the validators whose judgement equals the label (the keep rule: at least 2 "
                "and at least 2/3, §4.1)",
    "reference_frame": "the reference frame the public file gives, null when it gives none",
    "split": "the random split (§3.4): train, dev or test",
    "zeroshot_split": "the concept zero-shot split (§3.4): train, dev or test; empty when the "
                      "example's two concepts fell into different parts (it is in the random "
                      "split only)",
    "source": "the COCO split of the image: train2017 or val2017",
    "pair_id": "the sampled image pair the caption was written for (image_pairs); empty for "
               "an example read from the public file",
}, class_names={"label": ("False", "True")})

PAIR_SCHEMA = described(pa.schema([
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("subj", pa.string(), nullable=False),
    pa.field("obj", pa.string(), nullable=False),
    pa.field("image_ids", pa.list_(pa.int64()), nullable=False),
    pa.field("images", pa.list_(pa.string()), nullable=False),
    pa.field("image_links", pa.list_(pa.string()), nullable=False),
    pa.field("subj_areas", pa.list_(pa.float64()), nullable=False),
    pa.field("obj_areas", pa.list_(pa.float64()), nullable=False),
    pa.field("draw", pa.int64(), nullable=False),
    pa.field("pool_size", pa.int64(), nullable=False),
    pa.field("split", pa.string(), nullable=False),     # "unsplit": pairs precede the splits
    pa.field("source", pa.string(), nullable=False),    # "+"-joined COCO splits of the images
]), {
    "pair_id": "the pair's id: a hash of its two images and two concepts",
    "subj": "the concept the writer is asked to make the subject (ENT1, §3.1)",
    "obj": "the other concept (ENT2)",
    "image_ids": "the COCO ids of the pair's two images",
    "images": "their COCO 2017 file names (the images are not in the release)",
    "image_links": "their URLs on images.cocodataset.org",
    "subj_areas": "the area of subj's one instance in each image, in pixels",
    "obj_areas": "the area of obj's one instance in each image, in pixels",
    "draw": "the number of the draw that sampled the pair (pipelines/vsr/pairs.py)",
    "pool_size": "the images whose only instances of both concepts are large enough (§3.1)",
    "split": "unsplit: pairs are sampled before the examples are split",
    "source": "the COCO splits of the two images, joined by +",
})


def example_to_row(item: SplitExample, extra_relations: Optional[Dict[str, str]] = None) -> dict:
    v, e = item.voted, item.voted.example
    return {
        "example_id": e.example_id, "image": e.image, "image_link": e.image_link,
        "caption": e.caption, "label": int(e.label), "relation": e.relation,
        "relation_category": relation_category(e.relation, extra_relations),
        "subj": e.subj, "obj": e.obj, "annotator_id": str(e.annotator_id),
        "vote_true_validator_id": [str(x) for x in v.vote_true],
        "vote_false_validator_id": [str(x) for x in v.vote_false],
        "validators": v.validators, "agreeing": v.agreeing,
        "reference_frame": None if e.reference_frame is None else float(e.reference_frame),
        "split": item.split, "zeroshot_split": item.zeroshot_split,
        "source": e.source, "pair_id": e.pair_id,
    }


def pair_to_row(pair: ImagePair) -> dict:
    return {
        "pair_id": pair.pair_id, "subj": pair.subj, "obj": pair.obj,
        "image_ids": [int(i.image_id) for i in pair.images],
        "images": [i.file_name for i in pair.images],
        "image_links": [i.coco_url for i in pair.images],
        "subj_areas": [float(a) for a in pair.subj_areas],
        "obj_areas": [float(a) for a in pair.obj_areas],
        "draw": int(pair.draw), "pool_size": int(pair.pool_size), "split": "unsplit",
        "source": "+".join(sorted({i.source for i in pair.images})),
    }
