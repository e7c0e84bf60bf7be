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
from typing import Callable, Iterator, List, Optional, Tuple

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


def read_part(vectors_path: str, metadata_path: str, column: str,
              start: int = 0, stop: Optional[int] = None) -> Iterator[Tuple[str, np.ndarray]]:
    """(metadata[column], unit vector) per row of one part, rows [start, stop)."""
    import pyarrow.parquet as pq
    vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False)
    names = pq.read_schema(metadata_path).names
    if column not in names:
        raise InputError(f"{metadata_path}: no column {column!r} (has {', '.join(names)})")
    table = pq.read_table(metadata_path, columns=[column])
    if vectors.ndim != 2 or vectors.shape[0] != table.num_rows:
        raise InputError(f"{vectors_path} holds {vectors.shape} but {metadata_path} has {table.num_rows} rows")
    stop = table.num_rows if stop is None else min(stop, table.num_rows)
    for key, row in zip(table.column(column).slice(start, max(stop - start, 0)).to_pylist(), vectors[start:stop]):
        vector = np.asarray(row, dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        yield str(key), (vector / norm if norm > 0 and abs(norm - 1.0) > 1e-5 else vector)


ROWS_PER_READ = 10_000   # rows of a part one worker step reads


def _row_ranges(part: Tuple[str, str]) -> Iterator[Tuple[str, str, int, int]]:
    rows = np.load(part[0], mmap_mode="r", allow_pickle=False).shape[0]
    for start in range(0, max(rows, 1), ROWS_PER_READ):
        yield part[0], part[1], start, start + ROWS_PER_READ


class ReadEmbeddingFolder(beam.PTransform):
    """folder -> (id_of(metadata[column]), vector) per row. Ranges of rows are spread over
    workers, not the rows: a collection of vectors is never shuffled whole (on Beam's
    in-process runner a shuffle holds all of its input)."""

    def __init__(self, folder: str, kind: str, column: str, id_of: Callable[[str], str] = str):
        super().__init__()
        self._parts = list_parts(folder, kind)
        self._column, self._id_of = column, id_of

    def expand(self, pbegin):
        column, id_of = self._column, self._id_of
        return (pbegin | "Parts" >> beam.Create(self._parts)
                | "Row ranges" >> beam.FlatMap(_row_ranges)
                | "Spread" >> beam.Reshuffle()
                | "Rows" >> beam.FlatMap(lambda r: ((id_of(k), v) for k, v in read_part(r[0], r[1], column, r[2], r[3]))))
