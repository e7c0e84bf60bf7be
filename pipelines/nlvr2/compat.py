"""NLVR2's public layout (the public repository's nlvr2/data and util/hashes, so its tools
work on compat/; ../shared/specs/nlvr2.md, "The public layout"): the keys of a line and
their spelling, the public image file names, and the balanced / unbalanced subsets.

    compat/<split>.json                       every example of the split, one public line
                                              each (public_line)
    compat/balanced/balanced_<split>.json     examples whose (left_url, right_url) occurs
    compat/unbalanced/unbalanced_<split>.json more than once in the split, with both labels
                                              (balanced) or one label (unbalanced): the
                                              rule of the public data/filter_data.py
                                              (subset_keys)
    compat/hashes/<split>_hashes.json         {image file: 16-hex average hash} of the
                                              images the build has (none when reading
                                              released files: they hold URLs only)

The files are written by release.WriteCompat and release.HashImages; a released line is
read back by read_public.py.
"""
from __future__ import annotations

import json

from pipelines.nlvr2.records import Example

# Keys of a public line, in the order every released line writes them; train lines add
# `directory` (one of 100 image folders; the rule is not published).
PUBLIC_KEYS = ("validation", "sentence", "left_url", "writer", "label", "right_url", "synset",
               "query", "identifier", "extra_validations")
TRAIN_KEY = "directory"

LABELS = ("True", "False")   # labels and judgements are these strings in the public files


def image_file(split: str, set_id: int, pair: int, side: int) -> str:
    """The public image file of one side of a pair, `split-set-pair-img{0,1}.png` (the
    public repository's README: the name, not the format - not every file is a PNG)."""
    return f"{split}-{set_id}-{pair}-img{side}.png"


def public_row(example: Example) -> dict:
    """The example as a public line's object: PUBLIC_KEYS in order, judgements as
    {worker: "True"/"False"} in their order, `label` a string; train rows end with
    `directory` (where the public train file puts it is not checked here: the train file
    is not among the files the tests read)."""
    row = {"validation": dict(example.validation), "sentence": example.sentence,
           "left_url": example.left_url, "writer": example.writer,
           "label": LABELS[0] if example.label else LABELS[1], "right_url": example.right_url,
           "synset": example.synset, "query": example.query, "identifier": example.identifier,
           "extra_validations": dict(example.extra_validations)}
    if example.directory is not None:
        row[TRAIN_KEY] = example.directory
    return row


def public_line(example: Example) -> str:
    """The public line of an example, without its newline: `json.dumps` with the default
    separators and ASCII escapes, as every line of the released files is written."""
    return json.dumps(public_row(example))


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
