"""croissant.json: the release described in MLCommons Croissant 1.0 (every benchmark).

Croissant is the metadata Hugging Face, Kaggle and OpenML publish for a dataset; with it,
`mlcroissant.Dataset("<release>/croissant.json").records("<table>")` reads a release's
rows, and a catalogue indexes it, without this project's code. It is written from what
the dataset card is written from (pipelines/release/cards/hf_card.py), so the two agree:

    distribution   one cr:FileObject per Parquet file (path relative to the release
                   folder, sha256, size), and per table one cr:FileSet of its files
    recordSet      per table, its fields with the Croissant type of each Arrow column
                   (text, integer, float, boolean; a list is `repeated`; an image the
                   release embeds is an sc:ImageObject beside its `path`), each column's
                   description, the table's key; and, per table, `<table>_splits`
                   (dataType cr:Split) naming its splits, which the `split` field
                   references

Nothing in it depends on the machine or the hour of the build (no absolute path, no
date: `datePublished` is left out, so the same config gives the same bytes), and it is
written before MANIFEST.json, which lists its checksum like every other file's.
"""
from __future__ import annotations

import json
from typing import List, Mapping, Optional, Sequence

import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from pipelines.release.write.split_files import Partitioned, SplitScheme, scheme_split_parts
from schemas.columns import class_names_of, description
from schemas.layout import PARQUET_DIR
from transforms.core.hashing import content_sha256_and_size

CROISSANT = "croissant.json"
CONFORMS_TO = "http://mlcommons.org/croissant/1.0"
PARQUET = "application/x-parquet"

# The @context every Croissant 1.0 document carries (the specification's, as mlcroissant
# checks it: a different one is reported as non-standard).
CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

# An image the release embeds (pipelines/release/write/row_paths.py IMAGE_TYPE): its bytes
# and its path, as the Hugging Face `Image` feature stores them.
IMAGE_MEMBERS = ("bytes", "path")


def data_type(kind: pa.DataType) -> Optional[str]:
    """The Croissant (schema.org) type of an Arrow scalar type, None for one that has no
    Croissant counterpart (no release table holds one today; see field_node)."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
        return "sc:Text"   # null: a column without a value, typed by the reader as text
    if pa.types.is_boolean(kind):
        return "sc:Boolean"
    if pa.types.is_integer(kind):
        return "sc:Integer"
    if pa.types.is_floating(kind):
        return "sc:Float"
    return None


def is_image(kind: pa.DataType) -> bool:
    return pa.types.is_struct(kind) and tuple(f.name for f in kind) == IMAGE_MEMBERS


def _is_list(kind: pa.DataType) -> bool:
    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def field_node(table: str, field: pa.Field) -> dict:
    """One column as a cr:Field that reads it from the table's file set."""
    kind, repeated = field.type, False
    if _is_list(kind):
        kind, repeated = kind.value_type, True
    node = {"@type": "cr:Field", "@id": f"{table}/{field.name}", "name": field.name,
            "description": _described(field)}
    if is_image(kind):   # {bytes, path}: one sub-field each, read by a JSON path
        path = "[*]." if repeated else ""
        node["subField"] = [
            _leaf(f"{table}/{field.name}/{member}", member, dtype, table, field.name,
                  repeated, json_path=path + member)
            for member, dtype in (("bytes", "sc:ImageObject"), ("path", "sc:Text"))]
    else:
        dtype = data_type(kind)
        if dtype is None:   # a nested list, a plain struct, bytes: read as stored, said so
            dtype = "sc:Text"
            node["description"] += f" (Arrow type {field.type}: read as the Parquet file stores it)"
        node.update(_leaf(node["@id"], field.name, dtype, table, field.name, repeated))
    if repeated:
        node["repeated"] = True
    return node


def _leaf(node_id: str, name: str, dtype: str, table: str, column: str, repeated: bool,
          json_path: str = "") -> dict:
    source = {"fileSet": {"@id": file_set_id(table)}, "extract": {"column": column}}
    if json_path:
        source["transform"] = {"jsonPath": json_path}
    leaf = {"@type": "cr:Field", "@id": node_id, "name": name, "dataType": dtype, "source": source}
    if repeated:
        leaf["repeated"] = True
    return leaf


def _described(field: pa.Field) -> str:
    text = description(field)
    names = class_names_of(field)
    if names:
        text += " (" + ", ".join(f"{i}: {name}" for i, name in enumerate(names)) + ")"
    return text


def file_set_id(table: str) -> str:
    return f"{PARQUET_DIR}/{table}"


def splits_id(table: str) -> str:
    return f"{table}_splits"


def record_sets(table: str, key: Sequence[str], partitioned: Partitioned,
                main: SplitScheme) -> List[dict]:
    """The table's record set and, when its main scheme has splits, `<table>_splits`."""
    fields = [field_node(table, field) for field in partitioned.schema]
    out = []
    names = sorted(scheme_split_parts(main, partitioned)) if main.splits is None else []
    if names:
        name_id = f"{splits_id(table)}/name"
        out.append({"@type": "cr:RecordSet", "@id": splits_id(table), "name": splits_id(table),
                    "description": f"The splits of {table} (its `{main.column}` column).",
                    "dataType": "cr:Split", "key": {"@id": name_id},
                    "field": [{"@type": "cr:Field", "@id": name_id, "name": "name",
                               "dataType": "sc:Text"}],
                    "data": [{name_id: name} for name in names]})
        for node in fields:
            if node["name"] == main.column:
                node["references"] = {"field": {"@id": name_id}}
    keys = [{"@id": f"{table}/{column}"} for column in key]
    out.append({"@type": "cr:RecordSet", "@id": table, "name": table,
                "description": f"The rows of parquet/{table}/, one set of files per split.",
                "key": keys[0] if len(keys) == 1 else keys, "field": fields})
    return out


def distribution(staging: str, table: str) -> List[dict]:
    """A cr:FileObject per Parquet file of the table (checksum and size; a table without
    rows keeps one empty file, listed too) and its cr:FileSet."""
    folder = FileSystems.join(staging, PARQUET_DIR, table)
    files = sorted(FileSystems.split(m.path)[1] for m in
                   FileSystems.match([FileSystems.join(folder, "*.parquet")])[0].metadata_list)
    nodes = []
    for name in files:
        relative = f"{PARQUET_DIR}/{table}/{name}"
        sha256, size = content_sha256_and_size(FileSystems.join(folder, name))
        nodes.append({"@type": "cr:FileObject", "@id": relative, "name": relative,
                      "contentUrl": relative, "encodingFormat": PARQUET,
                      "contentSize": f"{size} B", "sha256": sha256})
    nodes.append({"@type": "cr:FileSet", "@id": file_set_id(table), "name": file_set_id(table),
                  "description": f"The Parquet files of {table}.", "encodingFormat": PARQUET,
                  "includes": f"{PARQUET_DIR}/{table}/*.parquet"})
    return nodes


def document(staging: str, *, name: str, version: str, keys: Mapping[str, Sequence[str]],
             schemes: Mapping[str, Sequence[SplitScheme]], partitions: Mapping[str, Partitioned],
             facts=None, generated: str = "") -> dict:
    """The Croissant document of a staged release: every Parquet file; a record set for
    each table with rows (mlcroissant reads no record set out of an empty file set)."""
    tables = [t for t in keys if partitions[t].schema is not None and partitions[t].files]
    summary = (f"{name} {version}: {len(tables)} table(s) as Parquet ({', '.join(tables)}), "
               "written by vl-bench-pipelines; DATACARD.md says how it was built.")
    doc = {"@context": CONTEXT, "@type": "sc:Dataset", "conformsTo": CONFORMS_TO,
           "name": name, "description": f"{generated} {summary}".strip(), "version": version}
    if facts is not None:
        doc.update({"license": facts.license, "citeAs": facts.citation,
                    "inLanguage": list(facts.language), "keywords": list(facts.task_categories)})
        if facts.homepage:
            doc["url"] = facts.homepage
    doc["distribution"] = [node for t in keys for node in distribution(staging, t)]
    doc["recordSet"] = [node for t in tables
                        for node in record_sets(t, keys[t], partitions[t], schemes[t][0])]
    return doc


def write(staging: str, **kwargs) -> str:
    """Write `<staging>/croissant.json` (arguments: `document`'s); returns its path."""
    path = FileSystems.join(staging, CROISSANT)
    text = json.dumps(document(staging, **kwargs), indent=1, ensure_ascii=False) + "\n"
    with FileSystems.create(path, mime_type="application/ld+json",
                            compression_type="uncompressed") as f:
        f.write(text.encode("utf-8"))
    return path
