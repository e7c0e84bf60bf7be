"""F16: the files an FG release writes besides its tables (Chen et al., SIGIR '23; the
public layout of the release in ../realdata/fg/). The tables: pipelines/fg/tables.py.

    compat/Annotations/<MSCOCO|Flickr30K>_FG_ann.json   image id -> 5 captions, normalised as
                                        the public release is (captions.normalise_caption)
    compat/Images/<MSCOCO|Flickr30K>_FG_img_filenames.npy  the new pool's file names (the
                                        public repository's names)
    review/review_sheet.jsonl           the sheet a correction round starts from (F15)
    merge_training/pairs.jsonl          F12's <d'_c, d'_g> -> sentence pairs (train GPT-2 on them)

The compat/ files' format and names: pipelines/fg/compat.py.
"""
from __future__ import annotations

import json
import os
from typing import List

from apache_beam.io.filesystems import FileSystems

from pipelines.fg.compat import (annotation_path, annotations, filenames_path, write_annotations,
                                 write_image_filenames)


def write_compat(rows: List[dict], pool: List[dict], staging: str, configuration: str,
                 order: List[str], keep: str, html_escape: bool) -> str:
    """Both public files (pipelines/fg/compat.py), each written once by one worker; the
    staging folder is local (compat.py writes with the file system's own calls)."""
    for relative in (annotation_path(configuration), filenames_path(configuration)):
        os.makedirs(os.path.dirname(os.path.join(staging, relative)), exist_ok=True)
    write_annotations(os.path.join(staging, annotation_path(configuration)),
                      annotations(rows, order, keep, html_escape))
    names = [FileSystems.split(r["path"])[1] for r in sorted(pool, key=lambda r: r["position"])]
    write_image_filenames(os.path.join(staging, filenames_path(configuration)), names)
    return staging


def write_json_lines(path: str, rows: List[dict]) -> str:
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    with FileSystems.create(path, mime_type="application/jsonl") as f:
        f.write(text.encode("utf-8"))
    return path
