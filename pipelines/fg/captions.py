"""The captions of the FG benchmarks: the release's normalisation and the readers of the
original test captions (F0).

The public release (cwj1412/MSCOCO-Flikcr30K_FG) writes every caption, renovated or
not, in one normal form. What that form is was measured on the captions the release did
not change (original vs renovated in ../shared/realdata/fg/):

- lower-case;
- `.` `,` `"` `'` and the PTB quote ` are dropped without a space
  (`man's` -> `mans`, `37,000` -> `37000`);
- a hyphen becomes a space (`snow-covered` -> `snow covered`);
- every other punctuation mark is dropped as well (it becomes a space that then collapses:
  `5:50` -> `5 50`, `shower/tub` -> `shower tub`, `m & ms` -> `m ms`), except the
  characters named in `keep`. MSCOCO-FG keeps none (its 25,000 captions hold no
  `; ( ) ? : / & !`); Flickr30K-FG keeps `FLICKR_KEEP` = `#$&():;?` and writes `&`, `<`
  and `>` HTML-escaped (`a&m` -> `a&amp;m`, `I<3NY` -> `i&lt;3ny`), so Flickr is
  normalised with `html_escape=True`;
- runs of whitespace collapse to one space, none at either end.

The original captions of the Karpathy split files are tokenised (`person 's`,
`snowmobiles ;`, `( including`): the normal form is taken of the untokenised sentence,
so the tokeniser's spaces before clitics and punctuation are undone first. On raw
captions this step changes nothing.

The normal form is idempotent (HTML entities are unescaped before they are escaped
again), so both sides of a comparison can be normalised.
"""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Dict, List

from schemas.names import safe_name
from transforms.core.errors import InputError

CAPTIONS_PER_IMAGE = 5   # §1, §3: five captions per test image in both benchmarks

COCO_KEEP = ""           # measured on MSCOCO_FG_ann.json (module docstring)
FLICKR_KEEP = "#$&():;?"  # measured on Flickr30K_FG_ann.json

_DROPPED = str.maketrans("", "", ".,\"'`")
# What a PTB tokeniser split off: a clitic ('s n't 're ...) and closing punctuation take
# back the space before them, an opening parenthesis the space after it.
_SPACE_BEFORE_CLITIC = re.compile(r"\s+(?=(?:'(?:s|re|ve|ll|d|m)|n't)\b)", re.IGNORECASE)
_SPACE_BEFORE_CLOSING = re.compile(r"\s+(?=[;:?!)])")
_SPACE_AFTER_OPENING = re.compile(r"(?<=\()\s+")
_PUNCTUATION = re.compile(r"[^\w\s]")
_WORDS = re.compile(r"[^\W_]")   # a letter or digit


def normalise_caption(text: str, keep: str = "", *, html_escape: bool = False) -> str:
    """`text` in the release's normal form (module docstring); `keep` names punctuation
    that survives (Flickr: FLICKR_KEEP), `html_escape` writes `& < >` as entities."""
    text = html.unescape(text).lower()
    text = _SPACE_BEFORE_CLITIC.sub("", text)
    text = _SPACE_BEFORE_CLOSING.sub("", text)
    text = _SPACE_AFTER_OPENING.sub("", text)
    text = text.translate(_DROPPED).replace("-", " ")
    if html_escape:
        keep += "&<>"   # written as entities below, never dropped
    text = _PUNCTUATION.sub(lambda m: m.group() if m.group() in keep else " ", text)
    text = " ".join(text.split())
    return html.escape(text, quote=False) if html_escape else text


def read_captions(path: str, split: str = "test") -> Dict[str, List[str]]:
    """The five captions of each image, keyed as the public release keys them (a key that
    is no safe file name made safe as its image's id is: `_keyed_as_images`), in the
    file's order. Accepts `{image_id: [5 captions]}` JSON or Karpathy's
    `dataset_coco.json` / `dataset_flickr30k.json` (the images of `split`, `sentences[].raw`;
    COCO ids `COCO_val2014_%012d` from the file name or `cocoid`, Flickr the number of the
    file name). A file that cannot be used as a whole raises InputError naming it: it is
    read under transforms/io/strict_json.py's rules (an image id twice is a key named
    twice), every image needs five captions, and a caption needs a letter or digit (an
    empty or punctuation-only one would be renovated into text nobody wrote, or published
    empty)."""
    from transforms.io import strict_json   # Beam's file systems: only once a file is read
    try:
        data = strict_json.load_document(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read the captions file ({e.strerror or e})") from None
    except strict_json.JsonProblem as e:
        raise InputError(e.detail) from None   # the detail names the file
    if isinstance(data, dict) and isinstance(data.get("images"), list):
        captions = _karpathy(path, data, split)
    elif isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
        captions = {str(k): v for k, v in data.items()}
    else:
        raise InputError(f"{path}: expected {{image_id: [5 captions]}} or Karpathy's "
                         f"{{\"images\": [...]}} layout")
    if not captions:
        raise InputError(f"{path}: no images" + (f" of split {split!r}" if "images" in data else ""))
    captions = _keyed_as_images(path, captions)
    for image_id, texts in captions.items():
        if len(texts) != CAPTIONS_PER_IMAGE or not all(isinstance(t, str) for t in texts):
            raise InputError(f"{path}: image {image_id} has {len(texts)} captions, "
                             f"expected exactly {CAPTIONS_PER_IMAGE} strings")
        for index, text in enumerate(texts):
            if not _WORDS.search(text):
                raise InputError(f"{path}: image {image_id} caption {index} ({text!r}) has no "
                                 "letter or digit: every caption needs words")
    return captions


def _keyed_as_images(path: str, captions: Dict[str, List[str]]) -> Dict[str, List[str]]:
    """The captions keyed by the id their image gets (schemas.names.safe_name of its file
    name's stem, as transforms/image/collection.py names it), so that `café 101` meets
    `café 101.jpg`: the raw key met no image id, and the build said both that the
    captioned image was missing and that the image had no captions. Every public key
    (COCO_val2014_000000391895, 1000092795) is a safe name already and stays as it is."""
    keyed: Dict[str, List[str]] = {}
    for image_id, texts in captions.items():
        try:
            key = safe_name(image_id)
        except ValueError as e:
            raise InputError(f"{path}: image id {image_id[:100]!r}: {e}") from None
        if key in keyed:   # only by a 48-bit hash collision (safe_name)
            raise InputError(f"{path}: two image ids are both named {key!r} once made safe")
        keyed[key] = texts
    return keyed


def _karpathy(path: str, data: dict, split: str) -> Dict[str, List[str]]:
    captions: Dict[str, List[str]] = {}
    for n, image in enumerate(data["images"]):
        if not isinstance(image, dict) or not isinstance(image.get("sentences"), list):
            raise InputError(f"{path}: images[{n}] has no sentences list (Karpathy layout)")
        if image.get("split") != split:
            continue
        image_id = _karpathy_image_id(path, n, image, str(data.get("dataset", "")))
        if image_id in captions:
            raise InputError(f"{path}: image {image_id} appears twice")
        try:
            captions[image_id] = [s["raw"] for s in image["sentences"]]
        except (TypeError, KeyError):
            raise InputError(f"{path}: image {image_id} has a sentence without \"raw\"") from None
    return captions


def _karpathy_image_id(path: str, n: int, image: dict, dataset: str) -> str:
    """`COCO_val2014_000000391895` (the file name's stem, or built from `cocoid`) for COCO,
    `1000092795` for Flickr30K: the release's keys."""
    filename = image.get("filename")
    if filename:
        return Path(str(filename)).stem
    if "cocoid" in image:
        cocoid = image["cocoid"]
        if isinstance(cocoid, bool) or not isinstance(cocoid, int) or not 0 <= cocoid < 10 ** 12:
            raise InputError(f"{path}: images[{n}].cocoid must be a COCO image id (a whole number "
                             f"of at most 12 digits), got {cocoid!r}")
        # Karpathy's test images all come from val2014 (the release's keys say so too)
        return f"COCO_val2014_{cocoid:012d}"
    raise InputError(f"{path}: images[{n}] has neither filename nor cocoid "
                     f"(dataset {dataset or 'unnamed'})")

