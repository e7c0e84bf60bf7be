"""A release table's splits as files of their own, in Parquet and TFRecord (every benchmark).

A table holds its split in a column (`split`: train/dev/test, ...), and some tables hold a
second split scheme beside it (VSR's concept zero-shot split in `zeroshot_split`, BD2BB's
hard test in `hard_test`). Tools that select data by file - Hugging Face `datasets`
(`configs:` with `data_files` per split, pipelines/release/hf_card.py) and tf.data above
all - need each split in files of its own. So after the run the driver rewrites each
table's shards partitioned by the values of all its scheme columns, in both formats:

    parquet/<table>/<table>-00000-of-00002.parquet   (Beam's shards, splits mixed)
 -> parquet/<table>/<part>-0000j-of-0000k.parquet    (one file per source shard holding
    tfrecord/<table>/<part>-0000j-of-0000k.tfrecord   rows of that part, k of them)
    tfrecord/<table>/features.json                   (the feature spec and each split's files)

where `<part>` names the values of the scheme columns ("train", or "train.test" for VSR:
random train, zero-shot test). Rows, their fields and their number do not change, only
which file holds them - but for the path columns the release rewrites on the way
(pipelines/release/row_paths.py: input paths made relative to the input root, images
embedded). The TFRecord files hold one tf.train.Example per row, the same rows as the
Parquet file of the same name, with the declared columns (not the embedded images: their
paths are there). A source shard is read in batches, so memory stays bounded by a batch,
whatever shape Beam chose for a large table.
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
                    rewrite: Optional[Callable[[pa.Schema], object]] = None) -> Partitioned:
    """Rewrite `<staging>/parquet/<table>/` as one set of shards per part, and write the
    same rows as `<staging>/tfrecord/<table>/` (see above). `rewrite(schema)` gives what
    rewrites each batch on the way (a pipelines.release.row_paths.RowPaths, made from the
    schema the pipeline wrote); None: rows as read."""
    folder = FileSystems.join(staging, PARQUET_DIR, table)
    records = FileSystems.join(staging, TFRECORD_DIR, table)
    columns = scheme_columns(schemes)
    sources = sorted(m.path for m in FileSystems.match(
        [FileSystems.join(folder, "*.parquet")])[0].metadata_list)
    keys_of = [_keys_in(path, columns) for path in sources]
    shards_of: Dict[Key, List[int]] = collections.defaultdict(list)
    for index, keys in enumerate(keys_of):
        for key in keys:
            shards_of[key].append(index)
    names = {key: part_name(columns, key) for key in shards_of}
    if len(set(names.values())) != len(names):
        raise ValueError(f"parquet/{table}: two parts share a file name: {sorted(names.values())}")
    source_names = {FileSystems.split(p)[1] for p in sources}
    files: Dict[Key, List[str]] = collections.defaultdict(list)
    counted: Dict[Key, int] = collections.Counter()
    schema = released = None
    for index, path in enumerate(sources):
        stems = {key: f"{names[key]}-{shards_of[key].index(index):05d}-of-{len(shards_of[key]):05d}"
                 for key in keys_of[index]}
        for stem in stems.values():
            if f"{stem}.parquet" in source_names:
                raise ValueError(f"parquet/{table}/{stem}.parquet would overwrite a shard of the run")
        schema, released = _rewrite_shard(path, folder, records, columns, stems, counted, rewrite)
        for key, stem in stems.items():
            files[key].append(f"{stem}.parquet")
    if shards_of:
        FileSystems.delete(sources)
    elif sources:   # a table without rows keeps one empty shard: its schema
        schema = _schema_of(sources[0])
        released = rewrite(schema).released_schema if rewrite else schema
        FileSystems.delete(sources)
        stem = FileSystems.split(sources[0])[1][:-len(".parquet")]
        out = _PartFiles(FileSystems.join(folder, f"{stem}.parquet"),
                         FileSystems.join(records, f"{stem}.tfrecord"), released, schema, "NONE")
        out.close()
    partitioned = Partitioned(columns, {k: sorted(v) for k, v in files.items()}, dict(counted),
                              released)
    if schema is not None:
        _write_text(FileSystems.join(records, FEATURES), json.dumps(
            features_file(table, schema, schemes, partitioned), indent=1, sort_keys=True) + "\n")
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


def _rewrite_shard(path: str, folder: str, records: str, columns: Sequence[str],
                   stems: Mapping[Key, str], counted: Dict[Key, int],
                   rewrite) -> Tuple[pa.Schema, pa.Schema]:
    """Write the rows of one source shard into the Parquet and TFRecord files of each of
    its parts (`stems`), batch by batch; returns the declared schema (the TFRecord's) and
    the released one (the Parquet's)."""
    with open_parquet(path) as parquet:
        declared = parquet.schema_arrow
        codec = (parquet.metadata.row_group(0).column(0).compression
                 if parquet.metadata.num_row_groups else "UNCOMPRESSED")
        compression = "NONE" if codec == "UNCOMPRESSED" else codec
        rows = rewrite(declared) if rewrite else None
        released = rows.released_schema if rows is not None else declared
        step = IMAGE_BATCH_ROWS if rows is not None and rows.images else BATCH_ROWS
        outputs = {key: _PartFiles(FileSystems.join(folder, f"{stem}.parquet"),
                                   FileSystems.join(records, f"{stem}.tfrecord"),
                                   released, declared, compression)
                   for key, stem in stems.items()}
        try:
            for batch in parquet.iter_batches(batch_size=step):
                if rows is not None:
                    batch = rows(batch)
                for key, out in outputs.items():
                    part = batch.filter(_mask(batch, columns, key))
                    if part.num_rows:
                        out.write(part)
                        counted[key] += part.num_rows
        finally:
            for out in outputs.values():
                out.close()
    return declared, released


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


def _keys_in(path: str, columns: Sequence[str]) -> List[Key]:
    """The parts a shard holds rows of (its scheme columns only are read)."""
    with open_parquet(path) as parquet:
        table = parquet.read(columns=list(columns))
    if table.num_rows == 0:
        return []
    grouped = table.group_by(list(columns)).aggregate([]).to_pydict()
    return [tuple(grouped[c][i] for c in columns) for i in range(len(grouped[columns[0]]))]


def _mask(data, columns: Sequence[str], key: Key):
    mask = None
    for column, value in zip(columns, key):
        equal = pc.equal(data.column(column), pa.scalar(value, data.schema.field(column).type))
        mask = equal if mask is None else pc.and_(mask, equal)
    return mask
