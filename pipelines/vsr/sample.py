"""The embedded VSR sample: generated deterministically, never downloaded.

    python -m pipelines.vsr.sample samples/vsr

writes
  instances_train2017.json, instances_val2017.json  small COCO-format instances files (all
      80 categories; images with one large instance of a few concepts, and images that the
      §3.1 filters must drop: two instances, a crowd region, a small instance), plus the bad
      records a real file can have (an entry without area, an unknown category id, an
      annotation of an image no entry lists, an image id used in both files)
  instances_broken.json   a truncated instances file (malformed_coco)
  captions.jsonl          simulated writer output for the pairs the sample config samples,
                          and bad lines (unknown pair, relation outside Table 1, second
                          answer for a pair, a true_image outside the pair, not JSON)
  votes.jsonl             three validators per example, some disagreeing, and a writer
                          vote, a duplicate vote, a validator in both lists, a vote on an
                          unknown example
  extra_labels.jsonl      two extra annotators on some examples (§3.5)
  public_layout.jsonl     lines in the public raw layout, good and bad
  images/<source>/<file>  a small picture for each COCO image of the instances files, what
                          the worker pages' previews show from disk (inputs.coco_images;
                          the build reads no pixel)
The answers are computed with the pipeline's own pure sampling functions for the sample
config, so they name the pairs the build samples; like a platform export, each carries
its task's task_fingerprint (what the worker saw). A second call does nothing.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace

from pipelines.config import load_config
from pipelines.vsr.captions import render_caption
from pipelines.vsr.config import VsrConfig
from pipelines.vsr.pairs import choose_images, concept_verdicts, draw_plan, pair_key
from pipelines.vsr.records import example_id
from pipelines.vsr.relations import RELATIONS
from pipelines.vsr.release import caption_view, validation_view
from schemas.coco import CATEGORIES, ID_BY_NAME
from transforms.coco.instances import source_of
from transforms.crowd.shown import FINGERPRINT

SAMPLE_CONFIG = str(Path(__file__).with_name("configs") / "sample.yaml")
CONCEPTS = ("cat", "laptop", "dog", "bench", "person", "umbrella", "pizza", "dining table",
            "couch", "bed")
DONE_MARKER = ".complete-v6"   # v6: images/ for the worker pages' previews
WRITERS = ("w1", "w2", "w3")
VALIDATORS = tuple(f"v{i}" for i in range(1, 10))


def _coco_files(out: Path, rng: random.Random):
    """Both instances files; returns {source: (images, annotations)} as written."""
    categories = [{"id": cid, "name": name, "supercategory": sup} for cid, name, sup in CATEGORIES]
    files, ann_id = {}, 1
    for source, first, count in (("train2017", 1, 48), ("val2017", 1001, 16)):
        images, annotations = [], []
        for image_id in range(first, first + count):
            name = f"{image_id:012d}.jpg"
            images.append({"id": image_id, "file_name": name, "width": 640, "height": 480,
                           "coco_url": f"http://images.cocodataset.org/{source}/{name}"})
            for concept in rng.sample(CONCEPTS, rng.choice((2, 3, 3, 4))):
                instances, area, crowd = 1, rng.uniform(31000.0, 150000.0), 0
                roll = rng.random()
                if roll < 0.08:
                    instances = 2                       # multiple_instances
                elif roll < 0.12:
                    crowd = 1                           # a crowd region: many instances
                elif roll < 0.2:
                    area = rng.uniform(2000.0, 29999.0)  # small_instance
                for _ in range(instances):
                    annotations.append({"id": ann_id, "image_id": image_id,
                                        "category_id": ID_BY_NAME[concept], "area": round(area, 1),
                                        "bbox": [0, 0, 10, 10], "iscrowd": crowd,
                                        "segmentation": [[0, 0, 10, 0, 10, 10]]})
                    ann_id += 1
        files[source] = (images, annotations)
    train_images, train_annotations = files["train2017"]
    train_annotations += [
        {"id": ann_id, "image_id": 1, "category_id": 17, "iscrowd": 0},          # no area
        {"id": ann_id + 1, "image_id": 2, "category_id": 12, "area": 50000.0, "iscrowd": 0},  # id 12 is no category
        {"id": ann_id + 2, "image_id": 99999, "category_id": 17, "area": 50000.0, "iscrowd": 0}]
    val_images, _ = files["val2017"]
    val_images.append(dict(train_images[0]))       # duplicate_coco_image: id 1 in both files
    for source, (images, annotations) in files.items():
        doc = {"info": {"description": "VSR sample (generated)"}, "licenses": [],
               "images": images, "annotations": annotations, "categories": categories}
        (out / f"instances_{source}.json").write_text(json.dumps(doc))
    broken = json.dumps({"images": files["val2017"][0], "annotations": files["val2017"][1]})
    (out / "instances_broken.json").write_text(broken[: len(broken) // 2])
    return files


def _sampled_pairs(files, cfg: VsrConfig):
    """The pairs the build will sample, by the pipeline's own pure functions."""
    from schemas.coco import CocoImage
    images, by_image, broken = {}, {}, {}
    for source, (entries, anns) in files.items():
        path = f"instances_{source}.json"
        for e in entries:
            images.setdefault(e["id"], CocoImage(e["id"], e["file_name"], e["coco_url"],
                                                 source_of(path, e["coco_url"])))
        for a in anns:
            if isinstance(a.get("area"), float) and a["image_id"] in images:
                by_image.setdefault(a["image_id"], []).append(
                    (a["image_id"], a["category_id"], a["area"], a["iscrowd"]))
            elif "area" not in a:        # bad_coco_record: its concept is not eligible there
                broken.setdefault(a["image_id"], []).append(a["category_id"])
    pools = {}
    for image_id, image_anns in by_image.items():
        known = [a for a in image_anns if a[1] in {c[0] for c in CATEGORIES}]
        eligible, _ = concept_verdicts(known, cfg.sampling.min_area, cfg.sampling.max_instances,
                                       broken.get(image_id, ()))
        names = sorted(eligible)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                pools.setdefault(pair_key(a, b), []).append((images[image_id], eligible[a], eligible[b]))
    plan, _ = draw_plan({k: len(v) for k, v in pools.items()}, cfg.seed, cfg.sampling.pairs,
                        cfg.sampling.max_draws)
    draws = {}
    for key, draw, repeat, first in plan:
        draws.setdefault(key, []).append((draw, repeat, first))
    pairs = []
    for key, ds in sorted(draws.items()):
        pairs += list(choose_images(key, {"pool": pools[key], "draws": ds}, cfg.seed))
    return sorted(pairs, key=lambda p: p.pair_id)


def _answers(out: Path, pairs, rng: random.Random) -> None:
    captions, votes, extra, examples = [], [], [], []
    for n, pair in enumerate(pairs):
        relation = rng.choice(RELATIONS)
        true_image = pair.images[n % 2].file_name
        writer = WRITERS[n % len(WRITERS)]
        captions.append({"pair_id": pair.pair_id, "relation": relation, "true_image": true_image,
                         "annotator_id": writer, FINGERPRINT: caption_view(pair).fingerprint})
        caption = render_caption(pair.subj, relation, pair.obj)
        for image in pair.images:
            shown = validation_view(SimpleNamespace(image=image.file_name, image_link=image.coco_url,
                                                    caption=caption))
            examples.append((example_id(image.file_name, caption), int(image.file_name == true_image),
                             writer, shown.fingerprint))
    first = captions[0]
    captions += [
        dict(first, annotator_id="w9"),                                   # duplicate_caption
        {"pair_id": "pair-000000000000", "relation": "near", "true_image": "x.jpg",
         "annotator_id": "w1"},                                           # unknown_pair
        dict(captions[1], relation="beside of"),                          # relation_not_in_list
        dict(captions[2], true_image="000000999999.jpg"),                 # bad_field
    ]
    lines = [json.dumps(c) for c in captions] + ["{not json"]
    (out / "captions.jsonl").write_text("\n".join(lines) + "\n")
    for n, (eid, label, writer, shown) in enumerate(examples):
        validators = rng.sample(VALIDATORS, 3)
        wrong = 2 if n % 5 == 4 else (1 if n % 3 == 0 else 0)      # every 5th: low agreement
        for k, v in enumerate(validators):
            votes.append({"example_id": eid, "validator_id": v,
                          "label": label if k >= wrong else 1 - label, FINGERPRINT: shown})
        if n % 4 == 0:
            extra += [{"example_id": eid, "annotator_id": a, "label": label if (n + i) % 9 else 1 - label}
                      for i, a in enumerate(("x1", "x2"))]
    eid0, label0, writer0, shown0 = examples[0]
    eid1, label1, _, shown1 = examples[1]
    votes += [{"example_id": eid0, "validator_id": writer0, "label": label0,
               FINGERPRINT: shown0},                                               # writer_vote
              {"example_id": eid1, "validator_id": votes[3]["validator_id"],
               "label": votes[3]["label"], FINGERPRINT: shown1},                   # duplicate_vote
              {"example_id": eid1, "validator_id": votes[4]["validator_id"],
               "label": 1 - votes[4]["label"], FINGERPRINT: shown1},               # conflicting_votes
              {"example_id": "0000000000000000", "validator_id": "v1", "label": 1}]  # unknown_example
    (out / "votes.jsonl").write_text("\n".join(json.dumps(v) for v in votes) + "\n{\"label\": 1}\n")
    extra.append({"example_id": "0000000000000000", "annotator_id": "x1", "label": 0})
    (out / "extra_labels.jsonl").write_text("\n".join(json.dumps(e) for e in extra) + "\n")


def _public_layout(out: Path, files) -> None:
    """Public raw-layout lines on the sample's val images: good ones and each kind of bad."""
    images = files["val2017"][0]

    def line(i, caption, relation, label=1, true=("v1", "v2"), false=("v3",), writer="w2"):
        image = images[i]
        return {"image": image["file_name"], "image_link": image["coco_url"], "caption": caption,
                "label": label, "relation": relation, "annotator_id": writer,
                "vote_true_validator_id": list(true), "vote_false_validator_id": list(false)}
    good = [line(0, "The cat is under the laptop.", "under"),
            line(1, "The dog is at the right side of the bench.", "at the right side of", 0,
                 ("v4",), ("v5", "v6", "v7")),
            line(2, "The dining table contains the pizza.", "contains"),
            line(3, "The hot dog is on the dining table.", "on", 1, ("v1",), ("v2", "v3")),
            # both concepts in the zero-shot dev part (seed 0): the sample's zero-shot dev
            # holds an example, so compat/splits/zeroshot/dev.jsonl loads (README, "Loading compat/")
            line(9, "The umbrella is under the laptop.", "under")]
    bad = [dict(good[0]),                                                   # duplicate_example
           line(4, "The cat is beside of the dog.", "beside of"),           # relation_not_in_list
           line(5, "The orse is near the dog.", "near"),                    # caption_unparsed
           line(6, "The cat is near the dog.", "under"),                    # relation_mismatch
           dict(line(7, "The cat is near the dog.", "near"), label=2),      # bad_field
           dict(line(8, "The cat is near the dog.", "near"), image="000000777777.jpg",   # unknown_image
                image_link="http://images.cocodataset.org/val2017/000000777777.jpg")]
    lines = [json.dumps(x) for x in good + bad] + ["not json", json.dumps({"image": "a.jpg"})]
    (out / "public_layout.jsonl").write_text("\n".join(lines) + "\n")


def _pictures(out: Path, files) -> None:
    """A small JPEG for each image the instances files list, at COCO's layout
    (images/train2017/000000000001.jpg): a colour of its id and its name, so a preview
    shows which image it is. Drawn after the answers: no random draw of theirs moves."""
    from PIL import Image, ImageDraw
    for source, (images, _) in files.items():
        folder = out / "images" / source
        folder.mkdir(parents=True, exist_ok=True)
        for entry in images:
            shade = (entry["id"] * 53) % 200 + 40
            picture = Image.new("RGB", (160, 120), (shade, 255 - shade, (shade * 3) % 256))
            draw = ImageDraw.Draw(picture)
            draw.rectangle((40, 30, 120, 90), outline=(255, 255, 255), width=3)
            draw.text((8, 100), entry["file_name"], fill=(0, 0, 0))
            picture.save(folder / entry["file_name"], quality=85)


def make_vsr_sample(out_dir: str, config: str = SAMPLE_CONFIG) -> Path:
    """Write the sample into `out_dir` (once); returns the folder."""
    out = Path(out_dir)
    if (out / DONE_MARKER).exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    cfg = load_config(config, [], VsrConfig)
    rng = random.Random(5)
    files = _coco_files(out, rng)
    _answers(out, _sampled_pairs(files, cfg), rng)
    _public_layout(out, files)
    _pictures(out, files)
    (out / DONE_MARKER).write_text("")
    return out


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m pipelines.vsr.sample OUT_DIR", file=sys.stderr)
        return 2
    print(f"sample: {make_vsr_sample(args[0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
