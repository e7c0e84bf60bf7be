"""A release table's splits as files of their own, in Parquet and TFRecord (every benchmark).

A table holds its split in a column (`split`: train/dev/test, ...), and some tables hold a
second split scheme beside it (VSR's concept zero-shot split in `zeroshot_split`, BD2BB's
hard test in `hard_test`). Tools that select data by file - Hugging Face `datasets`
(`configs:` with `data_files` per split, pipelines/release/cards/hf_card.py) and tf.data above
all - need each split in files of its own. So after the run the driver rewrites each
table's shards partitioned by the values of all its scheme columns, in both formats:

    parquet/<table>/<table>-00000-of-00002.parquet   (the run's shards: splits mixed, as
                                                      many and in the order the runner chose)
 -> parquet/<table>/<part>-0000j-of-0000k.parquet    (a part's rows in key order, in k files)
    tfrecord/<table>/<part>-0000j-of-0000k.tfrecord
    tfrecord/<table>/features.json                   (the feature spec and each split's files)

where `<part>` names the values of the scheme columns ("train", or "train.test" for VSR:
random train, zero-shot test). Rows, their fields and their number do not change, only
which file holds them - but for the path columns the release rewrites on the way
(pipelines/release/write/row_paths.py: input paths made relative to the input root, images
embedded). The TFRecord files hold one tf.train.Example per row, the same rows as the
Parquet file of the same name, with the declared columns (not the embedded images: their
paths are there). The run's shards are read in batches and spilled into one bucket per
output file, which is then sorted: memory holds one output file's rows (before their
images are embedded, which happens batch by batch).

How many files a part gets and which rows each holds, in which order, follow the rows and
the table's declared rule, never the runner (pipelines/release/write/order.py): the same rows
give the same bytes in process, with any number of workers and on Flink.
"""
from __future__ import annotations

import collections
import json
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from pipelines.release.write.order import (BUCKETS_DIR, IMAGE_ROWS_PER_SHARD, ROWS_PER_SHARD, Buckets,
                                           codec_of, parquet_files, shard_count, sortable_columns)
from pipelines.release.write.tables import sort_key
from schemas.layout import PARQUET_DIR, TFRECORD_DIR
from schemas.names import safe_name
from schemas.tfexample import feature_spec_json, tfrecord_frame, to_example_bytes
from transforms.io.files import open_parquet

Key = Tuple   # the values of a table's scheme columns, in declaration order


@dataclass(frozen=True)
class SplitScheme:
    """One way a table's rows are split: the column that holds it and, when its values
    are not split names themselves, which value is which split.

    `name` is "" for the table's main scheme and e.g. "zeroshot" for another one (its
    Hugging Face config is then `<table>_<name>`). Rows whose value is empty, or not in
    `splits` when that is given, are outside the scheme (VSR examples outside the
    zero-shot split; BD2BB samples that are not in the hard test)."""
    column: str = "split"
    name: str = ""
    splits: Optional[Mapping] = field(default=None)

    def split_of(self, value) -> Optional[str]:
        if self.splits is not None:
            return self.splits.get(value)
        return str(value) if value not in ("", None) else None


MAIN = (SplitScheme(),)   # the default: the `split` column, its values the split names


@dataclass
class Partitioned:
    """What partition_table wrote: the files of each part (Parquet and TFRecord, the same
    stems) and its rows."""
    columns: Tuple[str, ...]
    files: Dict[Key, List[str]]   # part -> Parquet file names (in the table's folder), sorted
    rows: Dict[Key, int]
    schema: Optional[pa.Schema] = None   # the Parquet files' (None: no file at all)

    def tfrecords(self, key: Key) -> List[str]:
        return [name[:-len(".parquet")] + ".tfrecord" for name in self.files[key]]


def config_name(table: str, scheme: SplitScheme) -> str:
    """A scheme's name as a dataset config: the table for its main scheme, else
    `<table>_<scheme name>` (VSR's examples_zeroshot)."""
    return f"{table}_{scheme.name}" if scheme.name else table


def scheme_columns(schemes: Sequence[SplitScheme]) -> Tuple[str, ...]:
    return tuple(dict.fromkeys(s.column for s in schemes))


def part_name(columns: Sequence[str], key: Key) -> str:
    """"train", "train.test", "test.hard_test" / "test.not_hard_test" for a flag."""
    words = []
    for column, value in zip(columns, key):
        if isinstance(value, bool):
            words.append(column if value else f"not_{column}")
        else:
            words.append(str(value) if value not in ("", None) else "none")
    return safe_name(".".join(words))


BATCH_ROWS = 4096          # rows read and rewritten at a time
IMAGE_BATCH_ROWS = 16     # ... when each row gets its images embedded (a row group each)
FEATURES = "features.json"


def partition_table(staging: str, table: str, schemes: Sequence[SplitScheme],
                    rewrite: Optional[Callable[[pa.Schema], object]] = None,
                    key: Sequence[str] = (), rows_per_shard: Optional[int] = None) -> Partitioned:
    """Rewrite `<staging>/parquet/<table>/` as one set of shards per part, and write the
    same rows as `<staging>/tfrecord/<table>/` (see above). Each part's rows are in the
    order of `key` (default: every scalar column), in ceil(rows / rows_per_shard) files
    (default: ROWS_PER_SHARD, IMAGE_ROWS_PER_SHARD when the rows embed images), a row's
    file chosen by its key (pipelines/release/write/order.py): the runner's shards and row
    order leave no trace. `rewrite(schema)` gives what rewrites each batch on the way (a
    pipelines.release.write.row_paths.RowPaths, made from the schema the pipeline wrote);
    None: rows as read."""
    folder = FileSystems.join(staging, PARQUET_DIR, table)
    records = FileSystems.join(staging, TFRECORD_DIR, table)
    columns = scheme_columns(schemes)
    sources = parquet_files(folder)
    if not sources:
        return Partitioned(columns, {}, {}, None)
    declared = _schema_of(sources[0])
    rows = rewrite(declared) if rewrite else None
    released = rows.released_schema if rows is not None else declared
    embeds = rows is not None and bool(rows.images)
    compression = codec_of(sources[0])
    in_parts = _rows_per_part(sources, columns)
    per_shard = rows_per_shard or (IMAGE_ROWS_PER_SHARD if embeds else ROWS_PER_SHARD)
    shards = {part: shard_count(n, per_shard) for part, n in sorted(
        in_parts.items(), key=lambda kv: sort_key(kv[0]))}
    names = {part: part_name(columns, part) for part in shards}
    if len(set(names.values())) != len(names):
        raise ValueError(f"parquet/{table}: two parts share a file name: {sorted(names.values())}")
    stems = {part: [f"{names[part]}-{j:05d}-of-{n:05d}" for j in range(n)]
             for part, n in shards.items()}
    buckets = Buckets(FileSystems.join(folder, BUCKETS_DIR), declared,
                      tuple(key) or sortable_columns(declared), shards)
    files: Dict[Key, List[str]] = collections.defaultdict(list)
    counted: Dict[Key, int] = collections.Counter()
    try:
        for path in sources:
            with open_parquet(path) as parquet:
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
                    for part in shards:
                        buckets.add(part, batch.filter(_mask(batch, columns, part)))
        buckets.close()
        FileSystems.delete(sources)   # before writing: a part's file may have a run's name
        if not shards:   # a table without rows keeps one empty file: its schema
            stem = f"{table}-00000-of-00001"
            _PartFiles(FileSystems.join(folder, f"{stem}.parquet"),
                       FileSystems.join(records, f"{stem}.tfrecord"),
                       released, declared, compression).close()
        step = IMAGE_BATCH_ROWS if embeds else BATCH_ROWS
        for part, part_stems in stems.items():
            for shard, stem in enumerate(part_stems):
                out = _PartFiles(FileSystems.join(folder, f"{stem}.parquet"),
                                 FileSystems.join(records, f"{stem}.tfrecord"),
                                 released, declared, compression)
                try:
                    for batch in buckets.ordered(part, shard).to_batches(step):
                        out.write(rows(batch) if rows is not None else batch)
                        counted[part] += batch.num_rows
                finally:
                    out.close()
                files[part].append(f"{stem}.parquet")
    finally:
        buckets.remove()
    partitioned = Partitioned(columns, dict(files), dict(counted), released)
    _write_text(FileSystems.join(records, FEATURES), json.dumps(
        features_file(table, declared, schemes, partitioned), indent=1, sort_keys=True) + "\n")
    return partitioned


def features_file(table: str, schema: pa.Schema, schemes: Sequence[SplitScheme],
                  partitioned: Partitioned) -> dict:
    """tfrecord/<table>/features.json: how to parse the records, and which files hold
    each split of each scheme (the dataset card's configs, in TFRecord files)."""
    splits = {}
    for scheme in schemes:
        files = scheme_split_parts(scheme, partitioned)
        if files:
            splits[config_name(table, scheme)] = {
                split: sorted(n for key in keys for n in partitioned.tfrecords(key))
                for split, keys in files.items()}
    return {"table": table,
            "format": "TFRecord files (uncompressed) of tf.train.Example, one per row; parse "
                      "each with tf.io.parse_single_example and these features: "
                      "FixedLenFeature([], dtype) for a scalar, VarLenFeature(dtype) for a list",
            "features": feature_spec_json(schema), "splits": splits}


def scheme_split_parts(scheme: SplitScheme, partitioned: Partitioned) -> Dict[str, List[Key]]:
    """{split: the parts whose rows are in it} for one scheme of a table."""
    position = partitioned.columns.index(scheme.column)
    out: Dict[str, List[Key]] = {}
    for key in partitioned.files:
        split = scheme.split_of(key[position])
        if split is not None:
            out.setdefault(split, []).append(key)
    return out


def _schema_of(path: str) -> pa.Schema:
    with open_parquet(path) as parquet:
        return parquet.schema_arrow


class _PartFiles:
    """The Parquet file and the TFRecord file of one part of one source shard."""

    def __init__(self, parquet: str, tfrecord: str, released: pa.Schema, declared: pa.Schema,
                 compression: str):
        self._parquet_file = FileSystems.create(parquet, mime_type="application/octet-stream")
        self._parquet = pq.ParquetWriter(self._parquet_file, released, compression=compression)
        self._tfrecord = FileSystems.create(tfrecord, mime_type="application/octet-stream")
        self._declared = declared

    def write(self, batch: pa.RecordBatch) -> None:
        self._parquet.write_batch(batch)
        for row in batch.select(self._declared.names).to_pylist():
            self._tfrecord.write(tfrecord_frame(to_example_bytes(row, self._declared)))

    def close(self) -> None:
        self._parquet.close()
        self._parquet_file.close()
        self._tfrecord.close()


def _write_text(path: str, text: str) -> None:
    with FileSystems.create(path, mime_type="application/json") as f:
        f.write(text.encode("utf-8"))


def _rows_per_part(sources: Sequence[str], columns: Sequence[str]) -> Dict[Key, int]:
    """{part: rows} over the run's shards (only the scheme columns are read)."""
    counted: Dict[Key, int] = collections.Counter()
    for path in sources:
        with open_parquet(path) as parquet:
            table = parquet.read(columns=list(columns))
        if table.num_rows == 0:
            continue
        grouped = table.group_by(list(columns)).aggregate([([], "count_all")]).to_pydict()
        for i, n in enumerate(grouped["count_all"]):
            counted[tuple(grouped[c][i] for c in columns)] += n
    return dict(counted)


def _mask(data, columns: Sequence[str], key: Key):
    mask = None
    for column, value in zip(columns, key):
        equal = pc.equal(data.column(column), pa.scalar(value, data.schema.field(column).type))
        mask = equal if mask is None else pc.and_(mask, equal)
    return mask
