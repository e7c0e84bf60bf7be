"""What each column of a release table means, carried in its Arrow field's metadata.

A table's schema is declared once, with the benchmark's records; `described` attaches
to every field what a user of the release needs to read it, so that the Parquet files,
the TFRecord feature spec (tfrecord/<table>/features.json) and the Hugging Face dataset
card (README.md) all say the same thing, taken from one place:

    EXAMPLE_SCHEMA = described(pa.schema([...]), {
        "label": "1 when the caption is true of the image, else 0",
        "image_paths": "the set's 10 images, paths relative to the release folder",
        ...},
        class_names={"label": ("False", "True")},        # a categorical integer column
        images={"image_paths": "images"},                # images inside the release
        input_paths=("source_paths",))                   # paths of the build's inputs

- `description`: every column has one (an undescribed column, or a description of a
  column the schema lacks, is an error where the schema is declared).
- `class_names`: an integer column whose value i means names[i]; the dataset card
  declares it a `ClassLabel`.
- `images`: a column of paths (or lists of paths) relative to the release folder of
  images the release holds. The release adds the named column beside it with those
  images embedded (pipelines/release/write/row_paths.py), which the dataset card declares as
  `Image`, so that `datasets` decodes them from any working directory.
- `input_paths`: a column of paths (or lists of paths) of files the build read. The
  release writes them relative to its input root, recorded once in BUILD.json
  (`input_root`), never as the building machine's absolute paths.
"""
from __future__ import annotations

import json
from typing import Iterable, List, Mapping, Optional, Sequence

import pyarrow as pa

DESCRIPTION = b"description"
CLASS_NAMES = b"class_names"      # JSON list of names
IMAGES_AS = b"images_as"          # the column the release embeds this column's images in
INPUT_PATH = b"input_path"        # b"1": paths of the build's inputs


def described(schema: pa.Schema, descriptions: Mapping[str, str], *,
              class_names: Optional[Mapping[str, Sequence[str]]] = None,
              images: Optional[Mapping[str, str]] = None,
              input_paths: Iterable[str] = ()) -> pa.Schema:
    """`schema` with each field's description and kind in its metadata (see above)."""
    class_names, images, input_paths = dict(class_names or {}), dict(images or {}), set(input_paths)
    names = set(schema.names)
    for label, given in (("described", descriptions), ("class_names", class_names),
                         ("images", images), ("input_paths", input_paths)):
        unknown = sorted(set(given) - names)
        if unknown:
            raise ValueError(f"{label}: no column {', '.join(unknown)} in the schema")
    missing = [n for n in schema.names if not (descriptions.get(n) or "").strip()]
    if missing:
        raise ValueError(f"columns without a description: {', '.join(missing)}")
    taken = [n for n in images.values() if n in names]
    if taken:
        raise ValueError(f"images: the embedded column {', '.join(taken)} is a column already")
    fields = []
    for field in schema:
        meta = dict(field.metadata or {})
        meta[DESCRIPTION] = descriptions[field.name].strip().encode("utf-8")
        if field.name in class_names:
            if not pa.types.is_integer(field.type):
                raise ValueError(f"class_names: {field.name} is {field.type}, not an integer column")
            meta[CLASS_NAMES] = json.dumps(list(class_names[field.name])).encode("utf-8")
        if field.name in images or field.name in input_paths:
            if not _is_paths(field.type):
                raise ValueError(f"{field.name} is {field.type}: paths are strings or lists of them")
        if field.name in images:
            meta[IMAGES_AS] = images[field.name].encode("utf-8")
        if field.name in input_paths:
            meta[INPUT_PATH] = b"1"
        fields.append(field.with_metadata(meta))
    return pa.schema(fields, metadata=schema.metadata)


def description(field: pa.Field) -> str:
    return (field.metadata or {}).get(DESCRIPTION, b"").decode("utf-8")


def class_names_of(field: pa.Field) -> Optional[List[str]]:
    raw = (field.metadata or {}).get(CLASS_NAMES)
    return json.loads(raw) if raw else None


def images_column(field: pa.Field) -> Optional[str]:
    """The column this path column's images are embedded in, or None."""
    raw = (field.metadata or {}).get(IMAGES_AS)
    return raw.decode("utf-8") if raw else None


def is_input_path(field: pa.Field) -> bool:
    return (field.metadata or {}).get(INPUT_PATH) == b"1"


def undescribed(schema: pa.Schema) -> List[str]:
    """The columns of `schema` without a description ([] for a described schema)."""
    return [f.name for f in schema if not description(f)]


def _is_paths(kind: pa.DataType) -> bool:
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)
