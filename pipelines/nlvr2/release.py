"""What an NLVR2 release writes from its examples: the tables and the public layout.

Tables (parquet/ and tfrecord/, pipelines/release/):
    examples   one row per example
    sets       one row per (split, set): synset, query, the URLs of its pairs
    sentences  one row per (split, set, sentence) group: the consistency groups (S11)
All three are derived from examples, so a build from released files has them too.

compat/ (the public repository's nlvr2/data and util/hashes layout, so its tools work):
    compat/<split>.json                       every example of the split, one public line
                                              each (schema.public_line)
    compat/balanced/balanced_<split>.json     examples whose (left_url, right_url) occurs
    compat/unbalanced/unbalanced_<split>.json more than once in the split, with both labels
                                              (balanced) or one label (unbalanced): the
                                              rule of the public data/filter_data.py
    compat/hashes/<split>_hashes.json         {image file: 16-hex average hash} of the
                                              images the build has (none when reading
                                              released files: they hold URLs only)
A compat file is one file, written by one worker, its lines in source order: the file and
line each example was read from (the order of inputs.public, then line), so the lines
of a released file come back in their order; collected examples in identifier order.
"""
from __future__ import annotations

import json
from typing import Dict, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from pipelines.nlvr2 import reasons
from pipelines.nlvr2.records import Example, image_file, public_line
from schemas.columns import described
from transforms.core.stage import MAIN, StageFn, stage_pardo

EXAMPLES, SETS, SENTENCES = "examples", "sets", "sentences"

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


# --- compat/ --------------------------------------------------------------------------------

def compat_order(files: Sequence[str]):
    """Sort key of an example in its compat file: its input file's place in
    inputs.public, then its line; collected examples (no origin) by identifier parts."""
    rank = {path: i for i, path in enumerate(files)}

    def key(x: Example):
        path, line = x.origin or ("", 0)
        return (rank.get(path, len(rank)), path, line, x.set_id, x.sentence_id, x.pair)
    return key


def subset_keys(keyed_group):
    """((split, left_url, right_url), [examples]) -> (subset file, example) for the
    balanced / unbalanced subsets (public data/filter_data.py: image pairs that occur more
    than once in a split; balanced when their labels differ, unbalanced when not)."""
    (split, _, _), examples = keyed_group
    examples = list(examples)
    if len(examples) < 2:
        return
    subset = "balanced" if len({x.label for x in examples}) > 1 else "unbalanced"
    for x in examples:
        yield f"{subset}/{subset}_{split}.json", x


class WriteCompat(beam.PTransform):
    """Examples -> compat/<split>.json and the balanced / unbalanced subset files; returns
    one report {"subsets": {file: examples}}."""

    def __init__(self, staging_dir: str, files: Sequence[str]):
        super().__init__()
        self._folder = FileSystems.join(staging_dir, "compat")
        self._order = compat_order(files)

    def expand(self, examples):
        folder, order = self._folder, self._order
        by_split = examples | "Split files" >> beam.Map(lambda x: (f"{x.split}.json", x))
        subsets = (examples
                   | "By image pair" >> beam.Map(lambda x: ((x.split, x.left_url, x.right_url), x))
                   | "Group image pairs" >> beam.GroupByKey()
                   | "Subsets" >> beam.FlatMap(subset_keys))

        def write(path, items):
            lines = [public_line(x) for x in sorted(items, key=order)]
            with FileSystems.create(FileSystems.join(folder, *path.split("/")),
                                    mime_type="application/jsonl") as f:
                f.write("".join(line + "\n" for line in lines).encode("utf-8"))
            return path, len(lines)

        written = ((by_split, subsets) | "Compat files" >> beam.Flatten()
                   | "Group by file" >> beam.GroupByKey() | "Write" >> beam.MapTuple(write))
        return (written | "Sizes" >> beam.combiners.ToList()
                | "Report" >> beam.Map(lambda sizes: {"files": dict(sorted(sizes))}))


# --- aHash files ----------------------------------------------------------------------------

def image_sides(x: Example):
    """(split, public file name, local path) of each side whose image the build has."""
    for side, path in enumerate((x.left_image, x.right_image)):
        if path:
            yield x.split, image_file(x.split, x.set_id, x.pair, side), path, x.set_id


class _HashImage(StageFn):
    """(split, file name, local path, set) -> (split, file name, 16-hex aHash, set); an
    image that cannot be read is a reject (its example stays: it has a URL)."""
    stage, level = "image_hashes", "image"

    def judge(self, item):
        split, name, path, set_id = item
        import imagehash   # only builds that have images need it
        from PIL import Image
        try:
            with FileSystems.open(path, compression_type="uncompressed") as f, Image.open(f) as image:
                digest = str(imagehash.average_hash(image))
        except Exception as e:   # any decoder error: the file is not an image we can read
            yield self.reject(reasons.UNREADABLE_IMAGE, name, detail=f"{path}: {e}"[:300],
                              split=split, file=path)
            return
        yield split, name, digest, set_id


class HashImages(beam.PTransform):
    """Examples -> {MAIN: (split, file, aHash, set), REJECTS} and compat/hashes/<split>_hashes.json."""

    def __init__(self, staging_dir: str):
        super().__init__()
        self._folder = FileSystems.join(staging_dir, "compat", "hashes")

    def expand(self, examples):
        folder = self._folder
        hashed = (examples | "Image sides" >> beam.FlatMap(image_sides)
                  | "Distinct images" >> beam.Distinct()
                  | "aHash" >> stage_pardo(_HashImage()))

        def write(split, rows):
            table: Dict[str, str] = dict(sorted((name, digest) for name, digest in rows))
            with FileSystems.create(FileSystems.join(folder, f"{split}_hashes.json"),
                                    mime_type="application/json") as f:
                f.write(json.dumps(table).encode("utf-8"))
            return split

        _ = (hashed[MAIN]
             | "By split" >> beam.Map(lambda r: (r[0], (r[1], r[2])))
             | "Group" >> beam.GroupByKey()
             | "Write" >> beam.MapTuple(write))
        return hashed

