"""Simulated crowd answers for the embedded sample, so the rounds run offline.

Given the tasks a build exports (crowd/describe_tasks.jsonl, then crowd/retrieve_tasks.jsonl
of a build with the descriptions), or the sets alone (`write_sample_crowd_outputs` makes
their tasks by the rounds' own rules, as a build exports them: how the embedded sample
gets its answers, make.py beside this file), writes what a crowdsourcing tool would return:
describer output (one description per describe task) and retriever output (1 retriever
per description in train, 3 in valid/test, §3.3). Like a platform export, every answer
row carries its task's columns through, task_fingerprint among them, so the sample's
answers are bound to what their simulated workers saw (transforms/crowd/shown.py).
Everything is a hash of (seed, key), so the files are byte-identical for the same input. On purpose the files also hold what real exports hold: wrong
retrievers (so some descriptions are rejected), a description nobody retrieved, and bad
rows (malformed, unknown set, index 12, missing text, duplicates, a self-retrieval).
`SampleCrowdFiles.injected` counts the bad rows by reason, for tests.

Worker pools are partly disjoint between train and valid/test, as in the paper.
Descriptions are templated English sentences of varied length (language statistics).

    python -m pipelines.imagecode.sample.crowd --sets sets.jsonl --out samples/crowd [--seed 0]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Sequence

from pipelines.imagecode import reasons
from pipelines.imagecode.crowd.rounds import describe_tasks, retrieve_task, task_row
from pipelines.imagecode.crowd.records import (DESCRIBE_TASK_COLUMNS, DESCRIPTION_COLUMNS,
                                               RETRIEVAL_COLUMNS, RETRIEVE_TASK_COLUMNS,
                                               RETRIEVERS, TARGETS_PER_SET, AnnotationSet, Description,
                                               description_id)
from transforms.core.sampling import priority
from transforms.crowd.task_files import csv_cell

P_CORRECT = 0.8   # chance that a simulated retriever finds the target

# Describers / retrievers per split: train and valid/test pools share a few workers.
DESCRIBERS = {"train": [f"w{i:02d}" for i in range(1, 13)],
              "eval": [f"w{i:02d}" for i in range(9, 21)]}
RETRIEVER_POOL = {"train": [f"w{i:02d}" for i in range(5, 17)],
                  "eval": [f"w{i:02d}" for i in range(13, 25)]}

_SUBJECTS = ["the man", "the woman in the red coat", "the dog", "a small child", "the chef",
             "the girl with the umbrella", "the cyclist", "two birds", "the old car", "the waiter"]
_STATES = ["is looking straight at the camera", "just starts to turn around", "has one hand raised",
           "is half hidden behind the door", "is smiling", "is bending over the table",
           "is barely visible", "is holding a blue cup", "has both eyes closed", "is walking away"]
_PLACES = ["on the left", "at the top right corner", "in the middle", "behind the table",
           "next to the window", "near the bottom edge", "in the background", "under the lamp"]
_EXTRAS = ["and no spoon is visible", "right after the light turns on", "while the door is still open",
           "and the picture is slightly blurry", "and there are exactly three cups on the counter",
           "before anyone else enters", "and the shadow covers her feet"]


@dataclass
class SampleCrowdFiles:
    descriptions: str
    retrievals: str
    injected: Dict[str, Dict[str, int]] = field(default_factory=dict)  # file -> reason -> rows


def _uniform(seed: int, key: str) -> float:
    return priority(seed, key) / 2 ** 64


def _pick(seed: int, key: str, options: Sequence):
    return options[priority(seed, key) % len(options)]


def _pool(split: str, pools: dict) -> List[str]:
    return pools["train" if split == "train" else "eval"]


def sentence(seed: int, key: str) -> str:
    """One to three clauses from a small vocabulary: lengths vary like real descriptions."""
    text = f"{_pick(seed, key + '/s', _SUBJECTS)} {_pick(seed, key + '/v', _STATES)}"
    if priority(seed, key + "/p") % 3:
        text += f" {_pick(seed, key + '/w', _PLACES)}"
    if priority(seed, key + "/e") % 2:
        text += f" {_pick(seed, key + '/x', _EXTRAS)}"
    return text[0].upper() + text[1:] + "."


def _wrong_guess(seed: int, key: str, target: int, is_video: bool, n: int) -> int:
    """Video retrievers miss by a frame or two; static ones anywhere else."""
    if is_video:
        step = _pick(seed, key + "/step", [-2, -1, 1, 2])
        guess = target + step if 0 <= target + step < n else target - step
        return min(max(guess, 0), n - 1) if guess != target else (target + 1) % n
    return _pick(seed, key + "/other", [i for i in range(n) if i != target])


def _described(describe_rows: Sequence[dict], seed: int):
    """(task row, worker, description id) per describe task, in (set, target) order."""
    described = []
    for task in sorted(describe_rows, key=lambda t: (t["set_name"], int(t["target_index"]))):
        worker = _pick(seed, f"describer/{task['task_id']}", _pool(task["split"], DESCRIBERS))
        described.append((task, worker, description_id(task["set_name"], int(task["target_index"]), worker)))
    return described


def simulate_descriptions(describe_rows: Sequence[dict], seed: int = 0) -> List[dict]:
    """One description per exported describe task (`describe_rows`: rows of
    crowd/describe_tasks.jsonl): the task's columns carried through, as a platform
    export does (task_fingerprint among them), then the answer (text, worker)."""
    return [dict(task, text=sentence(seed, task["task_id"]), worker=worker)
            for task, worker, _ in _described(describe_rows, seed)]


def simulate_retrievals(describe_rows: Sequence[dict], retrieve_rows: Sequence[dict],
                        seed: int = 0) -> List[dict]:
    """Retrievals of the descriptions: 1 retriever in train, 3 in valid/test, each row
    the retrieve task's columns (`retrieve_rows`: crowd/retrieve_tasks.jsonl of a build
    with the descriptions) and the answer (worker, guessed_index).

    Besides chance misses (P_CORRECT), one train and one valid/test description are
    "hard" (their first two retrievers miss), so both reject reasons of the keep rule
    occur in any sample, and one other description gets no retrieval at all.
    """
    described = _described(describe_rows, seed)
    tasks = {t["description_id"]: t for t in retrieve_rows}

    def pick_one(what, items):
        return min(items, key=lambda d: priority(seed, f"{what}/{d[2]}"))[2] if items else None

    hard = {pick_one("hard", [d for d in described if d[0]["split"] == "train"]),
            pick_one("hard", [d for d in described if d[0]["split"] != "train"])}
    # not the first description: the bad retrieval rows copy its first retrieval
    unretrieved = pick_one("unretrieved", [d for d in described[1:] if d[2] not in hard])

    retrievals = []
    for task, worker, desc_id in described:
        if desc_id == unretrieved or desc_id not in tasks:
            continue
        target, n = int(task["target_index"]), len(task["shown_order"])
        candidates = [w for w in _pool(task["split"], RETRIEVER_POOL) if w != worker]
        chosen = sorted(candidates, key=lambda w: priority(seed, f"retriever/{desc_id}/{w}"))
        for k, w in enumerate(chosen[:RETRIEVERS.get(task["split"], 1)]):
            rkey = f"{desc_id}@{w}"
            found = _uniform(seed, "correct/" + rkey) < P_CORRECT and not (desc_id in hard and k < 2)
            guess = target if found else _wrong_guess(seed, rkey, target, bool(task["is_video"]), n)
            retrievals.append(dict(tasks[desc_id], worker=w, guessed_index=guess))
    return retrievals


def _bad_descriptions(descriptions):
    """Rows a real export holds too, each tagged with the reason it must be rejected for."""
    d0 = descriptions[0]
    return [(reasons.UNKNOWN_SET, dict(d0, set_name="no-such-set")),
            (reasons.INDEX_OUT_OF_RANGE, dict(d0, target_index=12)),
            (reasons.MISSING_FIELD, dict(d0, text="")),
            (reasons.DUPLICATE_DESCRIPTION, dict(d0, text="A second answer from the same worker."))]


def _bad_retrievals(retrievals):
    r0 = retrievals[0]
    return [(reasons.UNKNOWN_SET, dict(r0, set_name="no-such-set")),
            (reasons.INDEX_OUT_OF_RANGE, dict(r0, guessed_index=12)),
            (reasons.DUPLICATE_RETRIEVAL, dict(r0)),
            # typed in by hand: no task behind it, so no task columns either
            (reasons.UNKNOWN_DESCRIPTION, {c: r0[c] for c in RETRIEVAL_COLUMNS} | dict(
                description_id=r0["set_name"] + "#0#nobody")),
            (reasons.SELF_RETRIEVAL, dict(r0, worker=r0["description_id"].rsplit("#", 1)[1]))]


def _write(path: str, columns, rows, bad) -> Dict[str, int]:
    """Good rows, then the bad ones and one malformed row; returns reason -> count."""
    injected: Dict[str, int] = {}
    for reason, _ in bad:
        injected[reason] = injected.get(reason, 0) + 1
    rows = list(rows) + [row for _, row in bad]
    with open(path, "w", newline="", encoding="utf-8") as f:
        if path.endswith(".csv"):
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(columns)
            writer.writerows([csv_cell(row.get(c, "")) for c in columns] for row in rows)
            f.write("only,three,fields\n")
            injected[reasons.MALFORMED_ROW] = 1
        else:
            for row in rows:
                f.write(json.dumps({c: row[c] for c in columns if c in row}, ensure_ascii=False) + "\n")
            f.write('{"set_name": "truncated\n')
            injected[reasons.BAD_JSON] = 1
    return injected


# The columns of the answer files: the task's, carried through, then the answer's.
DESCRIPTION_FILE_COLUMNS = DESCRIBE_TASK_COLUMNS + tuple(c for c in DESCRIPTION_COLUMNS
                                                         if c not in DESCRIBE_TASK_COLUMNS)
RETRIEVAL_FILE_COLUMNS = RETRIEVE_TASK_COLUMNS + tuple(c for c in RETRIEVAL_COLUMNS
                                                       if c not in RETRIEVE_TASK_COLUMNS)


def write_descriptions(describe_rows: Sequence[dict], out_dir: str, seed: int = 0,
                       fmt: str = "csv"):
    """`descriptions.<fmt>` under out_dir; returns (path, {reason: injected bad rows})."""
    os.makedirs(out_dir, exist_ok=True)
    descriptions = simulate_descriptions(describe_rows, seed)
    if not descriptions:
        raise ValueError("the crowd sample needs at least one describe task")
    path = os.path.join(out_dir, f"descriptions.{fmt}")
    return path, _write(path, DESCRIPTION_FILE_COLUMNS, descriptions, _bad_descriptions(descriptions))


def write_retrievals(describe_rows: Sequence[dict], retrieve_rows: Sequence[dict], out_dir: str,
                     seed: int = 0, fmt: str = "jsonl"):
    """`retrievals.<fmt>` under out_dir; returns (path, {reason: injected bad rows})."""
    os.makedirs(out_dir, exist_ok=True)
    retrievals = simulate_retrievals(describe_rows, retrieve_rows, seed)
    if not retrievals:
        raise ValueError("the crowd sample needs at least one retrieve task")
    path = os.path.join(out_dir, f"retrievals.{fmt}")
    return path, _write(path, RETRIEVAL_FILE_COLUMNS, retrievals, _bad_retrievals(retrievals))


def write_sample_crowd_outputs(sets: Sequence[AnnotationSet], out_dir: str, seed: int = 0,
                               describer_format: str = "csv",
                               retriever_format: str = "jsonl",
                               targets_per_set: int = TARGETS_PER_SET) -> SampleCrowdFiles:
    """Both answer files for `sets` (>= 1), their tasks made in process by the rounds'
    own rules (rounds.describe_tasks / retrieve_task), as a build with this `seed` and
    `targets_per_set` exports them."""
    if not sets:
        raise ValueError("the crowd sample needs at least one set")
    describe = [task_row(t) for s in sets for t in describe_tasks(s, seed, targets_per_set)]
    by_name = {s.set_name: s for s in sets}
    retrieve = [task_row(retrieve_task(
        Description(description_id(d["set_name"], d["target_index"], d["worker"]), d["set_name"],
                    d["target_index"], d["text"], d["worker"], d["split"]), by_name[d["set_name"]], seed))
        for d in simulate_descriptions(describe, seed)]
    descriptions, injected_d = write_descriptions(describe, out_dir, seed, describer_format)
    retrievals, injected_r = write_retrievals(describe, retrieve, out_dir, seed, retriever_format)
    return SampleCrowdFiles(descriptions, retrievals,
                            {"descriptions": injected_d, "retrievals": injected_r})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", required=True, help="JSON Lines of AnnotationSet fields")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with open(args.sets, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    sets = [AnnotationSet(**dict(row, image_paths=tuple(row["image_paths"]),
                                 image_ids=tuple(row["image_ids"]))) for row in rows]
    files = write_sample_crowd_outputs(sets, args.out, args.seed)
    print(f"descriptions: {files.descriptions}\nretrievals: {files.retrievals}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
