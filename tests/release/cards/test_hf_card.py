"""A table's splits as files of their own (pipelines/release/write/split_files.py) and the dataset
card that lists them (pipelines/release/cards/hf_card.py), on small hand-made tables."""
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from pipelines.release.cards.hf_card import CardFacts, hf_configs, size_category, split_rows, write_readme
from pipelines.release.write.split_files import MAIN, SplitScheme, partition_table

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False),
                    pa.field("split", pa.string(), nullable=False),
                    pa.field("zeroshot_split", pa.string(), nullable=False),
                    pa.field("hard", pa.bool_(), nullable=False)])
ZEROSHOT = SplitScheme("zeroshot_split", "zeroshot")
HARD = SplitScheme("hard", "hard", {True: "test"})


def write_shards(staging, table, shards):
    folder = os.path.join(staging, "parquet", table)
    os.makedirs(folder)
    for i, rows in enumerate(shards):
        data = pa.Table.from_pylist(rows, schema=SCHEMA)
        pq.write_table(data, os.path.join(folder, f"{table}-{i:05d}-of-{len(shards):05d}.parquet"),
                       compression="NONE")
    return folder


def row(i, split, zeroshot="", hard=False):
    return {"id": str(i), "split": split, "zeroshot_split": zeroshot, "hard": hard}


def rows_of(folder, names):
    return sorted(json.dumps(r, sort_keys=True) for n in names
                  for r in pq.read_table(os.path.join(folder, n)).to_pylist())


def test_each_part_gets_files_of_its_own_and_no_row_changes(tmp_path):
    shards = [[row(1, "train", "test"), row(2, "dev"), row(3, "train", "test")],
              [row(4, "train", "test"), row(5, "test", "train", True)], []]
    folder = write_shards(str(tmp_path), "examples", shards)
    before = sorted(json.dumps(r, sort_keys=True) for s in shards for r in s)
    parts = partition_table(str(tmp_path), "examples", MAIN + (ZEROSHOT,))
    assert parts.files == {("train", "test"): ["train.test-00000-of-00001.parquet"],   # 3 rows: 1 file
                           ("dev", ""): ["dev.none-00000-of-00001.parquet"],
                           ("test", "train"): ["test.train-00000-of-00001.parquet"]}
    assert sorted(os.listdir(folder)) == sorted(n for names in parts.files.values() for n in names)
    assert rows_of(folder, os.listdir(folder)) == before
    assert pq.read_schema(os.path.join(folder, "dev.none-00000-of-00001.parquet")) == SCHEMA
    assert parts.rows == {("train", "test"): 3, ("dev", ""): 1, ("test", "train"): 1}


def test_the_card_declares_each_scheme_and_only_splits_with_rows(tmp_path):
    write_shards(str(tmp_path), "samples", [[row(1, "train"), row(2, "test", hard=True), row(3, "test")]])
    schemes = {"samples": MAIN + (HARD,)}
    parts = {"samples": partition_table(str(tmp_path), "samples", schemes["samples"])}
    configs = hf_configs(schemes, parts)
    assert configs == [
        {"config_name": "samples", "data_files": [
            {"split": "train", "path": ["parquet/samples/train.not_hard-00000-of-00001.parquet"]},
            {"split": "test", "path": ["parquet/samples/test.hard-00000-of-00001.parquet",
                                       "parquet/samples/test.not_hard-00000-of-00001.parquet"]}]},
        {"config_name": "samples_hard", "data_files": [
            {"split": "test", "path": ["parquet/samples/test.hard-00000-of-00001.parquet"]}]}]
    assert split_rows(schemes, parts) == {"samples": {"train": 1, "test": 2}, "samples_hard": {"test": 1}}
    path = write_readme(str(tmp_path), "demo 1.0.0", schemes, parts, "# demo 1.0.0\n\nThe card.\n")
    text = open(path, encoding="utf-8").read()
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["configs"] == configs and front["pretty_name"] == "demo 1.0.0"
    assert '"samples_hard")  # test 1' in text and text.endswith("The card.\n")


def test_a_table_without_rows_keeps_its_empty_shard_and_gets_no_config(tmp_path):
    folder = write_shards(str(tmp_path), "pairs", [[]])
    parts = {"pairs": partition_table(str(tmp_path), "pairs", MAIN)}
    assert os.listdir(folder) == ["pairs-00000-of-00001.parquet"]
    assert hf_configs({"pairs": MAIN}, parts) == []


def test_without_rows_of_the_main_table_the_first_config_is_the_default(tmp_path):
    """ImageCoDe built without crowd answers has no descriptions: a load still needs no
    config name."""
    write_shards(str(tmp_path), "pairs", [[row(1, "train")]])
    write_shards(str(tmp_path), "samples", [[]])
    schemes = {"samples": MAIN, "pairs": MAIN}
    parts = {t: partition_table(str(tmp_path), t, MAIN) for t in schemes}
    assert [(c["config_name"], c.get("default")) for c in hf_configs(schemes, parts, "samples")] == [
        ("pairs", True)]
    write_shards(str(tmp_path), "more", [[row(2, "train")]])
    schemes["more"] = MAIN
    parts["more"] = partition_table(str(tmp_path), "more", MAIN)
    assert [(c["config_name"], c.get("default")) for c in hf_configs(schemes, parts, "more")] == [
        ("pairs", None), ("more", True)]


def test_a_value_that_is_no_split_name_fails(tmp_path):
    write_shards(str(tmp_path), "t", [[row(1, "held out")]])
    parts = {"t": partition_table(str(tmp_path), "t", MAIN)}
    with pytest.raises(ValueError, match="not a split name"):
        hf_configs({"t": MAIN}, parts)


def test_each_part_gets_a_tfrecord_file_with_the_same_rows_and_a_feature_spec(tmp_path):
    from schemas.tfexample import iter_tfrecord_file, parse_example_bytes
    shards = [[row(1, "train", "test"), row(2, "dev")], [row(3, "train", "test")]]
    write_shards(str(tmp_path), "examples", shards)
    parts = partition_table(str(tmp_path), "examples", MAIN + (ZEROSHOT,), key=("id",),
                            rows_per_shard=1)   # a file per row: a split of two files
    records = tmp_path / "tfrecord" / "examples"
    for key, names in parts.files.items():
        for parquet, tfrecord in zip(names, parts.tfrecords(key)):
            rows = pq.read_table(tmp_path / "parquet" / "examples" / parquet).to_pylist()
            parsed = [parse_example_bytes(r, SCHEMA) for r in iter_tfrecord_file(str(records / tfrecord))]
            assert parsed == [dict(r, hard=int(r["hard"])) for r in rows]
    spec = json.loads((records / "features.json").read_text())
    assert spec["features"]["hard"] == {"dtype": "int64", "list": False, "description": ""}
    assert spec["splits"] == {
        "examples": {"train": ["train.test-00000-of-00002.tfrecord", "train.test-00001-of-00002.tfrecord"],
                     "dev": ["dev.none-00000-of-00001.tfrecord"]},
        "examples_zeroshot": {"test": ["train.test-00000-of-00002.tfrecord",
                                       "train.test-00001-of-00002.tfrecord"]}}


def test_the_card_declares_features_a_default_config_license_and_citation(tmp_path):
    from pipelines.release.cards.hf_card import CardFacts, dataset_info
    from pipelines.release.write.locations import Relocate
    from pipelines.release.write.row_paths import RowPaths
    from schemas.columns import described

    schema = described(pa.schema([pa.field("id", pa.string()), pa.field("split", pa.string()),
                                  pa.field("label", pa.int64()),
                                  pa.field("image_paths", pa.list_(pa.string()))]),
                       {"id": "the row's id", "split": "its split", "label": "true or not",
                        "image_paths": "its images"},
                       class_names={"label": ("False", "True")}, images={"image_paths": "images"})
    folder = tmp_path / "parquet" / "rows"
    folder.mkdir(parents=True)
    (tmp_path / "compat").mkdir()
    (tmp_path / "compat" / "a.jpg").write_bytes(b"jpeg")
    pq.write_table(pa.Table.from_pylist([{"id": "1", "split": "train", "label": 1,
                                          "image_paths": ["compat/a.jpg"]}], schema=schema),
                   folder / "rows-00000-of-00001.parquet")
    parts = {"rows": partition_table(str(tmp_path), "rows", MAIN, rewrite=lambda s: RowPaths(
        s, str(tmp_path), Relocate(None, [str(tmp_path)])))}
    assert dataset_info({"rows": MAIN}, parts) == [{"config_name": "rows", "features": [
        {"name": "id", "dtype": "string"}, {"name": "split", "dtype": "string"},
        {"name": "label", "dtype": {"class_label": {"names": {"0": "False", "1": "True"}}}},
        {"name": "image_paths", "list": "string"}, {"name": "images", "list": "image"}],
        "splits": [{"name": "train", "num_bytes": 0, "num_examples": 1}]}]
    facts = CardFacts(main_table="rows", license="mit", license_source="its LICENSE",
                      citation="@article{x,\n  title = {X},\n  year = {2020}\n}",
                      language=("en",), task_categories=("multiple-choice",))
    path = write_readme(str(tmp_path), "demo 1.0.0", {"rows": MAIN}, parts,
                        "# demo 1.0.0\n\nThe card.\n", facts=facts, generated="Generated.")
    text = open(path, encoding="utf-8").read()
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["license"] == "mit" and front["configs"][0]["default"] is True
    assert (front["language"], front["task_categories"], front["size_categories"]) == (
        ["en"], ["multiple-choice"], ["n<1K"])
    assert front["pretty_name"] == "demo 1.0.0 (built from generated sample data)"
    body = text.split("---\n", 2)[2]
    assert body.startswith("# demo 1.0.0\n\nGenerated.\n\n## Loading")
    assert "| `label` | int64 (class label: 0 False, 1 True) | true or not |" in body
    assert "| `images` | list of images | the images of `image_paths`" in body
    assert "## License\n\n`mit`: its LICENSE" in body and "```bibtex\n@article{x," in body


@pytest.mark.parametrize("rows, bucket", [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"),
                                          (12809, "10K<n<100K"), (10 ** 6, "1M<n<10M"),
                                          (10 ** 12, "n>1T")])
def test_size_category_is_the_hubs_bucket_of_the_row_count(rows, bucket):
    assert size_category(rows) == bucket


@pytest.mark.parametrize("tags", [dict(language=(), task_categories=("multiple-choice",)),
                                  dict(language=("English",), task_categories=("multiple-choice",)),
                                  dict(language=("en",), task_categories=()),
                                  dict(language=("en",), task_categories=("image-text-retrieval",))])
def test_card_facts_refuse_tags_the_hub_does_not_know(tags):
    with pytest.raises(ValueError, match="CardFacts"):
        CardFacts(main_table="rows", license="mit", license_source="-", citation="-", **tags)
