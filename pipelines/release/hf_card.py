"""README.md: the release folder as a Hugging Face dataset (every benchmark).

`datasets.load_dataset("<release>", "<config>")` reads the dataset card's YAML front
matter, as on a Hub dataset repository: one config per table and split scheme, each
split listing its Parquet files (pipelines/release/splits.py wrote one set of files per
split), so a load yields exactly the release's splits and rows and never guesses from
the other files of the folder (compat/ JSON Lines, CSVs, TFRecords):

    ---
    pretty_name: vsr 1.0.0
    configs:
    - config_name: examples            # the table's main scheme (its `split` column)
      data_files:
      - split: train
        path: [parquet/examples/train.none-00000-of-00001.parquet, ...]
    - config_name: examples_zeroshot   # a second scheme: <table>_<scheme name>
      ...
    ---
    # vsr 1.0.0            (then how to load it, then DATACARD.md's text)

Only splits that have rows are declared (an empty split cannot be loaded), and a table
without rows gets no config.
"""
from __future__ import annotations

import re
from typing import Dict, List, Mapping, Sequence, Tuple

import yaml
from apache_beam.io.filesystems import FileSystems

from pipelines.release.splits import Partitioned, SplitScheme
from schemas.layout import PARQUET_DIR

README = "README.md"
# datasets.splits: a split name is words joined by dots
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
# train first, then the held-out splits, as a reader expects them
_SPLIT_ORDER = ("train", "validation", "valid", "val", "dev", "test")


def config_name(table: str, scheme: SplitScheme) -> str:
    return f"{table}_{scheme.name}" if scheme.name else table


def hf_configs(schemes: Mapping[str, Sequence[SplitScheme]],
               partitions: Mapping[str, Partitioned]) -> List[dict]:
    """The `configs:` list: per table and scheme, its splits and their files."""
    configs = []
    for table, table_schemes in schemes.items():
        partitioned = partitions[table]
        for scheme in table_schemes:
            position = partitioned.columns.index(scheme.column)
            files: Dict[str, List[str]] = {}
            for key, names in partitioned.files.items():
                split = scheme.split_of(key[position])
                if split is None:
                    continue
                if not _SPLIT_NAME.match(split):
                    raise ValueError(f"parquet/{table}: {split!r} (column {scheme.column}) "
                                     "is not a split name datasets accepts")
                files.setdefault(split, []).extend(
                    f"{PARQUET_DIR}/{table}/{name}" for name in names)
            if not files:
                continue
            configs.append({
                "config_name": config_name(table, scheme),
                "data_files": [{"split": split, "path": sorted(files[split])}
                               for split in sorted(files, key=_split_rank)],
            })
    return configs


def split_rows(schemes: Mapping[str, Sequence[SplitScheme]],
               partitions: Mapping[str, Partitioned]) -> Dict[str, Dict[str, int]]:
    """{config: {split: rows}}: what load_dataset yields for each config."""
    out: Dict[str, Dict[str, int]] = {}
    for table, table_schemes in schemes.items():
        partitioned = partitions[table]
        for scheme in table_schemes:
            position = partitioned.columns.index(scheme.column)
            rows: Dict[str, int] = {}
            for key, n in partitioned.rows.items():
                split = scheme.split_of(key[position])
                if split is not None:
                    rows[split] = rows.get(split, 0) + n
            if rows:
                out[config_name(table, scheme)] = dict(sorted(rows.items(), key=lambda kv: _split_rank(kv[0])))
    return out


def _split_rank(split: str) -> Tuple[int, str]:
    return (_SPLIT_ORDER.index(split) if split in _SPLIT_ORDER else len(_SPLIT_ORDER), split)


def render_readme(title: str, configs: List[dict], rows: Dict[str, Dict[str, int]],
                  datacard: str) -> str:
    """Front matter, how to load each config, then the data card's text."""
    front = yaml.safe_dump({"pretty_name": title, "configs": configs},
                           sort_keys=False, default_flow_style=False, allow_unicode=True)
    lines = ["## Loading", "",
             "Every table is a config of this folder, as a Hugging Face dataset (the YAML "
             "above lists each split's Parquet files):", "", "```python",
             "import datasets"]
    for config in configs:
        name = config["config_name"]
        lines.append(f'{name} = datasets.load_dataset("<this folder>", "{name}")  # '
                     + ", ".join(f"{split} {n}" for split, n in rows[name].items()))
    lines += ["```", "", "The same tables with pandas: "
              '`pandas.read_parquet("<this folder>/parquet/<table>")` (the `split` column '
              "says which split a row is in). The data card (also in DATACARD.md) follows."]
    title_line, _, body = datacard.partition("\n")
    return f"---\n{front}---\n{title_line}\n\n" + "\n".join(lines) + "\n" + body


def write_readme(staging: str, title: str, schemes: Mapping[str, Sequence[SplitScheme]],
                 partitions: Mapping[str, Partitioned], datacard: str) -> str:
    """Write `<staging>/README.md`; returns its path."""
    path = FileSystems.join(staging, README)
    text = render_readme(title, hf_configs(schemes, partitions),
                         split_rows(schemes, partitions), datacard)
    with FileSystems.create(path, mime_type="text/markdown",
                            compression_type="uncompressed") as f:
        f.write(text.encode("utf-8"))
    return path
