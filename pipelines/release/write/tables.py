"""A release table as a benchmark declares it (pipelines/benchmark.py, `tables(plan)`):
the counter its rows must equal, and the columns that identify one row, its key.

    Table("validation", "example.out", key="example_id")
    Table("rounds", "answer.out", key=("example_id", "split_scheme"))   # a composite key
    Table("video_sets", "set.out", key="set_name", rows_per_shard=500)  # files of 500 rows

The key is how two versions of a release are compared (pipelines/release/check/diff.py: a row
of the old version and a row of the new one are the same row when their keys are equal)
and how the explorer names a row's card. It is declared, never guessed: a table declared
without one is an error of the contract before any work, a key column the written table
lacks or a key value shared by two rows fails the build before the version exists (the
diff would pair the wrong rows), and the manifest records every key ("table_keys") so
that `diff` reads it from the releases themselves.

The key is also the order of the rows in every file of the table, and its hash decides
which file of a split holds a row; `rows_per_shard` sets how many files a split gets
(pipelines/release/write/order.py: the runner's shards leave no trace in a release).
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from apache_beam.io.filesystems import FileSystems

from pipelines.release.write.manifest import parquet_column_names, read_parquet_columns
from schemas.layout import PARQUET_DIR

MANIFEST_KEYS = "table_keys"   # MANIFEST.json: {table: [key column, ...]}


class ContractError(TypeError):
    """A benchmark does not keep the contract of pipelines/benchmark.py: a bug in its
    code, not bad input (the command ends with exit code 1)."""


@dataclass(frozen=True)
class Table:
    """One table under parquet/: its row count must equal counter `counter` of stage
    `stage`; `key` names the column (or columns, in order) whose values identify a row and
    order the rows of each file; `rows_per_shard` the most rows of one split in one file
    (None: pipelines/release/write/order.py's default, less for a table that embeds images)."""
    stage: str
    counter: str
    key: Union[str, Tuple[str, ...]]
    rows_per_shard: Optional[int] = None

    def __post_init__(self):
        key = (self.key,) if isinstance(self.key, str) else tuple(self.key or ())
        if not key or not all(isinstance(c, str) and c for c in key) or len(set(key)) < len(key):
            raise ContractError(f"a table's key names one column or more, each once; got {self.key!r}")
        object.__setattr__(self, "key", key)
        per_shard = self.rows_per_shard
        if per_shard is not None and (isinstance(per_shard, bool) or not isinstance(per_shard, int)
                                      or per_shard < 1):
            raise ContractError(f"a table's rows_per_shard is a whole number >= 1 or None; "
                                f"got {per_shard!r}")


def declared(tables: Mapping[str, object]) -> Dict[str, Table]:
    """`tables` as the contract wants them, every one a Table with its key; anything else
    (the (stage, counter) pair of old) is a ContractError naming the table."""
    for name, table in tables.items():
        if not isinstance(table, Table):
            raise ContractError(
                f"table {name!r} is declared as {table!r}: declare it as "
                "pipelines.release.write.tables.Table(stage, counter, key=...), naming the columns "
                "that identify its rows (the release diff never guesses a key)")
    return dict(tables)


def key_problems(release_dir: str, tables: Mapping[str, Table]) -> List[str]:
    """What is wrong with the written tables' keys: a key column the table lacks, key
    values shared by more than one row. Empty when every key identifies one row."""
    problems = []
    for name, table in tables.items():
        folder = FileSystems.join(release_dir, PARQUET_DIR, name)
        columns = parquet_column_names(folder)
        if not columns:   # no file at all: no row to identify (the counts check the rest)
            continue
        missing = [c for c in table.key if c not in columns]
        if missing:
            problems.append(f"parquet/{name}/ has no column {', '.join(missing)} of its "
                            f"declared key ({', '.join(table.key)})")
            continue
        keys = row_keys(read_parquet_columns(folder, list(table.key)), table.key)
        try:
            shared = collections.Counter(keys)
        except TypeError:   # a list or map column cannot tell rows apart by equality
            problems.append(f"parquet/{name}/: its key ({', '.join(table.key)}) holds "
                            "lists or maps; a key is made of scalar columns")
            continue
        repeated = sorted((key for key, n in shared.items() if n > 1), key=sort_key)
        if repeated:
            problems.append(f"parquet/{name}/: {len(repeated)} value(s) of its key "
                            f"({', '.join(table.key)}) name more than one row, e.g. "
                            f"{key_text(repeated[0])!r} ({shared[repeated[0]]} rows)")
    return problems


def row_keys(rows: Mapping[str, list], key: Sequence[str]) -> List[tuple]:
    """The key of every row of columns read with read_parquet_columns, in row order."""
    return list(zip(*(rows[c] for c in key)))


def key_text(values: Sequence) -> str:
    """A row's key as the diff prints it and the explorer names its card: the value, or
    the values of a composite key joined by " / "."""
    return " / ".join("" if v is None else str(v) for v in values)


def sort_key(values: Sequence) -> tuple:
    """Orders keys of mixed or missing values without comparing an int with a str."""
    return tuple((v is None, type(v).__name__, v if v is not None else 0) for v in values)
