"""A release table's splits as files of their own (every benchmark).

A table holds its split in a column (`split`: train/dev/test, ...), and some tables hold a
second split scheme beside it (VSR's concept zero-shot split in `zeroshot_split`, BD2BB's
hard test in `hard_test`). Tools that select data by file - Hugging Face `datasets`
(`configs:` with `data_files` per split, pipelines/release/hf_card.py) above all - need
each split in files of its own. So after the run the driver rewrites each table's shards
partitioned by the values of all its scheme columns:

    parquet/<table>/<table>-00000-of-00002.parquet   (Beam's shards, splits mixed)
 -> parquet/<table>/<part>-0000j-of-0000k.parquet    (one file per source shard holding
                                                      rows of that part, k of them)

where `<part>` names the values of the scheme columns ("train", or "train.test" for VSR:
random train, zero-shot test). Rows, their fields and their number do not change, only
which file holds them; one source shard is in memory at a time, so the shape Beam chose
for a large table stays. TFRecords keep Beam's shards (a split there is the `split`
feature).
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas.layout import PARQUET_DIR
from schemas.names import safe_name
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
    """What partition_table wrote: the files of each part and its rows."""
    columns: Tuple[str, ...]
    files: Dict[Key, List[str]]   # part -> file names (in the table's folder), sorted
    rows: Dict[Key, int]


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


def partition_table(staging: str, table: str, schemes: Sequence[SplitScheme]) -> Partitioned:
    """Rewrite `<staging>/parquet/<table>/` as one set of shards per part (see above)."""
    folder = FileSystems.join(staging, PARQUET_DIR, table)
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
    rows: Dict[Key, int] = collections.Counter()
    for index, path in enumerate(sources):
        data, compression = _read(path)
        for key in sorted(keys_of[index], key=repr):
            part = data.filter(_mask(data, columns, key))
            shards = shards_of[key]
            name = (f"{names[key]}-{shards.index(index):05d}-of-{len(shards):05d}.parquet")
            if name in source_names:
                raise ValueError(f"parquet/{table}/{name} would overwrite a shard of the run")
            with FileSystems.create(FileSystems.join(folder, name),
                                    mime_type="application/octet-stream") as f:
                pq.write_table(part, f, compression=compression)
            files[key].append(name)
            rows[key] += part.num_rows
    if shards_of:  # a table without rows keeps Beam's empty shard: its schema
        FileSystems.delete(sources)
    return Partitioned(columns, {k: sorted(v) for k, v in files.items()}, dict(rows))


def _keys_in(path: str, columns: Sequence[str]) -> List[Key]:
    """The parts a shard holds rows of (its scheme columns only are read)."""
    with open_parquet(path) as parquet:
        table = parquet.read(columns=list(columns))
    if table.num_rows == 0:
        return []
    grouped = table.group_by(list(columns)).aggregate([]).to_pydict()
    return [tuple(grouped[c][i] for c in columns) for i in range(len(grouped[columns[0]]))]


def _read(path: str) -> Tuple[pa.Table, str]:
    """A shard and the codec it was written with (kept: only the partitioning changes)."""
    with open_parquet(path) as parquet:
        codec = (parquet.metadata.row_group(0).column(0).compression
                 if parquet.metadata.num_row_groups else "UNCOMPRESSED")
        return parquet.read(), "NONE" if codec == "UNCOMPRESSED" else codec


def _mask(data: pa.Table, columns: Sequence[str], key: Key):
    mask = None
    for column, value in zip(columns, key):
        equal = pc.equal(data.column(column), pa.scalar(value, data.schema.field(column).type))
        mask = equal if mask is None else pc.and_(mask, equal)
    return mask
