"""COCO instances, streamed, and the §3.1 image-pair sampling on a generated COCO file."""
import collections
import json

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.config import load_config
from pipelines.vsr import pairs
from pipelines.vsr.config import VsrConfig
from pipelines.vsr.pairs import EligibleConcepts, SamplePairs, draw_plan
from pipelines.vsr.sample import SAMPLE_CONFIG, make_vsr_sample
from schemas.coco import NAME_BY_ID
from tests.beam_testing import local_test_pipeline
from transforms.coco import instances as coco
from transforms.coco.instances import MalformedCoco, ReadCoco, iter_coco_file
from transforms.core.stage import MAIN


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_vsr_sample(str(tmp_path_factory.mktemp("vsr_sample")))


def test_streaming_reader_equals_json_load(sample, monkeypatch):
    monkeypatch.setattr(coco, "CHUNK", 7)      # elements always cross chunk borders
    path = str(sample / "instances_train2017.json")
    doc = json.load(open(path))
    entries = list(iter_coco_file(path))
    assert [e for kind, e in entries if kind == "image"] == doc["images"]
    assert [e for kind, e in entries if kind == "annotation"] == doc["annotations"]


@pytest.mark.parametrize("file_name, coco_url, source", [
    ("000000000002.jpg", "http://images.cocodataset.org/train2017/000000000002.jpg", "train2017"),
    ("COCO_val2014_000000000002.jpg", "http://images.cocodataset.org/val2014/COCO_val2014_000000000002.jpg",
     "val2014"),
    ("COCO_val2014_000000000002.jpg", "http://mscoco.org/images/2", "val2014"),    # 2014, first release
    ("COCO_val2014_000000000002.jpg", "", "val2014")])
def test_every_real_form_of_coco_url_is_an_image_of_its_entry(file_name, coco_url, source):
    """Hostile links are in tests/test_hostile_inputs.py (`coco-url-names-another-*`)."""
    image = coco._image({"id": 2, "file_name": file_name, "coco_url": coco_url}, "/data/instances_val2014.json")
    assert (image.file_name, image.coco_url, image.source) == (file_name, coco_url, source)


@pytest.mark.parametrize("text", ['[1, 2]', '{"images": [{"id": 1}', '{"images": 3}',
                                  '{"images": [{"id": 1}] "annotations": []}', '', '{"a": tru}'])
def test_malformed_files_raise(tmp_path, text):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(MalformedCoco):
        list(iter_coco_file(str(path)))


def test_draw_plan_is_seeded_and_uses_pools_without_replacement():
    sizes = {"a|b": 5, "a|c": 2, "b|c": 1}
    plan, exhausted = draw_plan(sizes, seed=0, pairs=10, max_draws=100)
    assert plan == draw_plan(dict(reversed(list(sizes.items()))), 0, 10, 100)[0]
    per_pair = collections.Counter(key for key, *_ in plan)
    assert per_pair == {"a|b": 2, "a|c": 1}      # 5 images give 2 pairs, 2 give 1, 1 gives none
    assert exhausted and len(plan) == 3


def _instances(paths):
    instances = collections.defaultdict(list)
    for path in paths:
        for a in json.load(open(path))["annotations"]:
            if "area" in a and a["category_id"] in NAME_BY_ID:
                instances[(a["image_id"], NAME_BY_ID[a["category_id"]])].append(a)
    return dict(instances)


def _check_pairs(pairs, instances, expected):
    assert len(pairs) == expected
    for pair_id, subj, obj, image_ids in pairs:
        assert subj != obj and len(set(image_ids)) == 2
        for image_id in image_ids:
            for concept in (subj, obj):
                found = instances.get((image_id, concept), [])
                assert len(found) == 1 and not found[0]["iscrowd"], (pair_id, image_id, concept)
                assert found[0]["area"] >= 30000
    assert len({p[0] for p in pairs}) == len(pairs), "pair ids are unique"
    assert len({p[3] for p in pairs}) == len(pairs), "no image pair twice"
    return True


def test_sampled_images_hold_one_large_instance_of_each_concept(sample):
    cfg = load_config(SAMPLE_CONFIG, [], VsrConfig)
    paths = [str(sample / f"instances_{s}.json") for s in ("train2017", "val2017")]
    instances = _instances(paths)
    with local_test_pipeline() as p:
        read = p | ReadCoco(paths)
        eligible = (read["images"], read["annotations"]) | EligibleConcepts(
            cfg.sampling.min_area, cfg.sampling.max_instances)
        sampled = eligible[MAIN] | SamplePairs(cfg.seed, cfg.sampling.pairs, cfg.sampling.max_draws)
        pairs = (sampled[MAIN]
                 | beam.Map(lambda pr: (pr.pair_id, pr.subj, pr.obj, tuple(i.image_id for i in pr.images)))
                 | beam.combiners.ToList())
        checked = pairs | beam.Map(_check_pairs, instances=instances, expected=cfg.sampling.pairs)
        assert_that(checked, equal_to([True]))


def test_drawing_stops_when_every_pool_is_used_up():
    # pools of 2 and 3 images hold one pair each: 6,405 asked, 2 possible
    sizes = {"a|b": 2, "a|c": 3, "b|c": 1}
    plan, exhausted = draw_plan(sizes, seed=0, pairs=6405, max_draws=1_000_000)
    assert sorted(key for key, *_ in plan) == ["a|b", "a|c"]
    assert len(exhausted) < 20                   # not ~1,000,000 pool_exhausted draws
    figures = pairs.plan_figures(sizes, plan, exhausted, 6405, 1_000_000)
    assert figures["pairs_requested"] == 6405 and figures["pairs_sampled"] == 2
    assert figures["shortfall"] == 6403 and figures["stopped"] == "every pool used up"
    assert figures["draws"] == len(plan) + len(exhausted) and figures["pool_capacity"] == 2
    # max_draws still bounds, and a plan that reaches its pairs says so
    assert pairs.plan_figures(sizes, *draw_plan(sizes, 0, 6405, 1), 6405, 1)["stopped"] == "max_draws reached"
    assert pairs.plan_figures(sizes, *draw_plan(sizes, 0, 1, 100), 1, 100)["stopped"] == "pairs reached"


def test_a_concept_with_an_unreadable_annotation_is_not_eligible():
    cat, dog = 17, 18
    annotations = [(1, cat, 50000.0, 0), (1, dog, 50000.0, 0)]
    eligible, verdicts = pairs.concept_verdicts(annotations, 30000, 1)
    assert set(eligible) == {"cat", "dog"}
    eligible, verdicts = pairs.concept_verdicts(annotations, 30000, 1, broken=[cat])
    assert set(eligible) == {"dog"} and verdicts["cat"][0] == "bad_coco_record"
    # the bad entry is rejected by ReadCoco and its (image, category) passed on as a marker
    assert coco._broken_concept({"image_id": 1, "category_id": cat, "iscrowd": 0}) == (1, cat)
    assert coco._broken_concept({"image_id": "1", "category_id": cat}) is None


def test_a_missing_instances_file_is_an_error_not_malformed_coco(tmp_path):
    with pytest.raises(Exception, match="No such file|not found|FileNotFound"):
        with local_test_pipeline() as p:
            _ = p | ReadCoco([str(tmp_path / "instances_missing.json")])
