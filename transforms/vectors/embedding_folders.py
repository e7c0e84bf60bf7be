"""Reading precomputed embeddings in clip-retrieval's layout (rom1504/clip-retrieval,
`clip-retrieval inference`):

    <folder>/img_emb/img_emb_<i>.npy            (n_i, d) float, one row per item
    <folder>/metadata/metadata_<i>.parquet      n_i rows, the same order
(`text_emb/text_emb_<i>.npy` for texts). Parts pair up by their number <i>; a part
whose two files disagree in rows, or a number with only one of the two files, is an
InputError naming the files, raised on the driver before any work (`list_parts`).
Vectors are returned L2-normalised in float32 (clip-retrieval normalises by default; a
vector already of unit norm, within float32 rounding, is returned bit for bit).
"""
from __future__ import annotations

import os
import re
from typing import Callable, Iterator, List, Tuple

import apache_beam as beam
import numpy as np

from transforms.core.errors import InputError

KINDS = ("img", "text")


def _numbered(folder: str, prefix: str, suffix: str) -> dict:
    pattern = re.compile(rf"^{prefix}_(\d+){re.escape(suffix)}$")
    if not os.path.isdir(folder):
        return {}
    return {int(m.group(1)): os.path.join(folder, name)
            for name in os.listdir(folder) for m in [pattern.match(name)] if m}


def list_parts(folder: str, kind: str) -> List[Tuple[str, str]]:
    """[(embedding .npy, metadata .parquet)] in part order; InputError when unusable."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    vectors = _numbered(os.path.join(folder, f"{kind}_emb"), f"{kind}_emb", ".npy")
    metadata = _numbered(os.path.join(folder, "metadata"), "metadata", ".parquet")
    if not vectors:
        raise InputError(f"{folder}: no {kind}_emb/{kind}_emb_<i>.npy files (clip-retrieval layout)")
    lonely = sorted(set(vectors) ^ set(metadata))
    if lonely:
        raise InputError(f"{folder}: parts {lonely} lack their {kind}_emb or metadata file")
    return [(vectors[i], metadata[i]) for i in sorted(vectors)]


def read_part(vectors_path: str, metadata_path: str, column: str) -> Iterator[Tuple[str, np.ndarray]]:
    """(metadata[column], unit vector) per row of one part."""
    import pyarrow.parquet as pq
    vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False)
    table = pq.read_table(metadata_path)
    if column not in table.column_names:
        raise InputError(f"{metadata_path}: no column {column!r} (has {', '.join(table.column_names)})")
    if vectors.ndim != 2 or vectors.shape[0] != table.num_rows:
        raise InputError(f"{vectors_path} holds {vectors.shape} but {metadata_path} has {table.num_rows} rows")
    for key, row in zip(table.column(column).to_pylist(), vectors):
        vector = np.asarray(row, dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        yield str(key), (vector / norm if norm > 0 and abs(norm - 1.0) > 1e-5 else vector)


class ReadEmbeddingFolder(beam.PTransform):
    """folder -> (id_of(metadata[column]), vector) per row; one part per worker step."""

    def __init__(self, folder: str, kind: str, column: str, id_of: Callable[[str], str] = str):
        super().__init__()
        self._parts = list_parts(folder, kind)
        self._column, self._id_of = column, id_of

    def expand(self, pbegin):
        column, id_of = self._column, self._id_of
        return (pbegin | "Parts" >> beam.Create(self._parts)
                | "Rows" >> beam.FlatMap(lambda part: ((id_of(k), v) for k, v in read_part(*part, column)))
                | "Spread" >> beam.Reshuffle())
