"""README.md: the release folder as a Hugging Face dataset (every benchmark).

`datasets.load_dataset("<release>")` reads the dataset card's YAML front matter, as on a
Hub dataset repository: one config per table and split scheme, each split listing its
Parquet files (pipelines/release/write/split_files.py wrote one set of files per split), so a load
yields exactly the release's splits and rows and never guesses from the other files of
the folder (compat/ JSON Lines, CSVs, TFRecords). The benchmark's main table is the
default config, so a load needs no config name; `dataset_info` declares each config's
features from the table's schema (schemas/columns.py): a categorical integer column is a
`ClassLabel`, a column of images the release embeds is an `Image` (or a list of them),
so both decode without a line of this project's code:

    ---
    pretty_name: VSR (Liu et al. 2023) 1.0.0
    license: apache-2.0
    language: [en]                     # the benchmark's CardFacts
    task_categories: [visual-question-answering, image-text-to-text]
    size_categories: [10K<n<100K]      # the main table's rows, in the Hub's buckets
    configs:
    - config_name: examples            # the table's main scheme (its `split` column)
      default: true                    # the benchmark's main table
      data_files:
      - split: train
        path: [parquet/examples/train.none-00000-of-00001.parquet, ...]
    - config_name: examples_zeroshot   # a second scheme: <table>_<scheme name>
      ...
    dataset_info:
    - config_name: examples
      features:
      - {name: label, dtype: {class_label: {names: {'0': 'False', '1': 'True'}}}}
      ...
      splits:                          # rows per split, as partition_table wrote them
      - {name: train, num_bytes: 0, num_examples: 7680}
      ...
    ---
    # vsr 1.0.0     (a generated sample says so here; then how to load it, every
                     column's description, the license, the citation, DATACARD.md's text)

Only splits that have rows are declared (an empty split cannot be loaded), and a table
without rows gets no config. Every figure is the count partition_table kept while writing
the files (`Partitioned.rows`), never counted again; `load_dataset` checks each split's
`num_examples` against the rows it reads. `num_bytes` (the size of the split as Arrow
data, which depends on the reader's `datasets`) is not known at build time: it is 0,
`datasets`' own value for a size not recorded, and no load checks it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa
import yaml
from apache_beam.io.filesystems import FileSystems

from pipelines.release.write.split_files import Partitioned, SplitScheme, config_name, scheme_split_parts
from schemas.columns import class_names_of, description
from schemas.layout import PARQUET_DIR

README = "README.md"
# datasets.splits: a split name is words joined by dots
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
# train first, then the held-out splits, as a reader expects them
_SPLIT_ORDER = ("train", "validation", "valid", "val", "dev", "test")
# The Hub's task categories (huggingface.js tasks) that a vision-and-language or text
# benchmark may declare; a CardFacts naming another one is a mistake caught at import.
TASK_CATEGORIES = frozenset({
    "image-text-to-text", "visual-question-answering", "image-to-text", "text-to-image",
    "zero-shot-image-classification", "image-classification", "image-feature-extraction",
    "visual-document-retrieval", "document-question-answering", "text-classification",
    "multiple-choice", "question-answering", "zero-shot-classification",
    "sentence-similarity", "text-retrieval", "text-ranking", "feature-extraction",
    "text-generation", "other"})
# The Hub's size_categories buckets: (rows below which it applies, its name)
SIZE_CATEGORIES = ((10 ** 3, "n<1K"), (10 ** 4, "1K<n<10K"), (10 ** 5, "10K<n<100K"),
                   (10 ** 6, "100K<n<1M"), (10 ** 7, "1M<n<10M"), (10 ** 8, "10M<n<100M"),
                   (10 ** 9, "100M<n<1B"), (10 ** 10, "1B<n<10B"), (10 ** 11, "10B<n<100B"),
                   (10 ** 12, "100B<n<1T"))
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")   # an ISO 639-1 (or -3) code, as the Hub wants


@dataclass(frozen=True)
class CardFacts:
    """What a benchmark's dataset card says beside its tables (its datacard.py): the main
    table (the default config), the license of the public data the benchmark re-creates
    (a Hub license id, and where it was read), the paper's BibTeX, and the Hub tags
    `language` and `task_categories` (`size_categories` is counted from the build)."""
    main_table: str
    license: str             # "apache-2.0", "mit", "unknown", ...
    license_source: str      # e.g. "LICENSE of github.com/cambridgeltl/visual-spatial-reasoning"
    citation: str            # BibTeX of the paper
    language: Tuple[str, ...]          # ISO 639-1 codes of its text: ("en",)
    task_categories: Tuple[str, ...]   # from TASK_CATEGORIES
    homepage: str = ""

    def __post_init__(self):
        bad = [code for code in self.language if not _LANGUAGE.match(code)]
        if not self.language or bad:
            raise ValueError(f"CardFacts.language: {list(self.language)} is not a non-empty "
                             "list of ISO 639-1 codes")
        unknown = sorted(set(self.task_categories) - TASK_CATEGORIES)
        if not self.task_categories or unknown:
            raise ValueError(f"CardFacts.task_categories: {unknown or 'none'}; the Hub's "
                             f"categories are {sorted(TASK_CATEGORIES)}")


def size_category(rows: int) -> str:
    """The Hub's size_categories bucket of a table of `rows` rows."""
    return next((name for below, name in SIZE_CATEGORIES if rows < below), "n>1T")


def hf_configs(schemes: Mapping[str, Sequence[SplitScheme]],
               partitions: Mapping[str, Partitioned], default: Optional[str] = None) -> List[dict]:
    """The `configs:` list: per table and scheme, its splits and their files; the main
    scheme of table `default` is marked the default config, or, when that table has no
    rows in this build (ImageCoDe built without crowd answers has no descriptions), the
    first config, so that a load still needs no config name."""
    configs = []
    for table, table_schemes in schemes.items():
        partitioned = partitions[table]
        for scheme in table_schemes:
            parts = scheme_split_parts(scheme, partitioned)
            if not parts:
                continue
            for split in parts:
                if not _SPLIT_NAME.match(split):
                    raise ValueError(f"parquet/{table}: {split!r} (column {scheme.column}) "
                                     "is not a split name datasets accepts")
            config = {"config_name": config_name(table, scheme)}
            if table == default and not scheme.name:
                config["default"] = True
            config["data_files"] = [
                {"split": split, "path": sorted(f"{PARQUET_DIR}/{table}/{name}"
                                                for key in parts[split]
                                                for name in partitioned.files[key])}
                for split in sorted(parts, key=_split_rank)]
            configs.append(config)
    if default is not None and configs and not any(c.get("default") for c in configs):
        configs[0]["default"] = True
    return configs


def split_rows(schemes: Mapping[str, Sequence[SplitScheme]],
               partitions: Mapping[str, Partitioned]) -> Dict[str, Dict[str, int]]:
    """{config: {split: rows}}: what load_dataset yields for each config."""
    out: Dict[str, Dict[str, int]] = {}
    for table, table_schemes in schemes.items():
        partitioned = partitions[table]
        for scheme in table_schemes:
            parts = scheme_split_parts(scheme, partitioned)
            if parts:
                out[config_name(table, scheme)] = {
                    split: sum(partitioned.rows[key] for key in parts[split])
                    for split in sorted(parts, key=_split_rank)}
    return out


def _split_rank(split: str) -> Tuple[int, str]:
    return (_SPLIT_ORDER.index(split) if split in _SPLIT_ORDER else len(_SPLIT_ORDER), split)


# --- features --------------------------------------------------------------------------

_VALUES = {pa.string(): "string", pa.large_string(): "large_string", pa.int64(): "int64",
           pa.int32(): "int32", pa.float64(): "float64", pa.float32(): "float32",
           pa.bool_(): "bool", pa.binary(): "binary"}


def feature(field: pa.Field) -> dict:
    """One column as a `dataset_info.features` entry (datasets' YAML form)."""
    out = {"name": field.name}
    names = class_names_of(field)
    if names is not None:
        out["dtype"] = {"class_label": {"names": {str(i): n for i, n in enumerate(names)}}}
        return out
    kind = field.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        out["list"] = _dtype(field.name, kind.value_type)
    else:
        out["dtype"] = _dtype(field.name, kind)
    return out


def _dtype(name: str, kind: pa.DataType) -> str:
    if _is_image(kind):
        return "image"
    if kind not in _VALUES:
        raise TypeError(f"column {name}: no dataset feature for {kind}")
    return _VALUES[kind]


def _is_image(kind: pa.DataType) -> bool:
    return pa.types.is_struct(kind) and sorted(f.name for f in kind) == ["bytes", "path"]


def dataset_info(schemes: Mapping[str, Sequence[SplitScheme]],
                 partitions: Mapping[str, Partitioned]) -> List[dict]:
    """`dataset_info:` per config: the features of its table (every config of a table
    has the same ones) and the rows of each of its splits (num_bytes unknown: 0)."""
    infos = []
    rows = split_rows(schemes, partitions)
    for table, table_schemes in schemes.items():
        schema = partitions[table].schema
        for scheme in table_schemes:
            name = config_name(table, scheme)
            if name in rows and schema is not None:
                infos.append({"config_name": name, "features": [feature(f) for f in schema],
                              "splits": [{"name": split, "num_bytes": 0, "num_examples": n}
                                         for split, n in rows[name].items()]})
    return infos


# --- the card --------------------------------------------------------------------------

def render_readme(title: str, configs: List[dict], rows: Dict[str, Dict[str, int]],
                  datacard: str, *, infos: Sequence[dict] = (),
                  schemas: Mapping[str, pa.Schema] = (), facts: Optional[CardFacts] = None,
                  generated: str = "", main_rows: Optional[int] = None) -> str:
    """Front matter, how to load each config, the columns, license and citation, then
    the data card's text. `generated`: the sentence that says the inputs were generated
    (a sample build), shown first; `main_rows`: the rows of the main table, whose bucket
    is the card's size_categories."""
    front = {"pretty_name": title + (" (built from generated sample data)" if generated else "")}
    if facts is not None:
        front["license"] = facts.license
        front["language"] = list(facts.language)
        front["task_categories"] = list(facts.task_categories)
    if main_rows is not None:
        front["size_categories"] = [size_category(main_rows)]
    front["configs"] = configs
    if infos:
        front["dataset_info"] = list(infos)
    text = yaml.safe_dump(front, sort_keys=False, default_flow_style=False, allow_unicode=True)
    default = next((c["config_name"] for c in configs if c.get("default")), None)
    lines = []
    if generated:
        lines += [generated, ""]
    lines += ["## Loading", "",
              "Every table is a config of this folder, as a Hugging Face dataset (the YAML "
              "above lists each split's Parquet files and declares each column's feature):",
              "", "```python", "import datasets"]
    if default:
        lines.append(f'ds = datasets.load_dataset("<this folder>")  # the default config, '
                     f"{default}: " + ", ".join(f"{s} {n}" for s, n in rows[default].items()))
    for config in configs:
        name = config["config_name"]
        lines.append(f'{name} = datasets.load_dataset("<this folder>", "{name}")  # '
                     + ", ".join(f"{split} {n}" for split, n in rows[name].items()))
    lines += ["```", "", "The same tables with pandas: "
              '`pandas.read_parquet("<this folder>/parquet/<table>")` (the `split` column '
              "says which split a row is in); with tf.data: the records and the feature spec in "
              "`tfrecord/<table>/` (its `features.json` lists each split's files).", ""]
    lines += _columns_section(schemas)
    if facts is not None:
        lines += _license_section(facts) + _citation_section(facts)
    lines += ["The data card (also in DATACARD.md) follows.", ""]
    title_line, _, body = datacard.partition("\n")
    if generated:   # said once, first
        body = body.replace("\n" + generated.strip() + "\n", "", 1)
    return f"---\n{text}---\n{title_line}\n\n" + "\n".join(lines) + body


def _columns_section(schemas: Mapping[str, pa.Schema]) -> List[str]:
    lines = []
    for table, schema in dict(schemas).items():
        if schema is None:
            continue
        lines += [f"## Columns: {table}", "", "| column | type | description |", "|---|---|---|"]
        for field in schema:
            names = class_names_of(field)
            kind = _type_name(field.type)
            if names is not None:
                kind += " (class label: " + ", ".join(f"{i} {n}" for i, n in enumerate(names)) + ")"
            lines.append(f"| `{field.name}` | {kind} | "
                         + description(field).replace("|", "\\|").replace("\n", " ") + " |")
        lines.append("")
    return lines


def _type_name(kind: pa.DataType) -> str:
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return "list of " + ("images" if _is_image(kind.value_type) else _type_name(kind.value_type))
    if _is_image(kind):
        return "image"
    return _VALUES.get(kind, str(kind))


def _license_section(facts: CardFacts) -> List[str]:
    return ["## License", "", f"`{facts.license}`: {facts.license_source}", ""]


def _citation_section(facts: CardFacts) -> List[str]:
    lines = ["## Citation", ""]
    if facts.homepage:
        lines += [f"Homepage: {facts.homepage}", ""]
    return lines + ["```bibtex", facts.citation.strip(), "```", ""]


def write_readme(staging: str, title: str, schemes: Mapping[str, Sequence[SplitScheme]],
                 partitions: Mapping[str, Partitioned], datacard: str,
                 facts: Optional[CardFacts] = None, generated: str = "") -> str:
    """Write `<staging>/README.md`; returns its path."""
    path = FileSystems.join(staging, README)
    default = facts.main_table if facts is not None else None
    main_rows = (sum(partitions[default].rows.values())
                 if default is not None and default in partitions else None)
    text = render_readme(title, hf_configs(schemes, partitions, default),
                         split_rows(schemes, partitions), datacard,
                         infos=dataset_info(schemes, partitions),
                         schemas={t: partitions[t].schema for t in schemes},
                         facts=facts, generated=generated, main_rows=main_rows)
    with FileSystems.create(path, mime_type="text/markdown",
                            compression_type="uncompressed") as f:
        f.write(text.encode("utf-8"))
    return path
