"""The embedded NLVR2 sample: generated images and simulated answers of every round, with
bad rows of each kind, so that every reject reason of the collection stages occurs.

Images are variations (crops, flips, colour shifts) of scikit-image's bundled photos
(`coffee` for the synset cup, `chelsea` for tabby), with a few made smaller than
200x200, exact copies, files that do not exist and images reused across sets of a query.
The simulated workers answer the tasks each round exports: the sample computes them with
the stages' own pure rules (search.apply_caps / prune_query_sets, rounds.*,
splits.assign_splits) under configs/sample.yaml, so the answers name exactly the items of
each round, and then adds the bad rows. Like a platform export, each answer row carries
its task's task_fingerprint (what the worker saw), so the build can bind it to content.
"""
from __future__ import annotations

import csv
import functools
import json
import os
from typing import Dict, List

import numpy as np
import yaml

from pipelines.config import from_dict
from pipelines.nlvr2.collection.config import CollectionConfig
from pipelines.nlvr2.collection.image_sets import Image, ImageSet
from pipelines.nlvr2.collection.queries import synset_queries
from pipelines.nlvr2.collection.rounds import (Sentence, candidates, construct_set, example_id, image_task,
                                               pair_up, prune_round1, validation_task, writing_tasks)
from pipelines.nlvr2.collection.search import apply_caps, cap_for, prune_query_sets
from pipelines.nlvr2.collection.splits import assign_splits
from pipelines.nlvr2.collection.synsets import hypernym_table, select_synsets
from transforms.core.sampling import priority
from transforms.crowd.shown import FINGERPRINT

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs", "sample.yaml")
IMAGES_PER_SET = 12


def _config():
    with open(CONFIG, encoding="utf-8") as f:
        raw = yaml.safe_load(f)
    return raw["seed"], from_dict(CollectionConfig, raw["collection"], "collection.")


@functools.lru_cache(maxsize=None)
def _photo(name: str) -> np.ndarray:
    import skimage.data
    return getattr(skimage.data, name)()


def _variant(photo: np.ndarray, n: int, size: int) -> np.ndarray:
    """A crop of `photo` at an offset n picks, flipped and colour-shifted by n."""
    from PIL import Image as PILImage
    h, w = photo.shape[:2]
    side = min(h, w) * (60 + (n * 7) % 35) // 100
    y, x = (n * 37) % (h - side + 1), (n * 53) % (w - side + 1)
    crop = photo[y:y + side, x:x + side]
    if n % 2:
        crop = crop[:, ::-1]
    out = np.asarray(PILImage.fromarray(np.ascontiguousarray(crop)).resize((size, size), PILImage.BILINEAR),
                     dtype=np.int16)
    shift = np.array([(n * 13) % 40, (n * 29) % 40, (n * 7) % 40]) - 20
    return np.clip(out + shift, 0, 255).astype(np.uint8)


def _save(array: np.ndarray, path: str) -> None:
    from PIL import Image as PILImage
    PILImage.fromarray(array).save(path, format="JPEG", quality=80)


# (synset, query, photo, ranks); ranks -> "set" (a set of IMAGES_PER_SET), "miss" (no
# similar images), "small" (a set of mostly small images)
PLAN = [("cup", "two cups", "coffee", ["set", "set", "set", "set", "set", "small"]),
        ("cup", "some cups", "coffee", ["set", "miss", "miss", "set"]),
        ("tabby", "two tabbies", "chelsea", ["set", "set", "set", "set", "set"]),
        ("tabby", "tabbies sleeping", "chelsea", ["set", "set"])]


def _search(folder: str) -> List[dict]:
    """Images on disk and the search-result lines (paths relative to the folder)."""
    os.makedirs(os.path.join(folder, "images"), exist_ok=True)
    lines, n = [], 0
    for synset, query, photo_name, ranks in PLAN:
        photo = _photo(photo_name)
        for rank, kind in enumerate(ranks):
            if kind == "miss":
                n += 1
                name = f"images/{n:04d}.jpg"
                _save(_variant(photo, n, 240), os.path.join(folder, name))
                lines.append({"query": query, "rank": rank, "seed": name, "similar": []})
                continue
            names = []
            for i in range(IMAGES_PER_SET):
                n += 1
                name = f"images/{n:04d}.jpg"
                small = kind == "small" and i > 2
                _save(_variant(photo, n, 150 if small else 200 + (n % 5) * 12), os.path.join(folder, name))
                names.append(name)
            lines.append({"query": query, "rank": rank, "seed": names[0], "similar": names[1:]})
    # S3's own problems, in the first query's second set: an image of the first set again,
    # a file that does not exist, one smaller than 200x200, an exact copy of another image
    second = lines[1]
    second["similar"][0] = lines[0]["seed"]
    second["similar"][1] = "images/missing.jpg"
    _save(_variant(_photo("coffee"), 999, 120), os.path.join(folder, "images/tiny.jpg"))
    second["similar"][2] = "images/tiny.jpg"
    with open(os.path.join(folder, second["similar"][3]), "rb") as f:
        data = f.read()
    with open(os.path.join(folder, "images/copy.jpg"), "wb") as f:
        f.write(data)
    second["similar"][4] = "images/copy.jpg"
    return lines


def _surviving(drops_and_items, kind=ImageSet):
    return [x for x in drops_and_items if isinstance(x, kind)]


def _write_jsonl(path: str, rows: List, bad: List[str] = ()) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
        for line in bad:
            f.write(line + "\n")


def answer_pruning(tasks: List[dict], seed: int) -> List[dict]:
    """Round 1 (S4) answers to the exported tasks: keep, except one image of each removal
    kind, a set with five removals (it falls under 8), and one image left unanswered."""
    verdicts = ["unloadable", "inappropriate", "artwork_or_collage", "no_synset_instance"]
    rows = []
    for t, task in enumerate(tasks):
        for i, image in enumerate(task["images"]):
            verdict = "keep"
            if t < len(verdicts) and i == 1:
                verdict = verdicts[t]
            if t == len(tasks) - 1 and i < 5:
                verdict = verdicts[i % 4]
            if t == 0 and i == 2:
                continue   # unanswered
            rows.append({"set": task["set"], "image": str(image["image"]), "verdict": verdict,
                         FINGERPRINT: task[FINGERPRINT]})
    return rows


def answer_interest(tasks: List[dict], seed: int) -> List[dict]:
    """Round 2 (S5): one duplicate per set, all interesting except in one set (only 2
    interesting) and in another (5 duplicates: under 8); one image unanswered."""
    rows = []
    for t, task in enumerate(tasks):
        for i, image in enumerate(task["images"]):
            if t == 0 and i == 3:
                continue
            duplicate = i == 2 or (t == 1 and i < 6)
            interesting = not (t == 2 and i >= 2)
            rows.append({"set": task["set"], "image": image["image"], "duplicate": "yes" if duplicate else "no",
                         "interesting": "yes" if interesting else "no", FINGERPRINT: task[FINGERPRINT]})
    return rows


def answer_writing(tasks: List[dict], seed: int) -> List[dict]:
    """Round 4 (S6-S7): each writer selects two of the four pairs. A later sentence of a
    set that would select the same two pairs as an earlier one keeps one of them and
    swaps the other for a pair outside them, so that an image pair of the set is true of
    one sentence and false of another: the balanced subset (`filter_data.py`) of every
    held-out split then holds examples (otherwise the sample's test1 had none)."""
    rows, selected_in_set = [], {}
    for t, task in enumerate(tasks):
        if t == 1:
            continue   # a task nobody wrote
        first = priority(seed, "select/" + task["task"]) % 4
        second = (first + 1 + priority(seed, "second/" + task["task"]) % 3) % 4
        earlier = selected_in_set.setdefault(task["task"].rsplit("#", 1)[0], [])
        if sorted([first, second]) in earlier:
            outside = [pair for pair in range(4) if pair not in (first, second)]
            second = outside[priority(seed, "other/" + task["task"]) % 2]
        earlier.append(sorted([first, second]))
        rows.append({"task": task["task"], "writer": f"w{t % 3}", "selected": sorted([first, second]),
                     "sentence": f"There are exactly two {task['synset']} things in pair {first} and {second} ({t}).",
                     FINGERPRINT: task[FINGERPRINT]})
    return rows


def answer_validation(tasks: List[dict], labels: Dict[str, bool]) -> List[dict]:
    rows = []
    for t, task in enumerate(tasks):
        if t == 0:
            continue   # unanswered
        judgement = str(labels[task["example"]])
        if t == 1:
            judgement = "report"
        elif t == 2:
            judgement = str(not labels[task["example"]])
        rows.append({"example": task["example"], "worker": f"v{t % 4}", "judgement": judgement,
                     FINGERPRINT: task[FINGERPRINT]})
    return rows


def answer_extra(tasks: List[dict], labels: Dict[str, bool], judgements: int) -> List[dict]:
    rows = []
    for t, task in enumerate(tasks):
        if t == 0:
            continue   # unanswered
        for k in range(judgements):
            judgement = labels[task["example"]]
            if (t == 1 and k < 2) or (t == 3 and k == 0):
                judgement = not judgement   # t == 1: removed; t == 3: kept with one dissent
            rows.append({"example": task["example"], "worker": f"x{k}", "judgement": str(judgement),
                         FINGERPRINT: task[FINGERPRINT]})
        if t == 2:   # one judgement too many
            rows.append({"example": task["example"], "worker": f"x{judgements}",
                         "judgement": str(labels[task["example"]]), FINGERPRINT: task[FINGERPRINT]})
    return rows


def make_nlvr2_sample(folder: str) -> None:
    seed, cfg = _config()
    os.makedirs(folder, exist_ok=True)
    results = _search(folder)
    _write_jsonl(os.path.join(folder, "search_results.jsonl"), results, bad=[
        '{"query": "two cups", "rank": 0, "seed": "images/0001.jpg", "similar": []}',   # duplicate_result
        '{"query": "three cups", "rank": 0, "seed": "images/0001.jpg", "similar": []}',  # unknown_query
        '{"query": "two cups", "rank": -1, "seed": "images/0001.jpg", "similar": []}',   # bad_field
        '{"query": "two cups", "rank": 9, "similar": []}',                                # missing_field
        '{"query": "two cups", "rank": 9, "seed": "x.jpg", "similar": [',                 # bad_json
    ])

    # S2-S3 as the build runs them
    base = folder
    sets_by_query: Dict[str, List[ImageSet]] = {}
    for line in results:
        images = tuple(Image(i, e, os.path.join(base, e)) for i, e in enumerate([line["seed"]] + line["similar"]))
        synset = next(s for s, q, _, _ in PLAN if q == line["query"])
        sets_by_query.setdefault(line["query"], []).append(ImageSet(line["query"], line["rank"], synset, images))
    queries = {q.text: q for s in select_synsets(cfg.synsets.names)
               for q in synset_queries(s, cfg.queries, cfg.search, hypernym_table(), {})}
    pruned = []
    for query, sets in sorted(sets_by_query.items()):
        max_results, max_sets = cap_for(queries[query], cfg.search)
        saved = _surviving(apply_caps(sets, max_results, max_sets, cfg.search.max_misses_in_a_row))
        pruned += _surviving(prune_query_sets(saved, cfg.pruning))
    pruned.sort(key=lambda s: s.key)

    # S4
    tasks = [image_task(s) for s in pruned]
    rows = answer_pruning(tasks, seed)
    with open(os.path.join(folder, "pruning_answers.csv"), "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["set", "image", "verdict", FINGERPRINT])
        writer.writeheader()
        writer.writerows(rows)
        writer.writerow({"set": "no such set#0", "image": "0", "verdict": "keep"})      # unknown_item
        writer.writerow({"set": tasks[0]["set"], "image": "0", "verdict": "blurry"})    # bad_answer
        writer.writerow(rows[0])                                                         # duplicate_answer
        writer.writerow({"set": tasks[0]["set"], "image": "", "verdict": "keep"})       # missing_field
    verdicts = {}
    for row in rows:
        verdicts.setdefault(row["set"], {}).setdefault(int(row["image"]), row["verdict"])
    round1 = _surviving(x for s in pruned for x in prune_round1(s, verdicts.get(s.key, {}), cfg.pruning))

    # S5
    tasks = [image_task(s) for s in round1]
    rows = answer_interest(tasks, seed)
    _write_jsonl(os.path.join(folder, "interest_answers.jsonl"), rows, bad=[
        json.dumps({"set": tasks[0]["set"], "image": 999, "duplicate": "no", "interesting": "yes"}),   # unknown_item
        json.dumps({"set": tasks[0]["set"], "image": 0, "duplicate": "maybe", "interesting": "yes"}),  # bad_answer
        json.dumps(rows[0])])                                                                           # duplicate_answer
    answers = {}
    for row in rows:
        answers.setdefault(row["set"], {})[int(row["image"])] = (row["duplicate"] == "yes", row["interesting"] == "yes")
    built = _surviving(x for s in round1 for x in construct_set(s, answers.get(s.key, {}), cfg.pruning))

    # S6-S7
    paired = {p.key: p for p in (pair_up(s, seed) for s in built)}
    tasks = [t for p in sorted(paired.values(), key=lambda p: p.key) for t in writing_tasks(p)]
    rows = answer_writing(tasks, seed)
    _write_jsonl(os.path.join(folder, "sentences.jsonl"), rows, bad=[
        json.dumps({"task": "no such set#0#0", "writer": "w9", "selected": [0, 1], "sentence": "x"}),  # unknown_item
        json.dumps({"task": tasks[0]["task"], "writer": "w9", "selected": [0, 0], "sentence": "x"}),    # bad_selection
        json.dumps(rows[0])])                                                                            # duplicate_answer
    sentences = [Sentence(paired[r["task"].rsplit("#", 1)[0]], int(r["task"].rsplit("#", 1)[1]), r["writer"],
                          r["sentence"], tuple(r["selected"])) for r in rows]

    # S8
    cands = sorted((c for s in sentences for c in candidates(s)), key=lambda c: c.example_id)
    labels = {c.example_id: c.selected for c in cands}
    tasks = [validation_task(c) for c in cands]
    rows = answer_validation(tasks, labels)
    _write_jsonl(os.path.join(folder, "validations.jsonl"), rows, bad=[
        json.dumps({"example": example_id("no such set#0#0", 0), "worker": "v9", "judgement": "True"}),  # unknown_item
        json.dumps({"example": tasks[3]["example"], "worker": "v9", "judgement": "maybe"}),               # bad_answer
        json.dumps(rows[0])])                                                                               # duplicate_answer
    validated = {r["example"] for r in rows if r["judgement"] == str(labels[r["example"]])}

    # S9
    splits = assign_splits({c.sentence.paired.key for c in cands if c.example_id in validated}, seed,
                           cfg.splits.held_out)
    held = [validation_task(c) for c in cands
            if c.example_id in validated and splits[c.sentence.paired.key] != "train"]
    rows = answer_extra(held, labels, cfg.splits.extra_judgements)
    _write_jsonl(os.path.join(folder, "extra_validations.jsonl"), rows, bad=[
        json.dumps({"example": example_id("no such set#0#0", 0), "worker": "x9", "judgement": "True"}),  # unknown_item
        json.dumps({"example": held[2]["example"], "worker": "x9", "judgement": "report"}),              # bad_answer
        json.dumps(rows[0])])                                                                              # duplicate_answer
