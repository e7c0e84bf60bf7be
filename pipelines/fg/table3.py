"""Table 3 of the paper (§4.2.2): the captions the renovation changed, before and after.

    python -m pipelines fg table3 --original A.json --renovated B.json [--json]
                                  [--normal-form coco|flickr] [--tagger NAME_OR_PATH]

Both sides are put in the release's normal form (captions.normalise_caption) before they
are compared, so a caption counts as changed only when its words changed, not its case or
punctuation. Lengths are whitespace tokens of the normal form. With a tagger (a spaCy
pipeline, by installed package name or folder; nothing is downloaded) nouns and adjectives
are counted as the paper's Stanford CoreNLP tagger counts them: Penn Treebank tags NN*
(common and proper nouns) and JJ* (adjectives, comparatives, superlatives).

Measured on ../shared/realdata/fg with the normal forms of captions.py
(paper Table 3 in brackets):
    MSCOCO     11,025 changed (11,050), length 10.23 -> 12.58 (10.23 -> 12.59)
    Flickr30K   2,155 changed (2,156),  length 10.93 -> 13.91 (10.93 -> 13.91)
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from pipelines.fg.captions import FLICKR_KEEP, normalise_caption, read_captions
from transforms.core.errors import InputError, UserError

NORMAL_FORMS = {"coco": {"keep": "", "html_escape": False},
                "flickr": {"keep": FLICKR_KEEP, "html_escape": True}}
NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
ADJECTIVE_TAGS = frozenset({"JJ", "JJR", "JJS"})


def changed_pairs(original: Dict[str, List[str]], renovated: Dict[str, List[str]],
                  keep: str = "", html_escape: bool = False) -> List[Tuple[str, str]]:
    """(before, after) in normal form for every caption whose normal form changed, in the
    original's image order and caption order. The two files must hold the same images."""
    missing = sorted(set(original) ^ set(renovated))
    if missing:
        raise InputError(f"the two caption files hold different images, e.g. {missing[0]} "
                         f"({len(missing)} ids in one file only)")
    pairs = []
    for image_id, before_texts in original.items():
        after_texts = renovated[image_id]
        if len(before_texts) != len(after_texts):
            raise InputError(f"image {image_id}: {len(before_texts)} original captions, "
                             f"{len(after_texts)} renovated")
        for before, after in zip(before_texts, after_texts):
            before = normalise_caption(before, keep, html_escape=html_escape)
            after = normalise_caption(after, keep, html_escape=html_escape)
            if before != after:
                pairs.append((before, after))
    return pairs


def count_tags(texts: Iterable[str], tagger) -> Tuple[int, int]:
    """(nouns, adjectives) in `texts` by the tagger's Penn Treebank tags."""
    nouns = adjectives = 0
    for doc in tagger.pipe(texts, batch_size=256):
        for token in doc:
            nouns += token.tag_ in NOUN_TAGS
            adjectives += token.tag_ in ADJECTIVE_TAGS
    return nouns, adjectives


def table3(original: Dict[str, List[str]], renovated: Dict[str, List[str]], tagger=None,
           keep: str = "", html_escape: bool = False) -> dict:
    """The statistics of Table 3 over the changed captions (module docstring)."""
    pairs = changed_pairs(original, renovated, keep, html_escape)
    n = len(pairs)
    result = {
        "texts_changed": n,
        "texts_total": sum(len(texts) for texts in original.values()),
        "mean_length_before": _mean(len(before.split()) for before, _ in pairs),
        "mean_length_after": _mean(len(after.split()) for _, after in pairs),
    }
    if tagger is not None:
        for side, texts in (("before", [b for b, _ in pairs]), ("after", [a for _, a in pairs])):
            nouns, adjectives = count_tags(texts, tagger)
            result.update({f"nouns_{side}": nouns, f"adjectives_{side}": adjectives,
                           f"nouns_per_text_{side}": nouns / n if n else 0.0,
                           f"adjectives_per_text_{side}": adjectives / n if n else 0.0})
    return result


def _mean(values: Iterable[int]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def render(result: dict) -> str:
    rows = [("#texts changed", f"{result['texts_changed']:,} of {result['texts_total']:,}", ""),
            ("avg. length", f"{result['mean_length_before']:.2f}", f"{result['mean_length_after']:.2f}")]
    if "nouns_before" in result:
        rows += [("#noun", f"{result['nouns_before']:,}", f"{result['nouns_after']:,}"),
                 ("#adj", f"{result['adjectives_before']:,}", f"{result['adjectives_after']:,}"),
                 ("avg. noun", f"{result['nouns_per_text_before']:.2f}", f"{result['nouns_per_text_after']:.2f}"),
                 ("avg. adj", f"{result['adjectives_per_text_before']:.2f}",
                  f"{result['adjectives_per_text_after']:.2f}")]
    lines = [f"{'':<16}{'coarse':>18}{'refined':>10}"]
    lines += [f"{name:<16}{before:>18}{after:>10}" for name, before, after in rows]
    return "\n".join(lines)


def guess_normal_form(captions: Dict[str, List[str]]) -> str:
    """Flickr30K ids are numbers, MSCOCO ids `COCO_val2014_...`."""
    return "flickr" if all(image_id.isdigit() for image_id in captions) else "coco"


def load_tagger(name_or_path: str):
    """A spaCy pipeline by installed package name or folder; only what tags is kept."""
    import spacy
    try:
        return spacy.load(name_or_path, exclude=["parser", "ner", "lemmatizer", "senter"])
    except OSError as e:
        raise UserError(f"--tagger {name_or_path}: not an installed spaCy pipeline or a "
                        f"pipeline folder ({str(e).splitlines()[0]})") from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines fg table3", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--original", required=True, help="the original captions (JSON)")
    parser.add_argument("--renovated", required=True, help="the renovated captions (JSON)")
    parser.add_argument("--normal-form", choices=sorted(NORMAL_FORMS),
                        help="the release's caption form (default: from the image ids)")
    parser.add_argument("--tagger", help="spaCy pipeline (name or path) to count nouns and adjectives")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    try:
        original = read_captions(args.original)
        renovated = read_captions(args.renovated)
        form = NORMAL_FORMS[args.normal_form or guess_normal_form(original)]
        tagger = load_tagger(args.tagger) if args.tagger else None
        result = table3(original, renovated, tagger, **form)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0
