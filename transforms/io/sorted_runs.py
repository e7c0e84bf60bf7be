"""A global order without a global element: sorted run files and a streaming merge.

Some outputs need every element in one order, in one place: a public CSV numbered from 1
in id order, positions dealt round-robin over a rank that spans a whole split. Gathered
with `ToList`, the collection becomes one element (on Beam's in-process runner held
twice, as the list and as its encoding), so memory grows with the dataset. Instead each
worker writes the elements it gets into run files, each sorted by the caller's key and
holding at most `max_buffer_bytes` of encoded elements; only `RunFile` references (a
path and a row count) travel on. One step then merges the runs (`merge_runs`: heapq
over readers holding one element of each file) and streams what it makes. Memory: one
buffer per writer, one element per run in the merge.

    elements -> WriteSortedRuns(folder, key_of) -> RunFile(path, rows)
    merge_runs([RunFile, ...]) -> the elements, in key order

Keys must be unique and totally ordered (e.g. a tuple ending in an id): the order of equal
keys would depend on bundling, so the merge stops on a repeated key. A run is a stream of
records, each an 8-byte length and the pickle of (key, element); runs are scratch files
of one pipeline, written and read by the same code, so pickles are safe here. Files go
through Beam's FileSystems, so `folder` may be on an object store; it must be where every
worker can read it. The caller removes it when the merge is done.
"""
from __future__ import annotations

import heapq
import pickle
import struct
import uuid
from typing import Callable, Iterable, Iterator, List, NamedTuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

MAX_BUFFER_BYTES = 32 << 20   # encoded elements a writer holds before it writes a run
_LENGTH = struct.Struct(">Q")


class RunFile(NamedTuple):
    """One run: a file of records sorted by key."""
    path: str
    rows: int


def write_run(path: str, records: List[tuple]) -> RunFile:
    """(key, pickled record) pairs -> one run file, sorted by key."""
    records.sort(key=lambda r: r[0])
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        for _, data in records:
            f.write(_LENGTH.pack(len(data)))
            f.write(data)
    return RunFile(path, len(records))


def read_run(run: RunFile) -> Iterator[tuple]:
    """(key, element) of each record of a run, in the run's order, one at a time."""
    with FileSystems.open(run.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        for n in range(run.rows):
            head = f.read(_LENGTH.size)
            if len(head) != _LENGTH.size:
                raise ValueError(f"{run.path}: ends after {n} of its {run.rows} records")
            (size,) = _LENGTH.unpack(head)
            yield pickle.loads(f.read(size))


def merge_runs(runs: Iterable[RunFile]) -> Iterator[object]:
    """The elements of all runs in key order; a ValueError on a key seen twice."""
    merged = heapq.merge(*(read_run(r) for r in sorted(runs)), key=lambda record: record[0])
    previous = _NOTHING = object()
    for key, element in merged:
        if previous is not _NOTHING and key == previous:
            raise ValueError(f"sorted runs: the key {key!r} occurs twice; keys must be unique")
        previous = key
        yield element


class _WriteRuns(beam.DoFn):
    def __init__(self, folder: str, key_of: Callable, max_buffer_bytes: int):
        self._folder, self._key_of, self._max_bytes = folder, key_of, max_buffer_bytes

    def start_bundle(self):
        self._records, self._bytes = [], 0

    def process(self, element):
        key = self._key_of(element)
        data = pickle.dumps((key, element), protocol=pickle.HIGHEST_PROTOCOL)
        self._records.append((key, data))
        self._bytes += len(data)
        if self._bytes >= self._max_bytes:
            yield self._flush()

    def finish_bundle(self):
        if self._records:
            yield WindowedValue(self._flush(), MIN_TIMESTAMP, [GlobalWindow()])

    def _flush(self) -> RunFile:
        records, self._records, self._bytes = self._records, [], 0
        return write_run(FileSystems.join(self._folder, f"{uuid.uuid4().hex}.run"), records)


class WriteSortedRuns(beam.PTransform):
    """elements -> RunFile per run written under `folder`, each sorted by `key_of(element)`
    (unique, totally ordered keys); read them back in one order with `merge_runs`."""

    def __init__(self, folder: str, key_of: Callable, max_buffer_bytes: int = MAX_BUFFER_BYTES):
        super().__init__()
        self.folder, self._key_of, self._max_bytes = folder, key_of, max_buffer_bytes

    def expand(self, elements):
        return elements | "Write runs" >> beam.ParDo(_WriteRuns(self.folder, self._key_of, self._max_bytes))
