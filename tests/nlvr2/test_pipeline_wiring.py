"""The collection branch of pipeline.py against the interface of pipelines/nlvr2/collection/collect.py
(CollectExamples, collection_tables, stage_links) and of tables.COLLECTION_SCHEMAS, with a
stand-in for the collection stages: collected examples with local images go through the same rules, figures
and release as released lines, and get hash files and a content leakage check. The real
collection stages replace the stand-in; this test then still holds for the wiring."""
import dataclasses
import json
import os

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from pipelines import build
from pipelines.nlvr2 import tables
from pipelines.nlvr2.collection import collect as collection
from pipelines.nlvr2.records import Example
from pipelines.release.write.tables import Table
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo

QUERIES = "queries"
QUERY_SCHEMA = pa.schema([pa.field("query", pa.string(), nullable=False),
                          pa.field("split", pa.string(), nullable=False),
                          pa.field("source", pa.string(), nullable=False)])


class _Collect(StageFn):
    stage, level = "standin", "example"

    def judge(self, example):
        if example.sentence == "rejected":
            yield self.reject("not_sampled", example.identifier)
            return
        yield example


class _Queries(StageFn):
    stage, level = "standin_queries", "query"

    def judge(self, row):
        yield row


class StandInCollect(beam.PTransform):
    """Two dev sets, one test1 set whose image is a copy of a dev image (content leakage)."""

    def __init__(self, config, seed, staging_dir):
        super().__init__()
        self.images = os.environ["NLVR2_TEST_IMAGES"]

    def expand(self, pbegin):
        examples = []
        for split, set_id, same in (("dev", 0, False), ("dev", 1, False), ("test1", 0, True)):
            for sentence_id in range(2):
                for pair in range(4):
                    label = (pair < 2) == (sentence_id == 0)
                    text = "True" if label else "False"
                    left = os.path.join(self.images, "shared.png" if same and pair == 0
                                        else f"{split}-{set_id}-{pair}-0.png")
                    examples.append(Example(
                        split=split, set_id=set_id, pair=pair, sentence_id=sentence_id,
                        sentence=f"S{set_id}.{sentence_id}", left_url=f"http://x/{split}/{set_id}/{pair}/l",
                        right_url=f"http://x/{split}/{set_id}/{pair}/r", writer="w1",
                        validation=(("v1", text),), label=label, synset="dog", query="two dogs1",
                        extra_validations=tuple((f"e{i}", text) for i in range(4)),
                        left_image=left, right_image=os.path.join(self.images, f"{split}-{set_id}-{pair}-1.png")))
        examples[3] = dataclasses.replace(examples[3], sentence="rejected")   # dev-0-3-0
        out = pbegin | "Examples" >> beam.Create(examples) | "Collect" >> stage_pardo(_Collect())
        queries = (pbegin | "Queries" >> beam.Create([{"query": "two dogs1", "split": "all",
                                                       "source": "standin"}])
                   | "Count queries" >> beam.ParDo(_Queries()))
        return {MAIN: out[MAIN], REJECTS: out[REJECTS], QUERIES: queries}


@pytest.fixture
def standin(monkeypatch, tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "images"
    folder.mkdir()
    for split, set_id in (("dev", 0), ("dev", 1), ("test1", 0)):
        for pair in range(4):
            for side in range(2):
                pixels = (rng.random((32, 32, 3)) * 255).astype("uint8")
                Image.fromarray(pixels).save(folder / f"{split}-{set_id}-{pair}-{side}.png")
    Image.open(folder / "dev-0-0-0.png").save(folder / "shared.png")
    monkeypatch.setenv("NLVR2_TEST_IMAGES", str(folder))
    monkeypatch.setattr(collection, "CollectExamples", StandInCollect)
    monkeypatch.setattr(collection, "collection_tables",
                        lambda config: {QUERIES: Table("standin_queries", "query.out", key="query")})
    monkeypatch.setattr(collection, "stage_links",
                        lambda config: [("standin", "example.out", "identifiers", "example.in")])
    monkeypatch.setattr(tables, "COLLECTION_SCHEMAS", {QUERIES: QUERY_SCHEMA})
    config = tmp_path / "collect.yaml"
    config.write_text("benchmark: nlvr2\nrules: {enforce: true}\n")
    return config


def test_collected_examples_get_the_same_release_plus_hashes(standin, tmp_path):
    release = build.build("nlvr2", ["--config", str(standin), "--output", str(tmp_path / "out"),
                                    "--version", "1.0.0"])
    rejects = pq.read_table(os.path.join(release, "rejects")).to_pylist()
    # the stand-in's reject, and the group it left with 3 examples is still within the rules
    assert [(r["stage"], r["reason"]) for r in rejects] == [("standin", "not_sampled")]
    examples = pq.read_table(os.path.join(release, "parquet", "examples")).to_pylist()
    assert len(examples) == 23 and {r["source"] for r in examples} == {"collection"}
    dev = open(os.path.join(release, "compat", "dev.json")).read().splitlines()
    assert [json.loads(x)["identifier"] for x in dev][:4] == ["dev-0-0-0", "dev-0-1-0", "dev-0-2-0", "dev-0-0-1"]
    hashes = json.load(open(os.path.join(release, "compat", "hashes", "test1_hashes.json")))
    dev_hashes = json.load(open(os.path.join(release, "compat", "hashes", "dev_hashes.json")))
    assert len(hashes) == 8 and len(dev_hashes) == 16
    assert hashes["test1-0-0-img0.png"] == dev_hashes["dev-0-0-img0.png"]
    leakage = {r["kind"]: r for r in json.load(open(os.path.join(release, "stats", "leakage.json")))}
    assert leakage["url"]["in_several_splits"] == 0
    assert leakage["ahash"]["in_several_splits"] == 1
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert manifest["leakage_check"]["image_contents_in_several_splits"] == 1
    assert manifest["reconciled"] is True
    assert pq.read_table(os.path.join(release, "parquet", QUERIES)).num_rows == 1
