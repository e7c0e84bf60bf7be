"""The nine crowd rounds of the three crowd benchmarks, each as a test needs it: its worker
page and its Label Studio project, one task as the platform gets it, what an honest
worker submits for it, and the round's own reader run over an answer file against that
one task (hand-made context, no sample build: one small pipeline a round).

    for round_ in ROUNDS:
        outcome = round_.read(path, tmp_path)   # what the round did with each row of `path`
        outcome.rejects   # {line: [reason, ...]} of the rejects naming the file
        outcome.workers   # the worker ids its records were credited to
        round_.read([first, second], tmp_path)  # the round's answer key given a list of files
        outcome.by_file   # {(file name, line): [reason, ...]}

tests/crowd/test_rounds.py holds the tests every round must pass (who the worker is, which
answers a round accepts).
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Callable, Dict, List, Tuple

import apache_beam as beam

from tests.beam_testing import local_test_pipeline
from tests.imagecode.crowd.test_crowd import SEED, SETS, collect, collected, run
from transforms.core.stage import MAIN, REJECTS
from transforms.crowd.labelstudio import RoundLayout
from transforms.crowd.pages import Page
from transforms.crowd.shown import FINGERPRINT


@dataclasses.dataclass
class Outcome:
    by_file: Dict[Tuple[str, int], List[str]]   # (file name, line) -> reasons of its rejects
    workers: List[str]              # the workers the round's records name (the answers it used)

    @property
    def rejects(self) -> Dict[int, List[str]]:
        """line -> reasons, of a round read from one file."""
        found: Dict[int, List[str]] = {}
        for (_, line), reasons in self.by_file.items():
            found.setdefault(line, []).extend(reasons)
        return found

    def accepted(self, line: int) -> bool:
        """The row at `line` passed the round's checks of its values (a second answer of the
        same item is a duplicate only once its values passed)."""
        return all(reason.startswith("duplicate_") for reason in self.rejects.get(line, ()))


@dataclasses.dataclass
class Round:
    benchmark: str
    name: str
    page: Page
    layout: RoundLayout
    worker: str                     # the round's worker column ("": it names none)
    task: dict                      # the page's batch input row (MTurk's Input.<col>)
    labelstudio_task: dict          # the task's data as Label Studio imports it
    answer: dict                    # what the page submits for an honest answer
    _read: Callable                 # (pipeline, paths) -> (records' workers, rejects)

    @property
    def id(self) -> str:
        return f"{self.benchmark}-{self.name}"

    def read(self, paths, tmp_path) -> Outcome:
        """What the round's reader did with the rows of `paths` (a file, or the answer
        key's list of files)."""
        paths = [paths] if isinstance(paths, str) else list(paths)
        p = local_test_pipeline()
        workers, rejects = self._read(p, paths)
        names = {os.path.basename(path) for path in paths}
        collect(workers, tmp_path, f"{self.id}-workers")
        collect(rejects | beam.Filter(lambda r: os.path.basename(r.file or "") in names)
                | beam.Map(lambda r: (os.path.basename(r.file), r.line, r.reason)), tmp_path, f"{self.id}-rejects")
        run(p)
        found: Dict[Tuple[str, int], List[str]] = {}
        for name, line, reason in collected(tmp_path, f"{self.id}-rejects"):
            found.setdefault((name, line), []).append(reason)
        return Outcome(found, sorted(w for ws in collected(tmp_path, f"{self.id}-workers") for w in ws))


# --- ImageCoDe ---------------------------------------------------------------------------------

def _imagecode():
    from pipelines.imagecode.crowd import worker_pages
    from pipelines.imagecode.crowd.rounds import (DESCRIBE_LABELSTUDIO, RETRIEVE_LABELSTUDIO, MakeDescribeTasks,
                                            ReadDescriptions, ReadRetrievals, describe_tasks, retrieve_task,
                                            task_row)
    from pipelines.imagecode.crowd.records import Description
    still = next(s for s in SETS if not s.is_video)
    describe = task_row(describe_tasks(still, SEED)[0])
    retrieve_of = retrieve_task(Description(f"{still.set_name}#4#a1", still.set_name, 4,
                                            "The one with the dog in the air.", "a1"), still, SEED)
    retrieve = task_row(retrieve_of)
    describe_page, retrieve_page = worker_pages.pages()

    def read_descriptions(p, paths):
        sets = p | "Sets" >> beam.Create(SETS)
        read = p | ReadDescriptions(paths, sets, (sets | MakeDescribeTasks(SEED))[MAIN])
        return read[MAIN] | beam.Map(lambda d: [d.worker]), read[REJECTS]

    def read_retrievals(p, paths):
        sets = p | "Sets" >> beam.Create(SETS)
        read = p | ReadRetrievals(paths, sets, p | "Tasks" >> beam.Create([retrieve_of]))
        return read[MAIN] | beam.Map(lambda r: [r.worker]), read[REJECTS]

    return [
        Round("imagecode", "describe", describe_page, DESCRIBE_LABELSTUDIO, "worker", describe, describe,
              {"set_name": describe["set_name"], "target_index": describe["target_index"],
               "text": "The dog in the air, its paws off the ground.", FINGERPRINT: describe[FINGERPRINT]},
              read_descriptions),
        Round("imagecode", "retrieve", retrieve_page, RETRIEVE_LABELSTUDIO, "worker", retrieve, retrieve,
              {"set_name": retrieve["set_name"], "description_id": retrieve["description_id"],
               "guessed_index": 4, FINGERPRINT: retrieve[FINGERPRINT]},
              read_retrievals),
    ]


# --- NLVR2 ---------------------------------------------------------------------------------------

PLACES, PAIRS = 16, 4   # the paper's page: up to 16 images a set, 4 pairs


def _nlvr2_set(key: str):
    from pipelines.nlvr2.collection.image_sets import Image, ImageSet
    query, rank = key.split("#")
    images = tuple(Image(k, f"images/{query}-{k}.jpg", f"/nowhere/{query}-{k}.jpg", f"{k:02d}" * 32, 640, 480)
                   for k in range(10))
    return ImageSet(query, int(rank), "cup", images)


def _held_out_key() -> str:
    """A set key that the splits put in dev or test (the extra round judges only those)."""
    from pipelines.nlvr2.collection.config import SplitsConfig
    from pipelines.nlvr2.collection.splits import assign_splits
    return next(key for key in (f"cups{n}#0" for n in range(100))
                if assign_splits([key], SEED, SplitsConfig().held_out)[key] != "train")


def _nlvr2():
    from pipelines.nlvr2.collection import worker_pages
    from pipelines.nlvr2.collection.config import PruningConfig, SplitsConfig
    from pipelines.nlvr2.collection.rounds import (EXTRA_VALIDATION_LABELSTUDIO, VALIDATION_LABELSTUDIO, Candidate,
                                                   ImageRound, Sentence, Validated, ValidationRound, WritingRound,
                                                   image_round_labelstudio, image_task, pair_up, validation_task,
                                                   writing_labelstudio, writing_tasks)
    from pipelines.nlvr2.collection.splits import SplitAndValidate
    pages = {page.name: page for page in worker_pages.pages(PLACES, PAIRS)}
    image_set = _nlvr2_set(_held_out_key())
    paired = pair_up(image_set._replace(images=image_set.images[:8]), SEED)
    sentence = Sentence(paired, 0, "W1WRITER", "Both images show exactly two cups.", (0, 2))
    candidate = Candidate(sentence, 0)   # selected by the writer: True is the agreeing judgement
    flat = {name: worker_pages.flat_row(name, task, PLACES, PAIRS) for name, task in (
        ("pruning", image_task(image_set)), ("interest", image_task(image_set)),
        ("writing", writing_tasks(paired)[0]), ("validation", validation_task(candidate)),
        ("extra_validation", validation_task(candidate)))}

    def image_round(stage):
        def read(p, paths):
            sets = p | "Sets" >> beam.Create([image_set])
            judged = sets | ImageRound(stage, paths, PruningConfig())
            return judged[MAIN] | beam.Map(lambda _: []), judged[REJECTS]
        return read

    def read_writing(p, paths):
        written = p | beam.Create([paired]) | WritingRound(paths, PAIRS)
        return written[MAIN] | beam.Map(lambda s: [s.writer]), written[REJECTS]

    def read_validation(p, paths):
        validated = p | beam.Create([sentence]) | ValidationRound(paths)
        return validated[MAIN] | beam.Map(lambda v: [v.validator]), validated[REJECTS]

    def read_extra(p, paths):
        final = (p | beam.Create([Validated(candidate, "V0VALIDATOR")])
                 | SplitAndValidate(paths, SplitsConfig(extra_judgements=99), SEED))
        return (final[MAIN] | beam.Map(lambda e: [worker for worker, _ in e.extra_validations]),
                final[REJECTS])

    def item(answers, k=0):
        return {f"{column}@{k}": value for column, value in answers.items()}

    pruning, interest = flat["pruning"], flat["interest"]
    return [
        Round("nlvr2", "pruning", pages["pruning"], image_round_labelstudio("pruning"), "", pruning,
              image_task(image_set),
              {"set": pruning["set"], **item({"image": 0, "verdict": "keep"}), FINGERPRINT: pruning[FINGERPRINT]},
              image_round("crowd_pruning")),
        Round("nlvr2", "interest", pages["interest"], image_round_labelstudio("interest"), "", interest,
              image_task(image_set), {"set": interest["set"], **item({"image": 0, "duplicate": "no", "interesting": "yes"}),
                         FINGERPRINT: interest[FINGERPRINT]},
              image_round("set_construction")),
        Round("nlvr2", "writing", pages["writing"], writing_labelstudio(PAIRS), "writer", flat["writing"],
              flat["writing"], {"task": flat["writing"]["task"], "selected": "0,2",
                                "sentence": "One image shows exactly two cups.",
                                FINGERPRINT: flat["writing"][FINGERPRINT]},
              read_writing),
        Round("nlvr2", "validation", pages["validation"], VALIDATION_LABELSTUDIO, "worker", flat["validation"],
              validation_task(candidate), {"example": candidate.example_id, "judgement": "True",
                                           FINGERPRINT: flat["validation"][FINGERPRINT]},
              read_validation),
        Round("nlvr2", "extra_validation", pages["extra_validation"], EXTRA_VALIDATION_LABELSTUDIO, "worker",
              flat["extra_validation"], validation_task(candidate),
              {"example": candidate.example_id, "judgement": "True", FINGERPRINT: flat["extra_validation"][FINGERPRINT]},
              read_extra),
    ]


# --- VSR -------------------------------------------------------------------------------------------

def _vsr():
    from pipelines.vsr import worker_pages
    from pipelines.vsr.annotations import JoinVotes, ReadCaptions
    from pipelines.vsr.relations import RELATIONS
    from pipelines.vsr.records import Example, ImagePair, example_id
    from pipelines.vsr.release import VALIDATION_LABELSTUDIO, caption_labelstudio, caption_task, validation_task
    from schemas.coco import CocoImage
    images = (CocoImage(1, "000000000001.jpg", "http://images.cocodataset.org/train2017/000000000001.jpg", "train2017"),
              CocoImage(2, "000000000002.jpg", "http://images.cocodataset.org/train2017/000000000002.jpg", "train2017"))
    pair = ImagePair("pair-cat-couch", "cat", "couch", images, (40000.0, 50000.0), (40000.0, 50000.0), 0, 2)
    caption = "The cat is under the couch."
    example = Example(example_id=example_id(images[0].file_name, caption), image=images[0].file_name,
                      image_link=images[0].coco_url, caption=caption, label=1, relation="under", subj="cat",
                      obj="couch", annotator_id="W1WRITER", source="train2017", pair_id=pair.pair_id)
    caption_page, validation_page = worker_pages.pages(RELATIONS)
    caption_row = worker_pages.caption_row(caption_task(pair))
    vote_row = worker_pages.validation_row(validation_task(example))

    def read_captions(p, paths):
        read = p | ReadCaptions(paths, frozenset(RELATIONS), p | beam.Create([pair]))
        return read[MAIN] | beam.Map(lambda t: [t[0].annotator_id]), read[REJECTS]

    def read_votes(p, paths):
        voted = p | beam.Create([(example, (), ())]) | JoinVotes(paths)
        return voted[MAIN] | beam.Map(lambda t: list(t[1] + t[2])), voted[REJECTS]

    return [
        Round("vsr", "caption", caption_page, caption_labelstudio(RELATIONS), "annotator_id", caption_row,
              caption_row, {"pair_id": pair.pair_id, "relation": "under", "true_image": images[0].file_name,
                            FINGERPRINT: caption_row[FINGERPRINT]},
              read_captions),
        Round("vsr", "validation", validation_page, VALIDATION_LABELSTUDIO, "validator_id", vote_row,
              validation_task(example), {"example_id": example.example_id, "label": "1",
                                         FINGERPRINT: vote_row[FINGERPRINT]},
              read_votes),
    ]


ROUNDS: List[Round] = _imagecode() + _nlvr2() + _vsr()


def labelstudio_export(round_: Round, annotations: List[Tuple[str, list]], path) -> str:
    """Label Studio's JSON export (an export snapshot, annotators named by email: the layout
    of tests/crowd/data/labelstudio_export.json) of the round's one task with these
    (annotator email, results) annotations; returns its path."""
    from transforms.crowd.labelstudio import tasks_json
    [task] = json.loads(tasks_json(round_.layout, [round_.labelstudio_task]))
    task.update(id=1, predictions=[], annotations=[
        {"id": n + 1, "completed_by": {"id": n + 2, "email": email, "first_name": "", "last_name": ""},
         "result": results, "was_cancelled": False, "ground_truth": False, "task": 1, "project": 1}
        for n, (email, results) in enumerate(annotations)])
    path.write_text(json.dumps([task], ensure_ascii=False), encoding="utf-8")
    return str(path)


def choice(name: str, *values) -> dict:
    """A Choices result as Label Studio exports it (the choices' aliases)."""
    return {"from_name": name, "to_name": "x", "type": "choices", "value": {"choices": [str(v) for v in values]}}


def text(name: str, value: str) -> dict:
    return {"from_name": name, "to_name": "x", "type": "textarea", "value": {"text": [value]}}
