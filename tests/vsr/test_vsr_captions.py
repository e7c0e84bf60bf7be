"""VSR captions: the template rendered and parsed back, never by stripping characters."""
import itertools

import pytest

from pipelines.vsr.captions import NO_COPULA, CaptionParser, render_caption
from pipelines.vsr.relations import CATEGORIES, RELATION_CATEGORY, RELATIONS, TABLE_1
from schemas.coco import ID_BY_NAME


def test_table_1_has_71_relations_in_7_categories():
    assert sum(len(r) for _, r in TABLE_1) == 71
    assert len(CATEGORIES) == 7 and len(RELATIONS) == 70      # "among" is listed twice
    assert RELATION_CATEGORY["among"] == "Topological"
    assert RELATION_CATEGORY["at the left side of"] == "Adjacency"


def test_copula_is_dropped_for_three_relations():
    assert render_caption("cat", "under", "laptop") == "The cat is under the laptop."
    assert render_caption("bowl", "contains", "banana") == "The bowl contains the banana."
    assert render_caption("car", "has as a part", "person") == "The car has as a part the person."
    assert NO_COPULA == {"contains", "consists of", "has as a part"}


def test_every_relation_and_category_round_trips():
    parser = CaptionParser()
    names = sorted(ID_BY_NAME)
    for relation, (subj, obj) in zip(itertools.cycle(RELATIONS), itertools.product(names, names)):
        caption = render_caption(subj, relation, obj)
        assert parser.parse(caption) == ((subj, relation, obj), ""), caption
    for relation in RELATIONS:   # and every relation with multi-word names on both sides
        caption = render_caption("hot dog", relation, "teddy bear")
        assert parser.parse(caption)[0] == ("hot dog", relation, "teddy bear")


@pytest.mark.parametrize("caption", [
    "The ot dog is near the cat.",        # what stripping "The " character by character leaves
    "The orse is near the dog.",
    "The cat is nearby the dog.",         # no such relation
    "The cat contains is the dog.",
    "The cat is contains the dog.",       # copula where the template drops it
    "The cat under the dog.",             # copula missing where the template has it
    "A cat is near the dog.",
    "The cat is near the dog",
])
def test_captions_outside_the_template_are_not_parsed(caption):
    parsed, why = CaptionParser().parse(caption)
    assert parsed is None and why


def test_aliases_are_explicit():
    parser = CaptionParser(aliases={"sofa": "couch"})
    assert parser.parse("The sofa is near the tv.")[0] == ("couch", "near", "tv")
    with pytest.raises(ValueError):
        CaptionParser(aliases={"sofa": "settee"})


def test_extra_relations_are_accepted_only_when_given():
    assert CaptionParser().parse("The couch is congruent the cat.")[0] is None
    parser = CaptionParser(list(RELATIONS) + ["congruent"])
    assert parser.parse("The couch is congruent the cat.")[0] == ("couch", "congruent", "cat")


@pytest.mark.parametrize("stringify", [False, True])
def test_compat_lines_read_back_with_arrays_or_v2_strings(stringify):
    import json

    from pipelines.vsr.annotations import parse_public_line
    from pipelines.vsr.compat import to_public_line
    from pipelines.vsr.records import Example, VotedExample, example_id
    caption = "The cat is under the couch."
    name = "000000000001.jpg"      # a plain COCO file name, as the reader requires
    example = Example(example_id=example_id(name, caption), image=name,
                      image_link=f"http://images.cocodataset.org/train2017/{name}",
                      caption=caption, label=1, relation="under", subj="cat", obj="couch",
                      annotator_id="7")
    line = to_public_line(VotedExample(example, ("2", "3"), ("4",)), stringify)
    assert isinstance(line["vote_true_validator_id"], str) == stringify
    parsed = parse_public_line(json.dumps(line), CaptionParser(), frozenset(RELATIONS))
    back, true_votes, false_votes = parsed[0], parsed[1], parsed[2]
    assert (back.subj, back.relation, back.obj, back.label) == ("cat", "under", "couch", 1)
    assert [str(v) for v in true_votes] == ["2", "3"] and [str(v) for v in false_votes] == ["4"]
