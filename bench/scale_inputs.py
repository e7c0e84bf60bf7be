"""Seeded generators of realistic inputs, in each benchmark's real input format, at any
size: what `bench/bench_scale.py` builds from.

    coco_instances   VSR: a COCO instances file (images with names and URLs, annotations
                     with polygons, bbox, area: instances_train2017.json's shape, about
                     7 instances per image as train2017's 860,001 / 118,287)
    nlvr2_lines      NLVR2: public JSON Lines (dev.json's format), copies of the real
                     dev + test1 lines with their sets renumbered, whole sets only
    bd2bb_inputs     BD2BB: crowd tuples (JSON Lines), COCO captions, CoNLL-U parses of
                     the actions; about one unique action per tuple, as the real data
                     (~10k unique actions in 12,457 datapoints); some bad lines
    fg_inputs        FG: {image id: [5 captions]} JSON, target images, a pool manifest
                     (JSON Lines of path, image_id) over pool images; pictures are blocks
                     of named colours and the captions name some of them
    embedding_folder ImageCoDe static sets / any kNN: clip-retrieval's layout
                     (img_emb/img_emb_<i>.npy, metadata/metadata_<i>.parquet), 512-d
    video_manifest   ImageCoDe videos: short H.264 videos (transforms/video/synthetic.py)

Every generator writes into a folder once (a marker file holds its arguments), so a rerun
of the bench reuses them; the same arguments give the same bytes.
"""
from __future__ import annotations

import json
import os
import random
from typing import Dict, List, Tuple

import numpy as np

REALDATA = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "realdata"))
if not os.path.isdir(REALDATA):   # a checkout beside shared/ rather than in a worktree folder
    REALDATA = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "realdata"))


def _done(folder: str, args: dict) -> bool:
    marker = os.path.join(folder, ".generated.json")
    return os.path.isfile(marker) and json.load(open(marker)) == args


def _mark(folder: str, args: dict) -> None:
    with open(os.path.join(folder, ".generated.json"), "w") as f:
        json.dump(args, f)


# --------------------------------------------------------------------------- VSR: COCO

def coco_instances(folder: str, images: int, seed: int = 0) -> str:
    """instances.json with `images` images; returns its path."""
    from bench.vsr_coco_stream import write_instances
    path = os.path.join(folder, "instances.json")
    args = {"kind": "coco", "images": images, "seed": seed}
    if not _done(folder, args):
        os.makedirs(folder, exist_ok=True)
        write_instances(path, images, per_image=7, points=24, seed=seed)
        _mark(folder, args)
    return path


# --------------------------------------------------------------------------- NLVR2

def nlvr2_lines(folder: str, lines: int) -> str:
    """public.json: `lines` (rounded down to whole sets) lines made from the real dev and
    test1 files, copy c renumbering every set as set + 10000 c and its image URLs."""
    path = os.path.join(folder, "public.json")
    args = {"kind": "nlvr2", "lines": lines}
    if _done(folder, args):
        return path
    os.makedirs(folder, exist_ok=True)
    real = []
    for name in ("dev.json", "test1.json"):
        with open(os.path.join(REALDATA, "nlvr2", name), encoding="utf-8") as f:
            real += [json.loads(line) for line in f if line.strip()]
    sets: Dict[Tuple[str, str], List[dict]] = {}
    for row in real:
        split, set_id, _, _ = row["identifier"].split("-")
        sets.setdefault((split, set_id), []).append(row)
    written, copy = 0, 0
    with open(path, "w", encoding="utf-8") as out:
        while written < lines:
            for (split, set_id), rows in sets.items():
                if written + len(rows) > lines:
                    break
                for row in rows:
                    _, _, pair, sentence = row["identifier"].split("-")
                    new = dict(row, identifier=f"{split}-{int(set_id) + 10000 * copy}-{pair}-{sentence}")
                    if copy:
                        new["left_url"], new["right_url"] = (f"{row['left_url']}#copy{copy}",
                                                             f"{row['right_url']}#copy{copy}")
                    out.write(json.dumps(new) + "\n")
                written += len(rows)
            else:
                copy += 1
                continue
            break
    _mark(folder, args)
    return path


# --------------------------------------------------------------------------- BD2BB

_NOUNS = ("ball racket net player court pizza sandwich plate salad fork skateboard ramp board "
          "dog puppy leash bone cat surfboard wave beach sand kite string park tree elephant "
          "giraffe zebra zoo bus train ticket station driver guitar song piano drum book letter "
          "camera picture phone computer laptop bike helmet car road bridge boat river lake "
          "fish bird horse cow sheep farm field flower garden house door window table chair "
          "bed pillow blanket shirt jacket hat shoes bag umbrella coffee tea cake cookie apple "
          "banana orange bread cheese soup water bottle glass cup wine beer snow mountain hill "
          "forest tent fire map clock watch money gift card friend family child baby mother "
          "father teacher doctor team game movie show music dance party store market shop "
          "kitchen oven sink towel soap brush paint wall floor roof street city town airport "
          "plane ship island sun rain wind cloud sky star moon").split()
_VERBS = ("hit grab watch serve eat order share cut cook ride push jump film repair pet walk "
          "feed hug wash paddle carry catch rent fly launch hold buy photograph visit draw "
          "admire board take miss drive chase play sing read write call open close clean fix "
          "build paint find bring throw kick pull lift move wear use sell pay visit meet help "
          "teach learn follow visit climb swim run sit stand wait drink bake boil fold plant "
          "pick water bury dig light check").split()
_INTENTIONS = ("want to have some fun with my friends|am feeling very adventurous today|feel "
               "hungry after a long day at work|want to relax for a little while|am in the "
               "mood to try something new|want to make my children happy|feel like being "
               "active this afternoon|want to impress the people around me|am bored of sitting "
               "at home all day|want to remember this moment forever|feel a bit lonely this "
               "weekend|want to learn a new skill this summer|am looking for a good way to "
               "exercise|want to surprise my best friend|have a lot of energy to burn|want to "
               "be helpful to a stranger|am celebrating my birthday with family|feel curious "
               "about how things work|want to save some money this month|am on vacation with "
               "my partner").split("|")
_SCENES = ("sitting at a table", "standing on a street", "walking in a park", "playing outside",
           "waiting near a station", "working in a kitchen", "relaxing at home", "visiting a market")


def bd2bb_inputs(folder: str, tuples: int, seed: int = 0) -> Dict[str, str]:
    """tuples.jsonl (5 tuples per image), captions.json, actions.conllu; about one in a
    hundred tuples is bad input (nonsense, short intention, no noun, unparsed)."""
    from pipelines.bd2bb.sample import _action, _tokens
    from transforms.text.parsers import to_conllu
    paths = {k: os.path.join(folder, name) for k, name in
             (("tuples", "tuples.jsonl"), ("captions", "captions.json"), ("parses", "actions.conllu"))}
    args = {"kind": "bd2bb", "tuples": tuples, "seed": seed}
    if _done(folder, args):
        return paths
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(seed)
    topics = [(rng.sample(_NOUNS, 12), rng.sample(_VERBS, 8), rng.choice(_SCENES)) for _ in range(60)]
    images, captions, parsed = [], [], set()
    with open(paths["tuples"], "w", encoding="utf-8") as t_out, \
            open(paths["parses"], "w", encoding="utf-8") as p_out:
        for n in range(tuples):
            image_id = 100000 + n // 5
            image = f"COCO_train2014_{image_id:012d}.jpg"
            nouns, verbs, scene = topics[(n // 5) % len(topics)]
            if n % 5 == 0:
                images.append({"id": image_id, "file_name": image})
                for text in (f"A person {scene} with a {nouns[0]}.", f"Two people near a {nouns[0]}.",
                             f"Someone {scene}.", f"A group of people {scene}.", f"A view of a {nouns[1]}."):
                    captions.append({"image_id": image_id, "id": len(captions) + 1, "caption": text})
            v1, v2 = rng.sample(verbs, 2)
            n1, n2 = rng.sample(nouns[1:], 2)
            rows = _action(rng.randrange(5), v1, n1, v2, n2)
            action = " ".join(r[0] for r in rows)
            intention = rng.choice(_INTENTIONS)
            bad = rng.random()
            if bad < 0.003:
                intention = "asdfgh jklqwr zxcvb"
            elif bad < 0.006:
                intention = "am bored"
            elif bad < 0.009:
                action, rows = "go away quickly", None
            if rows is not None and action not in parsed and rng.random() > 0.002:   # a few unparsed
                parsed.add(action)
                p_out.write(to_conllu(_tokens(rows), text=action, sent_id=f"a{len(parsed):07d}"))
            t_out.write(json.dumps({"image": image, "intention": intention, "action": action,
                                    "annotator": f"worker{rng.randrange(500):03d}"}) + "\n")
        p_out.write(to_conllu(_tokens([("go", "go", "VERB", 0, "root"), ("away", "away", "ADV", 1, "advmod"),
                                       ("quickly", "quickly", "ADV", 1, "advmod")]),
                              text="go away quickly", sent_id="nonoun"))
    with open(paths["captions"], "w", encoding="utf-8") as f:
        json.dump({"images": images, "annotations": captions}, f)
    _mark(folder, args)
    return paths


# --------------------------------------------------------------------------- FG

_PALETTE = ("black", "white", "grey", "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown")
_RGB = {"black": (0, 0, 0), "white": (255, 255, 255), "grey": (128, 128, 128), "red": (220, 20, 60),
        "orange": (255, 140, 0), "yellow": (255, 215, 0), "green": (34, 139, 34), "blue": (30, 80, 200),
        "purple": (128, 0, 128), "pink": (255, 105, 180), "brown": (139, 69, 19)}
_THINGS = ("car", "dog", "cat", "bus", "boat", "kite", "bird", "horse", "table", "plate", "train",
           "bench", "umbrella", "pizza", "clock", "vase", "chair", "bicycle", "sign", "cake")


def _picture(rng: np.random.Generator, side: int = 48) -> Tuple[np.ndarray, List[str]]:
    """A side x side picture of 3x3 blocks of named colours, a little noise; its two
    main colours."""
    names = [_PALETTE[i] for i in rng.integers(0, len(_PALETTE), 9)]
    blocks = np.array([_RGB[n] for n in names], np.float32).reshape(3, 3, 3)
    image = np.kron(blocks, np.ones((side // 3, side // 3, 1), np.float32))
    image += rng.normal(0, 6, image.shape)
    main = sorted(set(names), key=lambda n: (-names.count(n), n))[:2]
    return np.clip(image, 0, 255).astype(np.uint8), main


def _save_jpeg(image: np.ndarray, path: str) -> None:
    from PIL import Image
    Image.fromarray(image).save(path, quality=90)


def fg_inputs(folder: str, targets: int, pool: int, seed: int = 0) -> Dict[str, str]:
    """captions.json, images/ (targets), pool.jsonl over pool/ (COCO unlabeled2017 names).
    Pool pictures are shared by every size of one folder: a larger pool lists more."""
    paths = {"captions": os.path.join(folder, f"captions-{targets}.json"),
             "images": os.path.join(folder, f"images-{targets}"),
             "pool": os.path.join(folder, f"pool-{pool}.jsonl")}
    args_t = {"kind": "fg-targets", "targets": targets, "seed": seed}
    marker_t = os.path.join(paths["images"])
    os.makedirs(marker_t, exist_ok=True)
    if not _done(marker_t, args_t):
        rng = np.random.default_rng(seed)
        captions = {}
        for n in range(targets):
            image_id = f"COCO_val2014_{n + 1:012d}"
            image, main = _picture(rng)
            _save_jpeg(image, os.path.join(paths["images"], f"{image_id}.jpg"))
            thing = _THINGS[int(rng.integers(len(_THINGS)))]
            captions[image_id] = [f"a {main[0]} {thing} next to a {main[-1]} wall",
                                  f"a {thing} in a room", f"the {thing} is {main[0]}",
                                  f"a picture of a {thing} and something {main[-1]}",
                                  f"someone looking at a {thing}"]
        with open(paths["captions"], "w") as f:
            json.dump(captions, f)
        _mark(marker_t, args_t)
    pool_dir = os.path.join(folder, "unlabeled2017")
    os.makedirs(pool_dir, exist_ok=True)
    have = len(os.listdir(pool_dir))
    for n in range(have, pool):   # picture n from its own seed: the same whatever the order of sizes
        _save_jpeg(_picture(np.random.default_rng([seed, 1, n]))[0], os.path.join(pool_dir, f"{n + 1:012d}.jpg"))
    if not os.path.isfile(paths["pool"]):
        with open(paths["pool"] + ".tmp", "w") as f:
            for n in range(pool):
                name = f"{n + 1:012d}"
                f.write(json.dumps({"path": f"unlabeled2017/{name}.jpg", "image_id": name}) + "\n")
        os.replace(paths["pool"] + ".tmp", paths["pool"])
    return paths


# --------------------------------------------------------------------------- vectors

def embedding_folder(folder: str, vectors: int, dim: int = 512, part_rows: int = 100_000,
                     seed: int = 0) -> str:
    """clip-retrieval layout of `vectors` unit vectors (ids = image paths), in parts; the
    vectors lie around 1,000 centres (CLIP encodings of a photo collection cluster)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    args = {"kind": "embeddings", "vectors": vectors, "dim": dim, "part_rows": part_rows, "seed": seed}
    if _done(folder, args):
        return folder
    os.makedirs(os.path.join(folder, "img_emb"), exist_ok=True)
    os.makedirs(os.path.join(folder, "metadata"), exist_ok=True)
    centres = np.random.default_rng([seed, 0]).standard_normal((1000, dim), dtype=np.float32)
    for part, start in enumerate(range(0, vectors, part_rows)):
        rng = np.random.default_rng([seed, 1, part])
        n = min(part_rows, vectors - start)
        x = centres[rng.integers(0, len(centres), n)] + rng.standard_normal((n, dim), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        np.save(os.path.join(folder, "img_emb", f"img_emb_{part}.npy"), x.astype(np.float32))
        names = [f"train/{start + j:016x}.jpg" for j in range(n)]
        pq.write_table(pa.table({"image_path": names}), os.path.join(folder, "metadata", f"metadata_{part}.parquet"))
    _mark(folder, args)
    return folder


# --------------------------------------------------------------------------- videos

_VIDEO_PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "motorcycle_left", "motorcycle_right")


def video_manifest(folder: str, videos: int, shots: int = 3, frames_per_shot: int = 30) -> str:
    """videos.jsonl over `videos` short 320x240 videos (pans over real photos, one shot in
    three captioned), each its own content."""
    from transforms.video import synthetic
    path = os.path.join(folder, f"videos-{videos}.jsonl")
    os.makedirs(folder, exist_ok=True)
    lines = []
    for v in range(videos):
        video = os.path.join(folder, f"video{v:03d}.mp4")
        segments = [(_VIDEO_PHOTOS[(v + s) % len(_VIDEO_PHOTOS)], frames_per_shot + v % 7,
                     "pan+text" if s == 2 else ("zoom" if (v + s) % 2 else "pan")) for s in range(shots)]
        if not os.path.isfile(video):
            synthetic.make_video(video + ".tmp.mp4", segments, size=(320, 240))
            os.replace(video + ".tmp.mp4", video)
        lines.append(json.dumps({"path": video, "source": "bench", "video_id": f"video{v:03d}",
                                 "split": "train"}))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
