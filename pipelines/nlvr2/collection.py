"""The collection stages S1-S9 as one composite transform (interface; being written).

    out = p | CollectExamples(config.collection, seed=config.seed, staging_dir=staging)
    out[MAIN]      Example records (pipelines/nlvr2/schema.py), split and identifier set
    out[REJECTS]   schemas.rejects.Reject records of every collection stage
    out[<table>]   extra tables, each a PCollection of flat dict rows (collection_tables)
"""
from __future__ import annotations

import apache_beam as beam

from pipelines.nlvr2.collection_config import CollectionConfig


def collection_tables(config: CollectionConfig):
    """{table: (stage, counter)} of the extra tables CollectExamples hands back."""
    raise NotImplementedError("NLVR2 collection stages: not written yet")


def stage_links(config: CollectionConfig):
    """(stage, counter, stage, counter) links between the collection stages."""
    raise NotImplementedError("NLVR2 collection stages: not written yet")


class CollectExamples(beam.PTransform):
    def __init__(self, config: CollectionConfig, seed: int, staging_dir: str):
        super().__init__()
        self.config, self.seed, self.staging_dir = config, seed, staging_dir

    def expand(self, pbegin):
        raise NotImplementedError("NLVR2 collection stages: not written yet")
