"""VSR ingestion accounting: merged sources keep one example per id (never by arrival
order), every sampled pair is captioned or rejected, and the stage links see a lost
record whichever sources a build has."""
import json

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.config import load_config
from pipelines.vsr import pipeline as vsr
from pipelines.vsr import reasons
from pipelines.vsr.annotations import JoinVotes, MergeExamples, ReadCaptions
from pipelines.vsr.config import VsrConfig
from pipelines.vsr.records import Example, ImagePair, example_id
from schemas.coco import CocoImage
from tests.beam_testing import local_test_pipeline
from transforms.core.stage import MAIN, REJECTS, check_links, read_stage_counts, reconcile

CAPTION = "The cat is under the couch."
EID = example_id("1.jpg", CAPTION)


def _example(writer: str, label: int, pair_id=None) -> Example:
    return Example(example_id=EID, image="1.jpg", image_link="http://x/train2017/1.jpg",
                   caption=CAPTION, label=label, relation="under", subj="cat", obj="couch",
                   annotator_id=writer, source="train2017", pair_id=pair_id)


OTHER = Example(example_id=example_id("2.jpg", CAPTION), image="2.jpg", image_link="",
                caption=CAPTION, label=0, relation="under", subj="cat", obj="couch",
                annotator_id="9")


def _merge(public, captions):
    """Runs MergeExamples, checking its outputs; returns the stage counters."""
    p = local_test_pipeline()
    merged = {"annotations": p | "Public" >> beam.Create(public),
              "captions": p | "Captions" >> beam.Create(captions)} | MergeExamples()
    # the survivor of EID: the annotations line (its source sorts first), with its votes
    assert_that(merged[MAIN] | beam.Map(lambda t: (t[0].example_id, t[0].annotator_id, t[1], t[2])),
                equal_to([(EID, "3", ("5",), ()), (OTHER.example_id, "9", (), ())]), label="kept")
    assert_that(merged[REJECTS] | beam.Map(lambda r: (r.reason, r.item_id)),
                equal_to([(reasons.DUPLICATE_EXAMPLE, EID)] * 2), label="rejects")
    result = p.run()
    result.wait_until_finish()
    return read_stage_counts(result)


def test_merge_keeps_one_example_per_id_whatever_the_arrival_order():
    public = [(_example("3", 1), ("5",), ()), (OTHER, (), ())]
    captions = [(_example("w1", 0, "pair-1"), (), ()), (_example("w0", 1, "pair-1"), (), ())]
    counts = _merge(public, captions)
    assert _merge(list(reversed(public)), list(reversed(captions))) == counts
    # the same items, the caption copies first: still the same survivor
    assert _merge(list(reversed(public)), captions) == counts
    assert counts["examples"] == {"example.in": 4, "example.in_from_annotations": 2,
                                  "example.in_from_captions": 2, "example.out": 2,
                                  "example.rejected.duplicate_example": 2}
    assert reconcile(counts) == []


def test_join_votes_refuses_duplicate_example_ids(tmp_path):
    votes = tmp_path / "votes.jsonl"
    votes.write_text(json.dumps({"example_id": EID, "validator_id": "v1", "label": 1}) + "\n")
    with pytest.raises(Exception, match="de-duplicate the examples first"):
        with local_test_pipeline() as p:
            _ = (p | beam.Create([(_example("3", 1), (), ()), (_example("4", 0), (), ())])
                 | JoinVotes([str(votes)]))


def _pair(pid: str) -> ImagePair:
    images = (CocoImage(1, "1.jpg", "http://x/train2017/1.jpg", "train2017"),
              CocoImage(2, "2.jpg", "http://x/train2017/2.jpg", "train2017"))
    return ImagePair(pid, "cat", "couch", images, (40000.0, 50000.0), (40000.0, 50000.0), 0, 2)


def test_a_sampled_pair_without_an_accepted_answer_is_rejected(tmp_path):
    answers = tmp_path / "captions.jsonl"
    answers.write_text("\n".join(json.dumps(x) for x in [
        {"pair_id": "pair-a", "relation": "under", "true_image": "1.jpg", "annotator_id": "w1"},
        {"pair_id": "pair-b", "relation": "under", "true_image": "9.jpg", "annotator_id": "w1"},
    ]) + "\n")
    p = local_test_pipeline()
    pairs = p | beam.Create([_pair("pair-a"), _pair("pair-b"), _pair("pair-c")])
    read = p | ReadCaptions([str(answers)], frozenset({"under"}), pairs)
    assert_that(read[MAIN] | beam.Map(lambda t: t[0].pair_id), equal_to(["pair-a", "pair-a"]),
                label="examples")
    assert_that(read[REJECTS] | beam.Map(lambda r: (r.level, r.reason, r.item_id[:6])),
                equal_to([("line", reasons.BAD_FIELD, '{"pair'),
                          ("pair", reasons.UNCAPTIONED_PAIR, "pair-b"),
                          ("pair", reasons.UNCAPTIONED_PAIR, "pair-c")]), label="rejects")
    result = p.run()
    result.wait_until_finish()
    counts = read_stage_counts(result)["captions"]
    assert (counts["pair.in"], counts["pair.out"], counts["pair.rejected.uncaptioned_pair"]) == (3, 1, 2)
    assert reconcile({"captions": counts}) == []


def _cfg(**inputs):
    sets = [f"inputs.{k}=[{','.join(v)}]" for k, v in inputs.items()]
    return load_config("pipelines/vsr/configs/paper.yaml", sets, VsrConfig)


def test_stage_links_see_a_lost_example_with_both_sources():
    cfg = _cfg(coco=["c.json"], annotations=["a.jsonl"], captions=["w.jsonl"])
    good = {"coco": {"annotation.out": 9, "image.out": 5},
            "pair_sampling": {"annotation.in": 9, "image.in": 5, "draw.out": 3},
            "annotations": {"line.out": 10}, "captions": {"pair.in": 3, "example.out": 6},
            "examples": {"example.in": 16, "example.in_from_annotations": 10,
                         "example.in_from_captions": 6, "example.out": 15,
                         "example.rejected.duplicate_example": 1},
            "validation": {"example.in": 15, "example.out": 12},
            "zeroshot_split": {"example.in": 12}}
    links = vsr.stage_links(cfg)
    assert check_links(good, links) == [] and vsr.check_source_sum(good, cfg) == []
    lost = json.loads(json.dumps(good))
    lost["captions"]["example.out"] = 7          # one caption example never reached the merge
    assert check_links(lost, links) and vsr.check_source_sum(lost, cfg)
    skipped = json.loads(json.dumps(good))
    skipped["validation"]["example.in"] = 14     # one merged example never reached validation
    assert check_links(skipped, links) and vsr.check_source_sum(skipped, cfg)
    uncounted = json.loads(json.dumps(good))
    uncounted["captions"]["pair.in"] = 2         # a sampled pair never reached the captions join
    assert check_links(uncounted, links)
