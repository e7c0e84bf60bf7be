"""The release's caption normal form and the caption readers (pipelines/fg/captions.py),
checked on the public FG release and the original captions of its images
(../shared/realdata/fg). Fails (does not skip) when the data is missing."""
import html
import json
import re

import pytest

from pipelines.fg.captions import FLICKR_KEEP, normalise_caption, read_captions
from tests.paths import REALDATA

FG = REALDATA / "fg"
SETTINGS = {"MSCOCO": {}, "Flickr30K": {"keep": FLICKR_KEEP, "html_escape": True}}


def _pair(name):
    renovated, original = FG / f"{name}_FG_ann.json", FG / f"{name}_karpathy_test_captions.json"
    assert renovated.exists() and original.exists(), f"public FG data not found in {FG}"
    return read_captions(str(original)), read_captions(str(renovated))


def _words(text):
    """The words alone, no case, punctuation or spacing: what 'unchanged' means here."""
    return re.sub(r"[^a-z0-9 ]", "", html.unescape(text).lower().replace("-", " ")).split()


@pytest.mark.parametrize("text, expected", [
    ("A man's hat .", "a mans hat"),
    ("A man 's hat .", "a mans hat"),                     # the Karpathy files' tokenisation
    ("He is n't 37,000 feet up", "he isnt 37000 feet up"),
    ("A snow-covered   field", "a snow covered field"),
    ('Signs read `` E 92 St \'\' .', "signs read e 92 st"),
    ("A clock reads 5:50 ; shower/tub & sink !", "a clock reads 5 50 shower tub sink"),
    ("( or vice versa )", "or vice versa"),
])
def test_coco_normal_form(text, expected):
    assert normalise_caption(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("Two girls ( one in blue ) race ; fun ?", "two girls (one in blue) race; fun?"),
    ("Texas A&M player", "texas a&amp;m player"),
    ("a blue I<3NY shirt !", "a blue i&lt;3ny shirt"),
])
def test_flickr_keeps_its_punctuation_and_escapes_html(text, expected):
    assert normalise_caption(text, **SETTINGS["Flickr30K"]) == expected


@pytest.mark.parametrize("text", ["A man 's hat, 5:50 - Texas A&M ( yes ) ;", "a&amp;m &lt;3"])
def test_normal_form_is_idempotent(text):
    for settings in SETTINGS.values():
        once = normalise_caption(text, **settings)
        assert normalise_caption(once, **settings) == once


@pytest.mark.parametrize("name, exact_rate", [("MSCOCO", 0.997), ("Flickr30K", 0.998)])
def test_unchanged_captions_are_the_release_normal_form_of_the_originals(name, exact_rate):
    """Measured: MSCOCO 13,748 of 13,775 unchanged captions (99.80%), Flickr30K 2,791 of
    2,794 (99.89%) agree byte for byte; the rest are human touches (`TV` upper-cased,
    a double space, a spacing the tokenised original lost)."""
    original, renovated = _pair(name)
    assert list(original) == list(renovated)
    unchanged = [(a, b) for image in original for a, b in zip(original[image], renovated[image])
                 if _words(a) == _words(b)]
    assert len(unchanged) > 2500
    agree = sum(normalise_caption(a, **SETTINGS[name]) == b for a, b in unchanged)
    assert agree / len(unchanged) >= exact_rate
    # and every renovated caption but a handful (the human touches) is in normal form
    texts = [t for captions in renovated.values() for t in captions]
    in_form = sum(normalise_caption(t, **SETTINGS[name]) == t for t in texts)
    assert in_form / len(texts) >= 0.99


def test_read_captions_keeps_file_order_and_counts():
    original, renovated = _pair("MSCOCO")
    assert len(renovated) == 5000 and all(len(v) == 5 for v in renovated.values())
    assert next(iter(renovated)) == "COCO_val2014_000000452113"
    original, renovated = _pair("Flickr30K")
    assert len(original) == 1000 and list(renovated) == sorted(renovated)


def _karpathy(dataset, images):
    return {"dataset": dataset, "images": images}


def _image(split, n=5, **ids):
    return {"split": split, "sentences": [{"raw": f"caption {i}", "tokens": []} for i in range(n)], **ids}


def test_read_captions_karpathy_layout(tmp_path):
    coco = tmp_path / "dataset_coco.json"
    coco.write_text(json.dumps(_karpathy("coco", [
        _image("test", filename="COCO_val2014_000000391895.jpg", cocoid=391895),
        _image("train", filename="COCO_train2014_000000000009.jpg", cocoid=9),
        _image("test", cocoid=42),
    ])))
    captions = read_captions(str(coco))
    assert list(captions) == ["COCO_val2014_000000391895", "COCO_val2014_000000000042"]
    assert captions["COCO_val2014_000000000042"][4] == "caption 4"
    assert list(read_captions(str(coco), split="train")) == ["COCO_train2014_000000000009"]
    flickr = tmp_path / "dataset_flickr30k.json"
    flickr.write_text(json.dumps(_karpathy("flickr30k", [_image("test", filename="1000092795.jpg")])))
    assert list(read_captions(str(flickr))) == ["1000092795"]


@pytest.mark.parametrize("content, message", [
    ("not json", "not JSON"),
    ("[1, 2]", "expected {image_id: [5 captions]}"),
    ('{"a": [1, 2]}', "image a has 2 captions"),
    ('{"42": ["a", "b", "c", "d"]}', "image 42 has 4 captions"),
    (json.dumps(_karpathy("coco", [_image("test", n=6, cocoid=7)])), "image COCO_val2014_000000000007 has 6"),
    (json.dumps(_karpathy("coco", [_image("val", cocoid=7)])), "no images of split 'test'"),
    (json.dumps(_karpathy("coco", [{"split": "test"}])), "images[0] has no sentences"),
    (json.dumps(_karpathy("coco", [_image("test", cocoid=7), _image("test", cocoid=7)])), "appears twice"),
    # issue 24: an id twice in {id: [5]} kept the last list silently
    ('{"42": ["a", "b", "c", "d", "e"], "42": ["f", "g", "h", "i", "j"]}', "key '42' appears twice"),
    # empty, blank and punctuation-only captions were renovated into invented text or published empty
    ('{"42": ["a dog", "", "c", "d", "e"]}', "image 42 caption 1 ('') has no letter or digit"),
    ('{"42": ["a dog", "b", "   ", "d", "e"]}', "image 42 caption 2 ('   ') has no letter or digit"),
    ('{"42": ["a dog", "b", "c", "...!", "e"]}', "image 42 caption 3 ('...!') has no letter or digit"),
    # a Karpathy cocoid that is no id gave a traceback
    (json.dumps(_karpathy("coco", [_image("test", cocoid="abc")])), "images[0].cocoid must be a COCO image id (a whole number of at most 12 digits), got 'abc'"),
    (json.dumps(_karpathy("coco", [_image("test", cocoid=None)])), "images[0].cocoid must be a COCO image id (a whole number of at most 12 digits), got None"),
    (json.dumps(_karpathy("coco", [_image("test", cocoid=10 ** 30)])), "beyond the 64-bit"),
    ('{"42": ["a dog \\ud83d", "b", "c", "d", "e"]}', "field '42[0]' holds a lone UTF-16 surrogate"),
])
def test_read_captions_names_the_file_and_the_problem(tmp_path, content, message):
    from transforms.core.errors import InputError
    path = tmp_path / "captions.json"
    path.write_text(content)
    with pytest.raises(InputError) as e:
        read_captions(str(path))
    assert str(path) in str(e.value) and message in str(e.value)


def test_read_captions_missing_file(tmp_path):
    from transforms.core.errors import InputError
    with pytest.raises(InputError, match="cannot read"):
        read_captions(str(tmp_path / "nope.json"))
