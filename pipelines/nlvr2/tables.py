"""Arrow schemas of NLVR2's release tables, and the mapping from records to rows.

    examples    one row per example (records.Example)
    sets        one row per (split, set): synset, query, the URLs of its pairs
    sentences   one row per (split, set, sentence) group: the consistency groups (S11)
    queries     the collection's queries (S1), one row each
    image_sets  the collection's pruned and paired image sets (S3-S6), one row each

The first three are derived from examples, so a build from released files has them too;
the last two only a collection build writes (collection/collect.py collection_tables). Every column
is described where it is declared (the dataset card and the TFRecord feature spec show
these descriptions).
"""
from __future__ import annotations

import json
from typing import Sequence

import pyarrow as pa

from pipelines.nlvr2.compat import image_file
from pipelines.nlvr2.records import Example
from schemas.columns import described

EXAMPLES, SETS, SENTENCES = "examples", "sets", "sentences"
QUERIES, IMAGE_SETS = "queries", "image_sets"

_SPLIT = ("the split: train, dev, test1 (the public test) or test2 (the unreleased one), as "
          "the identifier's first part")
_SOURCE = "public (re-released from the public files) or collection (collected by this build)"

EXAMPLE_SCHEMA = described(pa.schema([
    pa.field("identifier", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),          # "public" or "collection"
    pa.field("set_id", pa.int64(), nullable=False),
    pa.field("pair", pa.int64(), nullable=False),
    pa.field("sentence_id", pa.int64(), nullable=False),
    pa.field("sentence", pa.string(), nullable=False),
    pa.field("label", pa.int64(), nullable=False),             # 1 True, 0 False
    pa.field("left_url", pa.string(), nullable=False),
    pa.field("right_url", pa.string(), nullable=False),
    pa.field("left_image", pa.string(), nullable=False),       # public file name
    pa.field("right_image", pa.string(), nullable=False),
    pa.field("synset", pa.string(), nullable=False),
    pa.field("query", pa.string(), nullable=False),
    pa.field("writer", pa.string(), nullable=False),
    pa.field("validator", pa.string(), nullable=False),        # the writer-time judgement's worker
    pa.field("extra_workers", pa.list_(pa.string()), nullable=False),
    pa.field("extra_labels", pa.list_(pa.int64()), nullable=False),
    pa.field("extra_agreeing", pa.int64(), nullable=False),    # extra judgements equal to the label
    pa.field("directory", pa.int64(), nullable=False),         # train image folder; -1 elsewhere
    # the image files the build read ("" when it has none, as for released files): what the
    # hash files and the explorer's thumbnails are made from
    pa.field("left_path", pa.string(), nullable=False),
    pa.field("right_path", pa.string(), nullable=False),
]), {
    "identifier": "the example's id, split-set_id-pair-sentence_id (the public files' identifier)",
    "split": _SPLIT,
    "source": _SOURCE,
    "set_id": "the eight-image set the sentence was written for",
    "pair": "which of the set's pairs the example shows (0-3)",
    "sentence_id": "which of the set's sentences (0 or 1)",
    "sentence": "the sentence",
    "label": "1 when the sentence is true of the pair, 0 when false (the writer-time "
             "validation, S8)",
    "left_url": "the URL of the left image",
    "right_url": "the URL of the right image",
    "left_image": "the left image's public file name, split-set_id-pair-img0.png (not every "
                  "file is a PNG)",
    "right_image": "the right image's public file name, split-set_id-pair-img1.png",
    "synset": "the WordNet synset the images were searched for (S1)",
    "query": "the search query and its result index (\"some cups38\")",
    "writer": "the anonymised worker who wrote the sentence",
    "validator": "the worker of the writer-time validation",
    "extra_workers": "the workers of the extra validations (dev and test: 4, §3.4)",
    "extra_labels": "their judgements, 1 true, 0 false, in extra_workers order",
    "extra_agreeing": "the extra judgements equal to the label",
    "directory": "the train image folder (0-99) of the public layout; -1 outside train",
    "left_path": "the left image file the build read, relative to the input root "
                 "(MANIFEST.json input_root); empty when the build read no image (public files)",
    "right_path": "the right image file the build read, as left_path",
}, class_names={"label": ("False", "True")}, input_paths=("left_path", "right_path"))

SET_SCHEMA = described(pa.schema([
    pa.field("set", pa.string(), nullable=False),               # split-set
    pa.field("split", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("set_id", pa.int64(), nullable=False),
    pa.field("synset", pa.string(), nullable=False),
    pa.field("query", pa.string(), nullable=False),
    pa.field("examples", pa.int64(), nullable=False),
    pa.field("sentences", pa.int64(), nullable=False),
    pa.field("pairs", pa.list_(pa.int64()), nullable=False),   # pair indexes with examples
    pa.field("left_urls", pa.list_(pa.string()), nullable=False),   # per pair, in `pairs` order
    pa.field("right_urls", pa.list_(pa.string()), nullable=False),
]), {
    "set": "the set's id: split-set_id",
    "split": _SPLIT,
    "source": _SOURCE,
    "set_id": "the eight-image set's number",
    "synset": "the WordNet synset of the set's examples (the most frequent one)",
    "query": "the search query of the set's examples (the most frequent one)",
    "examples": "the set's examples in this release",
    "sentences": "the set's distinct sentences",
    "pairs": "the set's pairs (0-3) that have examples",
    "left_urls": "each pair's left image URL, in pairs order",
    "right_urls": "each pair's right image URL, in pairs order",
})

SENTENCE_SCHEMA = described(pa.schema([
    pa.field("group", pa.string(), nullable=False),             # split-set-sentence
    pa.field("split", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("set_id", pa.int64(), nullable=False),
    pa.field("sentence_id", pa.int64(), nullable=False),
    pa.field("sentence", pa.string(), nullable=False),
    pa.field("writer", pa.string(), nullable=False),
    pa.field("pairs", pa.list_(pa.int64()), nullable=False),
    pa.field("labels", pa.list_(pa.int64()), nullable=False),   # per pair, in `pairs` order
    pa.field("examples", pa.int64(), nullable=False),
    pa.field("true_examples", pa.int64(), nullable=False),
]), {
    "group": "the group's id: split-set_id-sentence_id (one sentence over the set's pairs)",
    "split": _SPLIT,
    "source": _SOURCE,
    "set_id": "the eight-image set's number",
    "sentence_id": "the sentence's number in the set (0 or 1)",
    "sentence": "the sentence",
    "writer": "the anonymised worker who wrote it",
    "pairs": "the pairs (0-3) the sentence is paired with",
    "labels": "its label on each of them, 1 true, 0 false, in pairs order",
    "examples": "the group's examples (the consistency metric's unit, S11)",
    "true_examples": "how many of them are true",
})


def example_to_row(x: Example, source: str) -> dict:
    label = "True" if x.label else "False"
    return {"identifier": x.identifier, "split": x.split, "source": source, "set_id": x.set_id,
            "pair": x.pair, "sentence_id": x.sentence_id, "sentence": x.sentence,
            "label": int(x.label), "left_url": x.left_url, "right_url": x.right_url,
            "left_image": image_file(x.split, x.set_id, x.pair, 0),
            "right_image": image_file(x.split, x.set_id, x.pair, 1),
            "synset": x.synset, "query": x.query, "writer": x.writer,
            "validator": x.validation[0][0] if x.validation else "",
            "extra_workers": [w for w, _ in x.extra_validations],
            "extra_labels": [int(j == "True") for _, j in x.extra_validations],
            "extra_agreeing": sum(j == label for _, j in x.extra_validations),
            "directory": -1 if x.directory is None else x.directory,
            "left_path": x.left_image or "", "right_path": x.right_image or ""}


def _common(values):
    """The most frequent value, ties by value (a set's examples share synset and query)."""
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return min(counts, key=lambda v: (-counts[v], v))


def set_row(key, examples: Sequence[Example], source: str) -> dict:
    split, set_id = key
    by_pair = {}
    for x in sorted(examples, key=lambda x: (x.pair, x.sentence_id)):
        by_pair.setdefault(x.pair, (x.left_url, x.right_url))
    pairs = sorted(by_pair)
    return {"set": f"{split}-{set_id}", "split": split, "source": source, "set_id": set_id,
            "synset": _common(x.synset for x in examples),
            "query": _common(x.query for x in examples), "examples": len(examples),
            "sentences": len({x.sentence_id for x in examples}), "pairs": pairs,
            "left_urls": [by_pair[p][0] for p in pairs],
            "right_urls": [by_pair[p][1] for p in pairs]}


def sentence_row(key, examples: Sequence[Example], source: str) -> dict:
    split, set_id, sentence_id = key
    examples = sorted(examples, key=lambda x: x.pair)
    return {"group": f"{split}-{set_id}-{sentence_id}", "split": split, "source": source,
            "set_id": set_id, "sentence_id": sentence_id,
            "sentence": _common(x.sentence for x in examples),
            "writer": _common(x.writer for x in examples),
            "pairs": [x.pair for x in examples], "labels": [int(x.label) for x in examples],
            "examples": len(examples), "true_examples": sum(x.label for x in examples)}


# The rows of the collection's tables come before any split (S9 splits examples, later): every
# release table has a split and a source column (pipelines/release/write/split_files.py, manifest.py),
# so theirs are both "collection", one Hugging Face split holding the whole table.
COLLECTION_SPLIT = "collection"
_PLACE = [("split", pa.string()), ("source", pa.string())]
_PLACE_DOCS = {"split": "collection: the collection's tables precede the splits (S9)",
               "source": "collection: rows of this build's collection stages"}
# the Arrow schemas of the collection's tables (the rows of query_row and image_set_row below)
COLLECTION_SCHEMAS = {
    QUERIES: described(pa.schema(_PLACE + [
        ("query", pa.string()), ("synset", pa.string()), ("wnid", pa.string()),
        ("kind", pa.string()), ("synonym", pa.string()), ("wide", pa.bool_())]), {
        **_PLACE_DOCS, "query": "the search query (S1)", "synset": "the WordNet synset searched for",
        "wnid": "the synset's WordNet id", "kind": "the Table 1 heuristic that made the query",
        "synonym": "the synset's lemma the query was made from",
        "wide": "true when App. B's larger caps apply to the query"}),
    IMAGE_SETS: described(pa.schema(_PLACE + [
        ("set", pa.string()), ("synset", pa.string()), ("query", pa.string()),
        ("rank", pa.int64()), ("pairs", pa.string())]), {
        **_PLACE_DOCS, "set": "the set's id in the task and answer files: query#rank",
        "synset": "the WordNet synset searched for",
        "query": "the released query field: the query text and the result index",
        "rank": "the search result's index for the query",
        "pairs": "the set's four image pairs after pruning, a JSON list of [left URL, right URL]"}),
}


def query_row(query) -> dict:
    return {"split": COLLECTION_SPLIT, "source": COLLECTION_SPLIT, "query": query.text, "synset": query.synset, "wnid": query.wnid, "kind": query.kind,
            "synonym": query.synonym, "wide": query.wide}


def image_set_row(paired) -> dict:
    s = paired.image_set
    return {"split": COLLECTION_SPLIT, "source": COLLECTION_SPLIT, "set": s.key, "synset": s.synset, "query": s.query_field, "rank": s.rank,
            "pairs": json.dumps([[left.url, right.url] for left, right in paired.pairs], ensure_ascii=False)}
