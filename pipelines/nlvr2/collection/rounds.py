"""The crowd rounds S4-S8 (§3.1-§3.3): each exports its tasks (one JSON object per task,
tasks/<round>.jsonl) and reads its answers (CSV or JSON Lines, transforms/crowd/
answer_rows.py: a bad row is a line-level reject naming its file and line).

    round           task (id)                         answer row (one per ...)
    pruning   S4    set: synset + images              set, image, verdict            (image)
    interest  S5    set: synset + images              set, image, duplicate, interesting (image)
    writing   S7    set#sentence: 4 pairs             task, writer, sentence, selected (task)
    validation S8   set#sentence#pair: sentence, pair example, worker, judgement   (example)

Pairing (S6) sits between S5 and S7: the 8 images of a set in a seeded order, consecutive
ones a pair (left, right), the same for both writing tasks of the set. The rules are pure
functions over one set or task, wrapped as stages; the sample reuses them to answer.

Every task row carries `task_fingerprint`, the digest of what it shows in content terms
(transforms/crowd/shown.py): the synset and the images (position and sha256) of a pruning
or interest task, the synset and the pairs' images of a writing task, the sentence and
the pair's two images of a validation task. A set key (query#rank) is a name: after a
rebuild with other pruning rules or other answers it can hold other images. An answer
is used only where its row's fingerprint (or, for a row without one, the task file of
`collection.tasks_release.<round>`) matches what this build shows for its task; else it
is a stale_answer reject naming what changed.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import apache_beam as beam

from pipelines.nlvr2.collection import reasons as why
from pipelines.nlvr2.collection.config import PruningConfig
from pipelines.nlvr2.collection.image_sets import Image, ImageSet
from pipelines.nlvr2.collection.search import Drop, emit_verdicts, image_id
from transforms.core.sampling import priority
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo
from transforms.crowd.answer_rows import ReadAnswerRows, RowProblem, Shown, cell_text, whole_number
from transforms.crowd.labelstudio import Ask, Items, RoundLayout
from transforms.crowd.shown import FINGERPRINT, TaskView, view

VERDICTS = {"keep": None, "unloadable": why.UNLOADABLE, "inappropriate": why.INAPPROPRIATE,
            "artwork_or_collage": why.ARTWORK_OR_COLLAGE, "no_synset_instance": why.NO_SYNSET_INSTANCE}
YES_NO = {"yes": True, "no": False}
JUDGEMENTS = ("True", "False", "report")

PRUNING_COLUMNS = ("set", "image", "verdict")
INTEREST_COLUMNS = ("set", "image", "duplicate", "interesting")
SENTENCE_COLUMNS = ("task", "writer", "sentence", "selected")
VALIDATION_COLUMNS = ("example", "worker", "judgement")
# The worker column of each round that names one (pruning and interest name none): MTurk's
# WorkerId, Label Studio's annotator, never a field a page or an annotation fills.
WRITER, VALIDATOR = "writer", "worker"


class PairedSet(NamedTuple):
    image_set: ImageSet
    pairs: Tuple[Tuple[Image, Image], ...]

    @property
    def key(self) -> str:
        return self.image_set.key


class Sentence(NamedTuple):
    paired: PairedSet
    sentence_id: int
    writer: str
    text: str
    selected: Tuple[int, ...]

    @property
    def task(self) -> str:
        return writing_task_id(self.paired.key, self.sentence_id)


class Candidate(NamedTuple):
    """A sentence on one pair, before validation; `selected` is the writer's label."""
    sentence: Sentence
    pair: int

    @property
    def example_id(self) -> str:
        return example_id(self.sentence.task, self.pair)

    @property
    def selected(self) -> bool:
        return self.pair in self.sentence.selected


class Validated(NamedTuple):
    candidate: Candidate
    validator: str


def writing_task_id(set_key: str, sentence_id: int) -> str:
    return f"{set_key}#{sentence_id}"


def example_id(task: str, pair: int) -> str:
    return f"{task}#{pair}"


# --- answers: one check per round (ReadAnswerRows) ---------------------------------------

def _int(text: str) -> Optional[int]:
    return whole_number(text)


def pruning_check(row: dict, positions: Dict[str, Sequence[int]]):
    key, position, verdict = cell_text(row, "set"), _int(cell_text(row, "image")), cell_text(row, "verdict")
    if position not in positions.get(key, ()):
        return RowProblem(why.UNKNOWN_ITEM, image_id(key, cell_text(row, "image")))
    if verdict not in VERDICTS:
        return RowProblem(why.BAD_ANSWER, f"verdict {verdict!r}: one of {', '.join(VERDICTS)}")
    return (key, position), (key, position, verdict)


def interest_check(row: dict, positions: Dict[str, Sequence[int]]):
    key, position = cell_text(row, "set"), _int(cell_text(row, "image"))
    duplicate, interesting = cell_text(row, "duplicate").lower(), cell_text(row, "interesting").lower()
    if position not in positions.get(key, ()):
        return RowProblem(why.UNKNOWN_ITEM, image_id(key, cell_text(row, "image")))
    if duplicate not in YES_NO or interesting not in YES_NO:
        return RowProblem(why.BAD_ANSWER, "duplicate and interesting: yes or no")
    return (key, position), (key, position, YES_NO[duplicate], YES_NO[interesting])


def _selection(value) -> Optional[Tuple[int, ...]]:
    if isinstance(value, list):
        items = value
    else:
        items = [x for x in str(value).replace(";", ",").split(",") if x.strip()]
    try:
        chosen = tuple(sorted(int(str(x).strip()) for x in items))
    except ValueError:
        return None
    return chosen


def sentence_check(n_pairs: int):
    def check(row: dict, tasks: Dict[str, bool]):
        task = cell_text(row, "task")
        if task not in tasks:
            return RowProblem(why.UNKNOWN_ITEM, task)
        chosen = _selection(row.get("selected"))
        if chosen is None or len(set(chosen)) != 2 or len(chosen) != 2 or not all(0 <= c < n_pairs for c in chosen):
            return RowProblem(why.BAD_SELECTION, f"selected {row.get('selected')!r}: 2 distinct pairs of 0..{n_pairs - 1}")
        return task, (task, cell_text(row, "writer"), cell_text(row, "sentence"), chosen)
    return check


def judgement_check(choices: Sequence[str], per_worker: bool):
    """Validation (one judgement per example) and extra validation (one per example and
    worker) rows."""
    def check(row: dict, examples: Dict[str, bool]):
        example, worker, judgement = cell_text(row, "example"), cell_text(row, "worker"), cell_text(row, "judgement")
        if example not in examples:
            return RowProblem(why.UNKNOWN_ITEM, example)
        if judgement not in choices:
            return RowProblem(why.BAD_ANSWER, f"judgement {judgement!r}: one of {', '.join(choices)}")
        return ((example, worker) if per_worker else example), (example, worker, judgement)
    return check


# --- the rules, one set or task at a time ---------------------------------------------------

def prune_round1(image_set: ImageSet, verdicts: Dict[int, str], cfg: PruningConfig
                 ) -> Iterator[Union[ImageSet, Image, Drop]]:
    """S4: drop images the worker removed (or left unanswered), then a set under 8."""
    kept = []
    for image in image_set.images:
        verdict = verdicts.get(image.position)
        reason = why.UNANSWERED if verdict is None else VERDICTS[verdict]
        if reason:
            yield Drop(reason, image_id(image_set.key, image.position), image.url, "image")
        else:
            kept.append(image)
            yield image
    if len(kept) < cfg.min_set_images:
        yield Drop(why.TOO_FEW_IMAGES, image_set.key, f"{len(kept)} images", "set")
    else:
        yield image_set._replace(images=tuple(kept))


def construct_set(image_set: ImageSet, answers: Dict[int, Tuple[bool, bool]], cfg: PruningConfig
                  ) -> Iterator[Union[ImageSet, Image, Drop]]:
    """S5: drop duplicates (and unanswered images), discard a set under 8 images or under 3
    interesting, sort by interesting first and similarity (search position) second, keep
    the top 8."""
    candidates = []
    for image in image_set.images:
        answer = answers.get(image.position)
        iid = image_id(image_set.key, image.position)
        if answer is None:
            yield Drop(why.UNANSWERED, iid, image.url, "image")
        elif answer[0]:
            yield Drop(why.CROWD_DUPLICATE, iid, image.url, "image")
        else:
            candidates.append((not answer[1], image.position, image))
    interesting = sum(1 for c in candidates if not c[0])
    if len(candidates) < cfg.min_set_images or interesting < cfg.min_interesting:
        reason = why.TOO_FEW_IMAGES if len(candidates) < cfg.min_set_images else why.TOO_FEW_INTERESTING
        for _, _, image in candidates:
            yield image
        yield Drop(reason, image_set.key, f"{len(candidates)} images, {interesting} interesting", "set")
        return
    candidates.sort()
    top = [image for _, _, image in candidates[:cfg.set_images]]
    for _, _, image in candidates[cfg.set_images:]:
        yield Drop(why.BEYOND_TOP_IMAGES, image_id(image_set.key, image.position), image.url, "image")
    yield from top
    yield image_set._replace(images=tuple(top))


def pair_up(image_set: ImageSet, seed: int) -> PairedSet:
    """S6: the images in a seeded order (seed and set key), consecutive ones a pair."""
    order = sorted(image_set.images, key=lambda i: (priority(seed, image_id(image_set.key, i.position)), i.position))
    return PairedSet(image_set, tuple((order[i], order[i + 1]) for i in range(0, len(order), 2)))


# --- what each task shows ------------------------------------------------------------------

def _content(image: Image) -> str:
    """An image's content identity: its bytes (S3 hashed every image it kept)."""
    return f"image:{image.sha256}"


def image_view(image_set: ImageSet) -> TaskView:
    """A pruning or interest task (S4, S5): the synset and the images, by position."""
    return view({"synset": image_set.synset,
                 "images": [[i.position, _content(i)] for i in image_set.images]},
                {"synset": image_set.synset, "images": [i.url for i in image_set.images]})


def image_task_labels(row: dict) -> dict:
    """The labels of an exported pruning / interest task row (as image_view names them)."""
    return {"synset": row["synset"], "images": [i["url"] for i in row["images"]]}


def writing_view(paired: PairedSet) -> TaskView:
    """A writing task (S7): the synset and the pairs, left and right; both sentences of a
    set are written on the same view."""
    return view({"synset": paired.image_set.synset,
                 "pairs": [[_content(l), _content(r)] for l, r in paired.pairs]},
                {"pairs": [f"{l.url} | {r.url}" for l, r in paired.pairs]})


def writing_task_labels(row: dict) -> dict:
    return {"pairs": [f"{p['left_url']} | {p['right_url']}" for p in row["pairs"]]}


def validation_view(candidate: Candidate) -> TaskView:
    """A validation task (S8, and S9's extra judgements): the sentence on one pair."""
    left, right = candidate.sentence.paired.pairs[candidate.pair]
    return view({"sentence": candidate.sentence.text, "left": _content(left), "right": _content(right)},
                {"sentence": candidate.sentence.text, "left": left.url, "right": right.url})


def validation_task_labels(row: dict) -> dict:
    return {"sentence": row["sentence"], "left": row["left_url"], "right": row["right_url"]}


# --- tasks ------------------------------------------------------------------------------------

def image_task(image_set: ImageSet) -> dict:
    return {"set": image_set.key, "synset": image_set.synset,
            "images": [{"image": i.position, "url": i.url} for i in image_set.images],
            FINGERPRINT: image_view(image_set).fingerprint}


def writing_tasks(paired: PairedSet) -> List[dict]:
    fingerprint = writing_view(paired).fingerprint
    return [{"task": writing_task_id(paired.key, s), "synset": paired.image_set.synset,
             "pairs": [{"pair": n, "left_url": l.url, "right_url": r.url} for n, (l, r) in enumerate(paired.pairs)],
             FINGERPRINT: fingerprint}
            for s in (0, 1)]


def validation_task(candidate: Candidate) -> dict:
    left, right = candidate.sentence.paired.pairs[candidate.pair]
    return {"example": candidate.example_id, "sentence": candidate.sentence.text,
            "left_url": left.url, "right_url": right.url,
            FINGERPRINT: validation_view(candidate).fingerprint}


# The validation round as a Label Studio project (transforms/crowd/labelstudio.py): the
# pair and the sentence, one of JUDGEMENTS recorded as the validation answer files hold it.
VALIDATION_LABELSTUDIO = RoundLayout(images=("left_url", "right_url"), texts=("sentence",),
                                     asks=(Ask("judgement", tuple((j, j) for j in JUDGEMENTS)),),
                                     instructions="Is the sentence true of the pair of images?")
# S9's extra judgements (splits.py) are True or False only: nothing to report any more.
EXTRA_VALIDATION_LABELSTUDIO = dataclasses.replace(
    VALIDATION_LABELSTUDIO, asks=(Ask("judgement", (("True", "True"), ("False", "False"))),))
_VERDICT_LABELS = {"keep": "keep", "unloadable": "does not load", "inappropriate": "inappropriate",
                   "artwork_or_collage": "artwork or collage", "no_synset_instance": "no instance of the synset"}
_YES_NO = (("yes", "yes"), ("no", "no"))


def image_round_labelstudio(stage: str) -> RoundLayout:
    """The pruning (S4) or interest (S5) round as a Label Studio project, from its task
    rows (image_task): the synset, then each image of the set (as many as the set holds)
    with its questions, every one required, each answer row carrying its image's
    position in the set (`image`)."""
    if stage == "pruning":
        asks = (Ask("verdict", tuple((_VERDICT_LABELS[v], v) for v in VERDICTS)),)
        instructions = "For each image: keep it, or say why it goes."
    else:
        asks = (Ask("duplicate", _YES_NO, title="A duplicate of another image?"),
                Ask("interesting", _YES_NO, title="Interesting?"))
        instructions = "For each image: is it a duplicate of another, is it interesting?"
    return RoundLayout(images=(), texts=("synset",), asks=(), instructions=instructions,
                       items=Items(on="images", images=("url",), columns=(("image", "image"),), asks=asks,
                                   title="An image of the set"))


def writing_labelstudio(pairs: int) -> RoundLayout:
    """The writing round (S7) as a Label Studio project, from its page's batch input rows:
    the pairs; the writer picks the two the sentence is true for, one choice of every two
    pairs ("0,2", as `selected` is read: never one pair or three) and writes one sentence."""
    two = itertools.combinations(range(pairs), 2)
    return RoundLayout(
        images=(), texts=("synset",),
        asks=(Ask("selected", tuple((f"Pairs {a + 1} and {b + 1}", f"{a},{b}") for a, b in two),
                  title="The two pairs the sentence is true for"),
              Ask("sentence", title="One sentence, true for the two pairs selected and false for the others")),
        instructions="Select two pairs and write one sentence true for them and false for the others.",
        items=Items(pairs, images=("pair_{k}_left", "pair_{k}_right"), title="Pair {n}"))


def candidates(sentence: Sentence) -> List[Candidate]:
    return [Candidate(sentence, pair) for pair in range(len(sentence.paired.pairs))]


# --- stages -------------------------------------------------------------------------------------

class _JoinedSetFn(StageFn):
    """(set key, {"set": [ImageSet], "answers": [...]}) -> a pure rule's output, counted at
    levels set and image."""
    level = "set"
    counts_in = False

    def __init__(self, stage: str, rule, to_answers, cfg: PruningConfig):
        self.stage, self._rule, self._to_answers, self._cfg = stage, rule, to_answers, cfg

    def judge(self, joined):
        _, groups = joined
        for image_set in groups["set"]:   # answers without a set were rejected as unknown_item
            self.counts.seen(level="set")
            self.counts.seen(len(image_set.images), level="image")
            yield from emit_verdicts(
                self, self._rule(image_set, self._to_answers(groups["answers"]), self._cfg))


def _first(answer) -> str:
    """The task an answer record answers: its first field (set key, task or example id)."""
    return answer[0]


def _verdicts(answers) -> Dict[int, str]:
    return {position: verdict for _, position, verdict in answers}


def _interest(answers) -> Dict[int, Tuple[bool, bool]]:
    return {position: (duplicate, interesting) for _, position, duplicate, interesting in answers}


class ImageRound(beam.PTransform):
    """S4 or S5: sets and an answer file -> {MAIN: pruned sets, REJECTS}. Stages
    `<stage>_answers` (level line) and `<stage>` (levels set and image)."""

    RULES = {"crowd_pruning": (PRUNING_COLUMNS, pruning_check, prune_round1, _verdicts),
             "set_construction": (INTEREST_COLUMNS, interest_check, construct_set, _interest)}

    def __init__(self, stage: str, answers: str, cfg: PruningConfig, then=None, route: str = ""):
        super().__init__()
        self._stage, self._answers, self._cfg = stage, answers, cfg
        self._then, self._route = then, route

    def expand(self, sets):
        columns, check, rule, to_answers = self.RULES[self._stage]
        positions = beam.pvalue.AsDict(sets | "Positions" >> beam.Map(
            lambda s: (s.key, tuple(i.position for i in s.images))))
        shown = Shown(now=sets | "What each task shows" >> beam.Map(lambda s: (s.key, image_view(s))),
                      task_of=_first, then=self._then, missing_reason=why.UNKNOWN_ITEM,
                      route=self._route)
        rows = sets.pipeline | "Read answers" >> ReadAnswerRows(
            self._answers, self._stage + "_answers", columns, check, why.DUPLICATE_ANSWER,
            context=positions, shown=shown)
        joined = ({"set": sets | "Set by key" >> beam.Map(lambda s: (s.key, s)),
                   "answers": rows[MAIN] | "Answer by set" >> beam.Map(lambda a: (a[0], a))}
                  | "Join" >> beam.CoGroupByKey()
                  | "Rule" >> stage_pardo(_JoinedSetFn(self._stage, rule, to_answers, self._cfg)))
        return {MAIN: joined[MAIN],
                REJECTS: (rows[REJECTS], joined[REJECTS]) | "Round rejects" >> beam.Flatten()}


class _Pair(StageFn):
    stage, level = "pairing", "set"

    def __init__(self, seed: int):
        self._seed = seed

    def judge(self, image_set):
        yield pair_up(image_set, self._seed)


def pair_sets(sets, seed: int):
    return sets | "Pair" >> stage_pardo(_Pair(seed))


class _Write(StageFn):
    stage, level = "writing", "task"

    def judge(self, joined):
        task, groups = joined
        for paired, sentence_id in groups["task"]:
            answers = list(groups["answers"])
            if not answers:
                yield self.reject(why.UNANSWERED, task)
                continue
            _, writer, text, selected = answers[0]
            yield Sentence(paired, sentence_id, writer, text, selected)


class WritingRound(beam.PTransform):
    """Paired sets and the writers' answers -> {MAIN: Sentence, REJECTS}."""

    def __init__(self, answers: str, n_pairs: int, then=None, route: str = ""):
        super().__init__()
        self._answers, self._n_pairs = answers, n_pairs
        self._then, self._route = then, route

    def expand(self, paired):
        tasks = paired | "Tasks" >> beam.FlatMap(
            lambda p: [(writing_task_id(p.key, s), (p, s)) for s in (0, 1)])
        known = beam.pvalue.AsDict(tasks | "Task ids" >> beam.MapTuple(lambda t, _: (t, True)))
        shown = Shown(now=tasks | "What each task shows" >> beam.MapTuple(lambda t, ps: (t, writing_view(ps[0]))),
                      task_of=_first, then=self._then, missing_reason=why.UNKNOWN_ITEM,
                      route=self._route)
        rows = paired.pipeline | "Read sentences" >> ReadAnswerRows(
            self._answers, "writing_answers", SENTENCE_COLUMNS, sentence_check(self._n_pairs),
            why.DUPLICATE_ANSWER, context=known, shown=shown, worker=WRITER)
        written = ({"task": tasks, "answers": rows[MAIN] | "By task" >> beam.Map(lambda a: (a[0], a))}
                   | "Join" >> beam.CoGroupByKey() | "Written" >> stage_pardo(_Write()))
        return {MAIN: written[MAIN],
                REJECTS: (rows[REJECTS], written[REJECTS]) | "Writing rejects" >> beam.Flatten()}


class _Validate(StageFn):
    stage, level = "validation", "example"

    def judge(self, joined):
        example, groups = joined
        for candidate in groups["candidate"]:
            answers = list(groups["answers"])
            if not answers:
                yield self.reject(why.UNANSWERED, example)
                continue
            _, worker, judgement = answers[0]
            if judgement == "report":
                yield self.reject(why.REPORTED, example, detail=f"worker {worker}")
            elif (judgement == "True") != candidate.selected:
                yield self.reject(why.VALIDATION_DISAGREES, example,
                                  detail=f"{judgement}; the writer selected {candidate.selected}")
            else:
                yield Validated(candidate, worker)


class ValidationRound(beam.PTransform):
    """Sentences and the validators' answers -> {MAIN: Validated, REJECTS}."""

    def __init__(self, answers: str, then=None, route: str = ""):
        super().__init__()
        self._answers, self._then, self._route = answers, then, route

    def expand(self, sentences):
        cands = sentences | "Candidates" >> beam.FlatMap(lambda s: [(c.example_id, c) for c in candidates(s)])
        known = beam.pvalue.AsDict(cands | "Ids" >> beam.MapTuple(lambda e, _: (e, True)))
        shown = Shown(now=cands | "What each task shows" >> beam.MapTuple(lambda e, c: (e, validation_view(c))),
                      task_of=_first, then=self._then, missing_reason=why.UNKNOWN_ITEM,
                      route=self._route)
        rows = sentences.pipeline | "Read validations" >> ReadAnswerRows(
            self._answers, "validation_answers", VALIDATION_COLUMNS, judgement_check(JUDGEMENTS, False),
            why.DUPLICATE_ANSWER, context=known, shown=shown, worker=VALIDATOR)
        checked = ({"candidate": cands, "answers": rows[MAIN] | "By example" >> beam.Map(lambda a: (a[0], a))}
                   | "Join" >> beam.CoGroupByKey() | "Validated" >> stage_pardo(_Validate()))
        return {MAIN: checked[MAIN], "candidates": cands | "Candidate" >> beam.Values(),
                REJECTS: (rows[REJECTS], checked[REJECTS]) | "Validation rejects" >> beam.Flatten()}


def task_lines(items: Iterable[Tuple[str, dict]]) -> List[str]:
    """Task rows as the exported file holds them: sorted by id, one JSON object a line."""
    return [json.dumps(task, ensure_ascii=False) for _, task in sorted(items, key=lambda kv: kv[0])]
