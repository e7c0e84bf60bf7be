"""The Arrow schema of BD2BB's release table (`samples`: one row per Sample, with its target
tuple, codes and cluster), and the mapping from a Sample (pipelines/bd2bb/records.py) to its
row. Every column is described where it is declared (the dataset card and the TFRecord
feature spec show these descriptions).
"""
from __future__ import annotations

import pyarrow as pa

from pipelines.bd2bb.records import Sample
from schemas.columns import described

SOURCE = "coco"                     # images come from MS-COCO train2014 (§3, Vondrick et al.)

SAMPLE_SCHEMA = described(pa.schema([
    pa.field("sample_id", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("hard_test", pa.bool_(), nullable=False),      # §7 hard (unseen) test subset
    pa.field("tuple_id", pa.string(), nullable=False),
    pa.field("image", pa.string(), nullable=False),
    pa.field("annotator", pa.string(), nullable=False),
    pa.field("intention", pa.string(), nullable=False),
    pa.field("action", pa.string(), nullable=False),        # the target
    pa.field("cluster", pa.int64(), nullable=False),
    pa.field("cluster_label", pa.string(), nullable=False),
    pa.field("code1", pa.string(), nullable=False),
    pa.field("code2", pa.list_(pa.string()), nullable=False),
    pa.field("code3", pa.string(), nullable=False),
    pa.field("code4", pa.list_(pa.string()), nullable=False),
    pa.field("endings", pa.list_(pa.string()), nullable=False),       # shown order
    pa.field("ending_types", pa.list_(pa.string()), nullable=False),  # targ / lan / vis
    pa.field("label", pa.int64(), nullable=False),                    # target position
]), {
    "sample_id": "the sample's id: its target tuple's id",
    "split": "train, val or test (§5: 20/40/40, by the actions' topic clusters)",
    "source": "coco: the images are MS-COCO train2014's (§3)",
    "hard_test": "true for a test sample in the hard (unseen) test set (§7)",
    "tuple_id": "the input tuple's id (its \"id\" when given, else a hash of its content)",
    "image": "the image the tuple was written for: a COCO file name or URL, as the input gives it",
    "annotator": "the participant who wrote the intention and the action",
    "intention": "the intention, the text after \"If I\" (§3)",
    "action": "the target action, the text after \"I will\" (§3)",
    "cluster": "the target action's topic cluster (Universal Sentence Encoder + k-means, §3.2)",
    "cluster_label": "the cluster's label from the review sheet; empty when unlabelled",
    "code1": "the action's main verb, lemmatised (§3.2, A.3)",
    "code2": "the main verb's objects (or other complements)",
    "code3": "the verb of the coordinate or subordinate clause, lemmatised",
    "code4": "the other nouns in complement positions of either verb",
    "endings": "the 5 candidate actions in shown order: the target, 2 language decoys, "
               "2 vision decoys (§4)",
    "ending_types": "each ending's type: targ (the target), lan (language decoy), vis "
                    "(vision decoy)",
    "label": "the position of the target among the endings (0-4), as in the public CSVs",
}, class_names={"label": ("ending0", "ending1", "ending2", "ending3", "ending4")})


def sample_to_row(sample: Sample) -> dict:
    d, t = sample.datapoint, sample.datapoint.tuple
    return {
        "sample_id": sample.sample_id, "split": sample.split, "source": SOURCE,
        "hard_test": bool(sample.hard_test), "tuple_id": t.tuple_id, "image": t.image,
        "annotator": t.annotator, "intention": t.intention, "action": t.action,
        "cluster": int(d.cluster), "cluster_label": d.cluster_label,
        "code1": d.codes.code1, "code2": list(d.codes.code2), "code3": d.codes.code3,
        "code4": list(d.codes.code4), "endings": list(sample.endings),
        "ending_types": list(sample.ending_types), "label": int(sample.label),
    }
