"""The embedded FG sample: generated deterministically on first use, never downloaded.

    python -m pipelines.fg.sample samples/fg

Eight of scikit-image's photos are the "old test images" (targets), each with five
captions written for it (some name colours, most do not); variations of them (crops,
a flip, colour shifts) stand in for COCO unlabeled2017 as the candidate pool, in both id
styles (COCO's 12-digit names; Flickr30K's numeric ids for its targets). The kinds of
bad input a real build meets are in it too: a pool file that does not decode, a pool
line with a target's id, a captioned id without an image and an image without captions.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

DONE_MARKER = ".complete-v2"

# photo -> five captions (written for the photo)
PHOTOS = {
    "astronaut": ["a woman in a space suit poses in front of a flag",
                  "an astronaut smiling for a portrait",
                  "a person in a white suit with a helmet nearby",
                  "a smiling woman wearing an orange and white suit",
                  "a portrait of a person indoors"],
    "chelsea": ["a cat looking to the side",
                "a brown and orange cat sitting near a wall",
                "a close up of a cat's face",
                "a tabby cat with green eyes",
                "a small animal looks at something"],
    "coffee": ["a cup of coffee on a saucer",
               "a white cup with a spoon on a table",
               "a cup of coffee with foam on top",
               "a drink on a red table",
               "a mug sitting on a plate"],
    "rocket": ["a rocket on a launch pad",
               "a rocket ready for launch under a blue sky",
               "a space shuttle standing on the pad",
               "a tall rocket next to a tower",
               "a launch site with a rocket"],
    "motorcycle_left": ["a motorcycle parked in a garage",
                        "a red motorcycle in a room",
                        "a bike standing inside a building",
                        "a motorbike parked next to a wall",
                        "a motorcycle with a black seat"],
    "hubble_deep_field": ["a picture of many galaxies",
                          "stars and galaxies in a black sky",
                          "a view of deep space",
                          "a dark sky full of small lights",
                          "an image taken by a telescope"],
    "retina": ["a picture of an eye",
               "an orange image of a retina",
               "a medical scan of an eye",
               "blood vessels on a red background",
               "a round picture with lines"],
    "ihc": ["a microscope image of tissue",
            "purple and brown stained cells",
            "a slide of a tissue sample",
            "cells under a microscope",
            "a close up of a sample"],
}
EXTRA_IMAGE = "coins"   # a target image without captions (no_captions)
SIDE = 160


FILES = {"astronaut": "astronaut.png", "chelsea": "chelsea.png", "coffee": "coffee.png",
         "rocket": "rocket.jpg", "motorcycle_left": "motorcycle_left.png",
         "hubble_deep_field": "hubble_deep_field.jpg", "retina": "retina.jpg", "ihc": "ihc.png",
         "coins": "coins.png"}   # files scikit-image ships (no download)


def _photo(name: str) -> np.ndarray:
    import os

    import skimage
    from PIL import Image
    from skimage import transform, util
    path = os.path.join(os.path.dirname(skimage.__file__), "data", FILES[name])
    image = np.asarray(Image.open(path))
    if image.ndim == 2:
        image = np.stack([image] * 3, axis=-1)
    image = image[..., :3]
    resized = transform.resize(image, (SIDE, SIDE), anti_aliasing=True)
    return util.img_as_ubyte(resized)


def _variations(image: np.ndarray):
    """(suffix, image): views a pool of similar photos would hold."""
    h, w = image.shape[:2]
    crop = lambda y, x: image[y:y + h * 3 // 4, x:x + w * 3 // 4]   # noqa: E731
    warm = np.clip(image.astype(int) * [1.25, 1.0, 0.8], 0, 255).astype(np.uint8)
    cool = np.clip(image.astype(int) * [0.8, 1.0, 1.25], 0, 255).astype(np.uint8)
    return [("crop-tl", crop(0, 0)), ("crop-br", crop(h // 4, w // 4)), ("flip", image[:, ::-1]),
            ("warm", warm), ("cool", cool), ("swap", image[..., ::-1])]


def _save(image: np.ndarray, path: Path) -> None:
    from PIL import Image
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.ascontiguousarray(image)).save(path, quality=92)


def target_ids(style: str):
    """photo -> target image id in the configuration's id style."""
    if style == "mscoco":
        return {name: f"COCO_val2014_{100 + n:012d}" for n, name in enumerate(PHOTOS)}
    return {name: str(1000000 + n) for n, name in enumerate(PHOTOS)}


def make_fg_sample(out_dir: str) -> Path:
    """Write both configurations' sample inputs into `out_dir` (once)."""
    out = Path(out_dir)
    if (out / DONE_MARKER).exists():
        return out
    photos = {name: _photo(name) for name in list(PHOTOS) + [EXTRA_IMAGE]}
    pool_lines = []
    counter = 0
    for name in PHOTOS:
        for suffix, image in _variations(photos[name]):
            counter += 1
            file_name = f"{counter:012d}.jpg"   # unlabeled2017 names
            _save(image, out / "unlabeled2017" / file_name)
            pool_lines.append({"path": f"unlabeled2017/{file_name}", "image_id": file_name[:-4]})
    (out / "unlabeled2017").mkdir(parents=True, exist_ok=True)
    (out / "unlabeled2017" / "999999999999.jpg").write_bytes(b"\xff\xd8 not a JPEG")
    pool_lines.append({"path": "unlabeled2017/999999999999.jpg", "image_id": "999999999999"})
    for style in ("mscoco", "flickr30k"):
        ids = target_ids(style)
        folder = out / style
        for name, image_id in ids.items():
            _save(photos[name], folder / "images" / f"{image_id}.jpg")
        extra = f"COCO_val2014_{999:012d}" if style == "mscoco" else "1999999"
        _save(photos[EXTRA_IMAGE], folder / "images" / f"{extra}.jpg")
        captions = {ids[name]: list(texts) for name, texts in PHOTOS.items()}
        missing = f"COCO_val2014_{998:012d}" if style == "mscoco" else "1999998"
        captions[missing] = ["an image that is not there"] * 5    # no_image
        (folder / "captions.json").write_text(json.dumps(captions, indent=1, sort_keys=True) + "\n")
        lines = [{"path": f"../{line['path']}", "image_id": line["image_id"]} for line in pool_lines]
        lines.append({"path": f"images/{ids['rocket']}.jpg", "image_id": ids["rocket"]})  # target_in_pool
        (folder / "pool.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (out / DONE_MARKER).write_text("generated by pipelines/fg/sample.py\n")
    return out


if __name__ == "__main__":
    print(make_fg_sample(sys.argv[1] if len(sys.argv) > 1 else "samples/fg"))
