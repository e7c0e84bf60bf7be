"""The embedded BD2BB sample: ~200 crowd tuples with COCO-style captions and CoNLL-U parses.

    python -m pipelines.bd2bb.sample samples/bd2bb

Generated deterministically from templates that carry their own UD parse trees, so the
parses are correct by construction (the role of the paper's manually fixed parses).
Eight topics (tennis, pizza, skateboard, dogs, surf, kites, zoo, buses), 40 images with
5 answers each (§3.1: ~5 tuples per image), plus the bad input every filter must catch:
lines that are not JSON or lack a field, a duplicate answer, the same answer by another
annotator with the image as a bare id and the action capitalised and double-spaced
(§4.1: one tuple per image, intention, action; its capitals must not reach the endings),
key-mashing, Lorem Ipsum, Spanish and German answers, a 10,000-character action, a line
with a Latin-1 byte, short intentions, intentions naming what the captions show, actions
without a noun, an action whose parse has no main verb, actions missing from the CoNLL-U
file, an action whose CoNLL-U sentence is malformed and an image without captions.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import List, Tuple

from transforms.text.parsers import to_conllu
from transforms.text.tokens import Token

TUPLES, CAPTIONS, PARSES = "tuples.jsonl", "captions.json", "actions.conllu"
DONE_MARKER = ".complete-v3"  # bump when the sample changes: older samples are rebuilt

# topic: (nouns, verbs, caption scene)
TOPICS = {
    "tennis": (["racket", "ball", "net", "player", "court"], ["hit", "grab", "watch", "serve", "applaud"],
               "playing tennis on a court"),
    "pizza": (["pizza", "sandwich", "plate", "salad", "fork"], ["eat", "order", "share", "cut", "cook"],
              "eating lunch at a table"),
    "skateboard": (["skateboard", "ramp", "trick", "board", "skater"], ["ride", "push", "jump", "film", "repair"],
                   "riding a skateboard in a park"),
    "dogs": (["dog", "puppy", "leash", "bone", "cat"], ["pet", "walk", "feed", "hug", "wash"],
             "walking with a dog on a street"),
    "surf": (["surfboard", "wave", "beach", "wetsuit", "sand"], ["paddle", "carry", "wax", "catch", "rent"],
             "surfing on the ocean"),
    "kites": (["kite", "string", "park", "tree", "sky"], ["fly", "launch", "untangle", "hold", "buy"],
              "flying a kite in a field"),
    "zoo": (["elephant", "giraffe", "zebra", "zoo", "trunk"], ["photograph", "stroke", "visit", "draw", "admire"],
            "standing next to animals at the zoo"),
    "buses": (["bus", "train", "ticket", "station", "driver"], ["board", "take", "miss", "drive", "chase"],
              "waiting at a bus stop"),
}

INTENTIONS = [
    "want to have some fun with my friends", "am feeling very adventurous today",
    "feel hungry after a long day at work", "want to relax for a little while",
    "am in the mood to try something new", "want to make my children happy",
    "feel like being active this afternoon", "want to impress the people around me",
    "am bored of sitting at home all day", "want to remember this moment forever",
    "feel a bit lonely this weekend", "want to learn a new skill this summer",
    "am looking for a good way to exercise", "want to surprise my best friend",
    "have a lot of energy to burn", "want to be helpful to a stranger",
    "am celebrating my birthday with family", "feel curious about how things work",
    "want to save some money this month", "am on vacation with my partner",
]
SHORT_INTENTIONS = ["am bored", "feel happy", "am tired"]          # 4 tokens with "If I"


def _det(head: int):
    return ("the", "the", "DET", head, "det")


def _action(template: int, v1: str, n1: str, v2: str, n2: str) -> List[tuple]:
    """(form, lemma, upos, head, deprel) rows of one templated action, heads 1-based."""
    if template == 0:      # hit the ball
        return [(v1, v1, "VERB", 0, "root"), _det(3), (n1, n1, "NOUN", 1, "obj")]
    if template == 1:      # grab the racket and hit the ball
        return [(v1, v1, "VERB", 0, "root"), _det(3), (n1, n1, "NOUN", 1, "obj"),
                ("and", "and", "CCONJ", 5, "cc"), (v2, v2, "VERB", 1, "conj"), _det(7),
                (n2, n2, "NOUN", 5, "obj")]
    if template == 2:      # grab the racket to hit the ball
        return [(v1, v1, "VERB", 0, "root"), _det(3), (n1, n1, "NOUN", 1, "obj"),
                ("to", "to", "PART", 5, "mark"), (v2, v2, "VERB", 1, "advcl"), _det(7),
                (n2, n2, "NOUN", 5, "obj")]
    if template == 3:      # try to hit the ball
        return [("try", "try", "VERB", 0, "root"), ("to", "to", "PART", 3, "mark"),
                (v1, v1, "VERB", 1, "xcomp"), _det(5), (n1, n1, "NOUN", 3, "obj")]
    # sit near the net and watch the player
    return [("sit", "sit", "VERB", 0, "root"), ("near", "near", "ADP", 4, "case"), _det(4),
            (n1, n1, "NOUN", 1, "obl"), ("and", "and", "CCONJ", 6, "cc"), (v2, v2, "VERB", 1, "conj"),
            _det(8), (n2, n2, "NOUN", 6, "obj")]


def _tokens(rows) -> Tuple[Token, ...]:
    return tuple(Token(i, f, l, u, h, d) for i, (f, l, u, h, d) in enumerate(rows, 1))


NO_NOUN_ACTIONS = [  # parsed, but without a noun or pronoun (§3.1)
    ("go away quickly", [("go", "go", "VERB", 0, "root"), ("away", "away", "ADV", 1, "advmod"),
                         ("quickly", "quickly", "ADV", 1, "advmod")]),
    ("just relax", [("just", "just", "ADV", 2, "advmod"), ("relax", "relax", "VERB", 0, "root")]),
]
NO_VERB_ACTIONS = [  # parsed, with a noun, but no main verb: no codes (no_main_verb)
    ("a picture of the dog", [("a", "a", "DET", 2, "det"), ("picture", "picture", "NOUN", 0, "root"),
                              ("of", "of", "ADP", 5, "case"), ("the", "the", "DET", 5, "det"),
                              ("dog", "dog", "NOUN", 2, "nmod")]),
]
UNPARSED_ACTIONS = ["clap loudly for the winner", "call my mother about the trip"]  # not in the CoNLL-U
NONSENSE = [("asdfgh jklqwr", "hit the ball"), ("want to go out", "xzcvbn mnbvc qwrtzp")]
LOREM = [("lorem ipsum dolor sit amet consectetur", "eat the pizza"),
         ("want to enjoy the sun", "sed do eiusmod tempor incididunt labore")]
FOREIGN = [("quiero relajarme un poco esta tarde", "pet the dog"),          # Spanish intention
           ("want to have some fun today", "mit meinem Hund im Park spielen")]  # German action
TOO_LONG_ACTION = " ".join(["hit the ball"] * 770)                     # 10,009 characters
MALFORMED_PARSE = "wash the bus slowly"   # its CoNLL-U sentence has a line of 5 columns


def build(rng: random.Random):
    """(tuples, captions JSON, CoNLL-U text)."""
    tuples, parses, captions, images = [], {}, [], []
    topic_names = sorted(TOPICS)
    image_id = 100000
    for i in range(40):
        topic = topic_names[i % len(topic_names)]
        nouns, verbs, scene = TOPICS[topic]
        image_id += 7 + i
        image = f"COCO_train2014_{image_id:012d}.jpg"
        images.append({"id": image_id, "file_name": image})
        # The first noun occurs in two captions: an intention naming it fails A.1.
        for text in [f"A person {scene} with a {nouns[0]}.", f"Two people near a {nouns[0]} {scene}.",
                     f"Someone {scene}.", f"A group of people {scene}.", f"A view of people {scene}."]:
            captions.append({"image_id": image_id, "id": len(captions) + 1, "caption": text})
        for j in range(5):
            template = rng.randrange(5)
            v1, v2 = rng.sample(verbs, 2)
            n1, n2 = rng.sample(nouns, 2)
            rows = _action(template, v1, n1, v2, n2)
            text = " ".join(r[0] for r in rows)
            parses[text] = _tokens(rows)
            intention = INTENTIONS[rng.randrange(len(INTENTIONS))]
            tuples.append({"image": image, "intention": intention, "action": text,
                           "annotator": f"worker{rng.randrange(25):02d}"})
    # bad input, each on images that exist (one on an image without captions)
    first = [t["image"] for t in tuples[::5]]
    extra = []
    for k, (intention, action) in enumerate(NONSENSE + LOREM + FOREIGN):
        extra.append({"image": first[k], "intention": intention, "action": action, "annotator": "bot"})
    extra.append({"image": first[5], "intention": INTENTIONS[6], "action": TOO_LONG_ACTION,
                  "annotator": "bot"})
    extra.append({"image": first[4], "intention": INTENTIONS[5], "action": MALFORMED_PARSE,
                  "annotator": "worker10"})
    for k, intention in enumerate(SHORT_INTENTIONS):
        extra.append({"image": first[k], "intention": intention, "action": "pet the dog",
                      "annotator": "worker03"})
    for k in range(3):   # names the image's frequent caption noun
        topic = sorted(TOPICS)[k % len(TOPICS)]
        extra.append({"image": first[k], "intention": f"want to look at the {TOPICS[topic][0][0]} for a while",
                      "action": tuples[5 * k]["action"], "annotator": "worker04"})
    for k, (text, rows) in enumerate(NO_NOUN_ACTIONS):
        parses[text] = _tokens(rows)
        extra.append({"image": first[k], "intention": INTENTIONS[k], "action": text, "annotator": "worker05"})
    for k, (text, rows) in enumerate(NO_VERB_ACTIONS):
        parses[text] = _tokens(rows)
        extra.append({"image": first[k + 3], "intention": INTENTIONS[k + 4], "action": text,
                      "annotator": "worker08"})
    for k, text in enumerate(UNPARSED_ACTIONS):
        extra.append({"image": first[k], "intention": INTENTIONS[k + 2], "action": text, "annotator": "worker06"})
    extra.append({"image": "COCO_train2014_000000999999.jpg", "intention": INTENTIONS[3],
                  "action": tuples[0]["action"], "annotator": "worker07"})   # no captions
    for t in ("pet the dog", "ride the skateboard"):
        parses.setdefault(t, _tokens(_action(0, t.split()[0], t.split()[2], "", "")))
    lines = [json.dumps(t) for t in tuples + extra]
    lines.append(json.dumps(tuples[1]))                                    # duplicate answer
    same = tuples[3]                       # the same answer by another annotator (§4.1)
    lines.append(json.dumps({"image": int(same["image"].split("_")[-1].split(".")[0]),
                             "intention": same["intention"],
                             "action": same["action"].capitalize().replace(" ", "  ", 1),
                             "annotator": "worker99"}))
    lines += ['{"image": "COCO_train2014_000000100007.jpg", "intention": ', # not JSON
              json.dumps({"image": first[0], "intention": INTENTIONS[0]})]  # no action
    lines.append(json.dumps({"image": first[1], "intention": "want to eat a crêpe this afternoon",
                             "action": "eat the pizza", "annotator": "worker09"},
                            ensure_ascii=False).encode("latin-1"))          # not UTF-8
    conllu = "".join(to_conllu(tokens, text=text, sent_id=f"a{n:04d}")
                     for n, (text, tokens) in enumerate(sorted(parses.items())))
    bad = to_conllu(_tokens([("wash", "wash", "VERB", 0, "root"), _det(3), ("bus", "bus", "NOUN", 1, "obj"),
                             ("slowly", "slowly", "ADV", 1, "advmod")]), text=MALFORMED_PARSE, sent_id="bad")
    bad_lines = bad.split("\n")
    bad_lines[3] = "\t".join(bad_lines[3].split("\t")[:5])      # the word "the": 5 columns
    return lines, {"images": images, "annotations": captions}, conllu + "\n".join(bad_lines)


def make_bd2bb_sample(folder: str) -> Path:
    """Write the sample into `folder` (once); returns the tuples file."""
    out = Path(folder)
    if (out / DONE_MARKER).exists():
        return out / TUPLES
    out.mkdir(parents=True, exist_ok=True)
    lines, captions, conllu = build(random.Random(0))
    (out / TUPLES).write_bytes(b"".join((line if isinstance(line, bytes) else line.encode("utf-8")) + b"\n"
                                        for line in lines))
    (out / CAPTIONS).write_text(json.dumps(captions, indent=0), encoding="utf-8")
    (out / PARSES).write_text(conllu, encoding="utf-8")
    (out / DONE_MARKER).write_text("ok\n")
    return out / TUPLES


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    folder = argv[0] if argv else "samples/bd2bb"
    print(make_bd2bb_sample(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
