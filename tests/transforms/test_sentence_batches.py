"""transforms/text/sentence_embed.py: a text's batch, and so its vector to the last bit,
does not depend on the order or the bundles the runner gives the actions in (Flink and
the in-process runner gave BD2BB's silhouette another last digit before: a
transformer's output moves by ~1e-7 with the batch a text is padded in)."""
import random
import zlib

import apache_beam as beam
import pytest
import numpy as np
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.text.sentence_embed import (EmbedActions, FixedBatches, SentenceEncoderSpec,
                                            encode, load_encoder)

ACTIONS = [(f"a{i:03d}", f"{verb} the {thing}") for i, (verb, thing) in enumerate(
    (v, t) for v in ("eat", "wash", "paint", "carry", "open the box and look at")
    for t in ("dog", "red car", "cake on the table", "door", "old wooden chair by the window"))]
ORDERS = [ACTIONS, ACTIONS[::-1], random.Random(7).sample(ACTIONS, len(ACTIONS))]


def _expected_batches(size, buckets):
    by_bucket = {}
    for key, text in ACTIONS:
        by_bucket.setdefault(zlib.crc32(key.encode("utf-8")) % buckets, []).append((key, text))
    return [tuple(sorted(pairs)[i:i + size]) for pairs in by_bucket.values()
            for i in range(0, len(pairs), size)]


def test_the_batches_are_made_from_the_actions_not_their_order():
    expected = _expected_batches(size=4, buckets=3)
    assert sorted(p for batch in expected for p in batch) == sorted(ACTIONS)
    for items in ORDERS:
        with TestPipeline() as p:
            batches = (p | beam.Create(items) | beam.Reshuffle()
                       | FixedBatches(size=4, buckets=3) | beam.Map(tuple))
            assert_that(batches, equal_to(expected))


@pytest.mark.slow
def test_the_vectors_are_the_same_to_the_last_bit_whatever_the_order():
    spec = SentenceEncoderSpec(batch_size=8)
    model = load_encoder(spec)
    expected = []
    for batch in _expected_batches(size=8, buckets=16):
        vectors = encode(model, [text for _, text in batch], len(batch))
        expected += [(key, vector.tobytes()) for (key, _), vector in zip(batch, vectors)]
    for items in ORDERS:
        with TestPipeline() as p:
            out = (p | beam.Create(items) | beam.Reshuffle() | EmbedActions(spec)
                   | beam.MapTuple(lambda key, vector: (key, np.asarray(vector, np.float32).tobytes())))
            assert_that(out, equal_to(expected))
