"""Vectors held as files in shards, so that a global step over vectors holds one file at a
time, never the collection.

A kNN search or a rank count compares every query with every database vector. Held as
Beam elements, the database would sit whole in one place: Beam's in-process runner keeps
a grouping step's input in memory, and a side input goes whole to every worker. So the
vectors are written, in the step that produces them, into files of one shard each (a
stable hash of the id, `shard_of`), and only `VectorFile` references (a path and a row
count) travel through the pipeline; a step loads one file, uses it and drops it.

    elements -> WriteVectorFiles(folder, num_shards) -> VectorFile(shard, path, rows)
    read_vector_file(path) -> (ids, labels, (rows, d) float32 matrix)
    VectorFile -> ReadRows(ids side input) -> the rows of those ids, as ImageEmbedding
    VectorFile -> ReadRows(without=ids side input) -> every other row
    any PCollection -> RemoveFolderWhenDone(folder): the folder goes once that is complete

A writer holds at most `max_buffer_bytes` of vectors (all shards together) before it
writes them out, so a file has at most that many bytes of vectors, usually far fewer.
Writing one shard's file briefly takes about three times its bytes again (the stacked
matrix, the encoded file, its copy to the file system), so the bound is kept small:
memory stays flat as the collection grows, and a reader holds small files. A
file is `<folder>/<shard>/<random>.npz` (numpy, uncompressed, no pickles): `vectors`,
and `meta`, the UTF-8 JSON of {"ids": [...], "labels": [...]}. Files go through Beam's
FileSystems, so the folder may be on an object store, and must be where every worker can
read it (on Dataflow: under the job's temp or staging location). The split of a shard
into files depends on bundling; what reads them must not (every reader here merges exact
per-file results).
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import uuid
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

log = logging.getLogger("transforms.vectors.vector_files")

MAX_BUFFER_BYTES = 16 << 20   # vectors a writer holds before it writes them (all shards)

Row = Tuple[str, str, object]   # (id, label, vector): what a writer takes from an element


class VectorFile(NamedTuple):
    """One file of vectors of one shard."""
    shard: int
    path: str
    rows: int


def shard_of(item_id: str, num_shards: int) -> int:
    """A stable shard number for an id (Python's hash() differs between processes)."""
    digest = hashlib.sha256(item_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % num_shards


def embedding_row(e) -> Row:
    """(image_id, path, embedding) of an ImageEmbedding, or of anything with those fields."""
    return e.image_id, e.path, e.embedding


def write_vector_file(path: str, ids: Sequence[str], labels: Sequence[str], vectors: np.ndarray) -> None:
    meta = json.dumps({"ids": list(ids), "labels": list(labels)}, ensure_ascii=False).encode("utf-8")
    buffer = io.BytesIO()
    np.savez(buffer, vectors=np.ascontiguousarray(vectors, np.float32), meta=np.frombuffer(meta, np.uint8))
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(buffer.getvalue())


def read_vector_file(path: str) -> Tuple[List[str], List[str], np.ndarray]:
    """(ids, labels, vectors) of one file written by WriteVectorFiles."""
    if FileSystems.get_scheme(path):   # an object store: read whole, then unzip
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            source = io.BytesIO(f.read())
    else:
        source = path
    with np.load(source, allow_pickle=False) as data:
        vectors = np.ascontiguousarray(data["vectors"], np.float32)
        meta = json.loads(data["meta"].tobytes().decode("utf-8"))
    return meta["ids"], meta["labels"], vectors


class _Spill(beam.DoFn):
    def __init__(self, folder: str, num_shards: int, row_of: Callable, max_buffer_bytes: int):
        self._folder, self._num_shards, self._row_of = folder, num_shards, row_of
        self._max_bytes = max_buffer_bytes

    def start_bundle(self):
        self._buffers = {}
        self._bytes = 0

    def process(self, element):
        item_id, label, vector = self._row_of(element)
        vector = np.asarray(vector, np.float32).ravel()
        ids, labels, vectors = self._buffers.setdefault(shard_of(item_id, self._num_shards), ([], [], []))
        ids.append(item_id)
        labels.append(label)
        vectors.append(vector)
        self._bytes += vector.nbytes
        if self._bytes >= self._max_bytes:
            yield from self._flush()

    def finish_bundle(self):
        for written in self._flush():
            yield WindowedValue(written, MIN_TIMESTAMP, [GlobalWindow()])

    def _flush(self):
        buffers, self._buffers, self._bytes = self._buffers, {}, 0
        for shard in sorted(buffers):
            ids, labels, vectors = buffers.pop(shard)   # a written shard's rows are freed at once
            path = FileSystems.join(self._folder, str(shard), f"{uuid.uuid4().hex}.npz")
            write_vector_file(path, ids, labels, np.stack(vectors))
            del vectors
            yield VectorFile(shard, path, len(ids))


class WriteVectorFiles(beam.PTransform):
    """elements -> VectorFile per file written under `folder`; `row_of(element)` gives
    (id, label, vector) (default: an ImageEmbedding's image_id, path, embedding)."""

    def __init__(self, folder: str, num_shards: int = 1, row_of: Callable = embedding_row,
                 max_buffer_bytes: int = MAX_BUFFER_BYTES):
        super().__init__()
        if num_shards < 1:
            raise ValueError("num_shards must be >= 1")
        self.folder, self.num_shards = folder, num_shards
        self._row_of, self._max_bytes = row_of, max_buffer_bytes

    def expand(self, elements):
        return elements | "Write" >> beam.ParDo(_Spill(self.folder, self.num_shards, self._row_of, self._max_bytes))


def _as_set(ids):
    return ids if isinstance(ids, (set, frozenset, dict)) else set(ids)


class _Rows(beam.DoFn):
    def process(self, vector_file: VectorFile, wanted=None, without=None):
        from schemas.records import ImageEmbedding
        wanted = None if wanted is None else _as_set(wanted)
        without = _as_set(without or ())
        ids, labels, vectors = read_vector_file(vector_file.path)
        for n, item_id in enumerate(ids):
            if (wanted is None or item_id in wanted) and item_id not in without:
                yield ImageEmbedding(item_id, labels[n], "", vectors[n].copy())


class ReadRows(beam.PTransform):
    """VectorFile -> ImageEmbedding(id, label, "", vector) of each row whose id is in
    `wanted` (a side input holding ids: a list, set or dict), or of every row (None);
    less the rows whose id is in `without` (a side input of ids, for a filter that drops
    few rows of many: the side input holds the few)."""

    def __init__(self, wanted=None, without=None):
        super().__init__()
        self._wanted, self._without = wanted, without

    def expand(self, files):
        sides = {name: side for name, side in (("wanted", self._wanted), ("without", self._without))
                 if side is not None}
        return files | "Rows" >> beam.ParDo(_Rows(), **sides)


def remove_folder(folder: str) -> None:
    """Delete a folder of vector files and everything in it (quietly when it is not there)."""
    target = folder if not FileSystems.get_scheme(folder) else folder.rstrip("/") + "/"
    try:
        if FileSystems.exists(target):
            FileSystems.delete([target])
    except Exception as e:  # a leftover temp folder must not fail a build that succeeded
        log.warning("could not remove %s: %s", folder, e)


class RemoveFolderWhenDone(beam.PTransform):
    """Removes `folder` once the input PCollection is complete (the readers of its files
    feed it), and outputs nothing."""

    def __init__(self, folder: str):
        super().__init__()
        self.folder = folder

    def expand(self, done):
        folder = self.folder
        return (done | "Count" >> beam.combiners.Count.Globally()
                | "Remove" >> beam.FlatMap(lambda _: remove_folder(folder) or []))


def scratch_folder(pipeline: beam.Pipeline, folder: Optional[str] = None) -> str:
    """The folder one transform writes its vector files into and removes when done:
    `folder` when the caller names one (it must be that transform's alone), else a new
    folder under the pipeline's --temp_location, else under the local temp folder
    (in-process runs only: workers elsewhere cannot read it)."""
    import tempfile

    from apache_beam.options.pipeline_options import GoogleCloudOptions
    if folder:
        return folder
    base = pipeline.options.view_as(GoogleCloudOptions).temp_location if pipeline.options else None
    return FileSystems.join(base or tempfile.gettempdir(), f"vectors-{uuid.uuid4().hex}")
