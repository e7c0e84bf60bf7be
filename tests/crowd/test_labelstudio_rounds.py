"""Every crowd round as a Label Studio project (issue 38, item 3): each round's export, in
Label Studio's JSON export format (the layout of tests/crowd/data/labelstudio_export.json:
tasks with `id`, `data` as imported, `annotations` with `id`, `completed_by`, `result`,
`was_cancelled`), is read by that round's own reader, every answer on the task its worker
saw; a cancelled annotation and one made on an earlier build's version of a task never
reach a release.

NLVR2: the sample's collection (S1-S9) is built once from its answer files, then once
from Label Studio exports of the same answers made on the build's own
crowd/labelstudio/<round>.json tasks (pruning and interest a verdict per image place,
writing two choices and a text); both builds give the same tables. ImageCoDe's retrieve
round (a place on the page, mapped through shown_order) and VSR's caption round (a
relation and the image the caption is true for) are read by ReadRetrievals and
ReadCaptions from hand-made exports of the build's tasks."""
import json
import os
import xml.etree.ElementTree as ElementTree

import apache_beam as beam
import pytest

from tests.beam_testing import local_test_pipeline
from tests.imagecode.crowd.test_crowd import SEED, SETS, collect, collected, run
from transforms.core.stage import MAIN, REJECTS
from transforms.crowd import labelstudio
from transforms.crowd.shown import FINGERPRINT

EARLIER = "0" * 32   # the fingerprint of an earlier build's version of a task


def _choice(name, *values):
    """A Choices result as Label Studio exports it (the choice's alias)."""
    return {"from_name": name, "to_name": "x", "type": "choices", "value": {"choices": [str(v) for v in values]},
            "origin": "manual"}


def _text(name, text):
    return {"from_name": name, "to_name": "x", "type": "textarea", "value": {"text": [text]}, "origin": "manual"}


class Export:
    """Label Studio's JSON export of one project, built as the server would: tasks as
    imported (with their ids), each with its annotations in the order they were made."""

    def __init__(self, tasks):
        self.tasks = [dict(t, id=n + 1, annotations=[], predictions=[]) for n, t in enumerate(tasks)]
        self._annotations = 0

    def annotate(self, task, results, worker="", cancelled=False):
        self._annotations += 1
        task["annotations"].append({"id": self._annotations, "completed_by": {"id": 100 + self._annotations,
                                                                             "email": worker},
                                    "result": results, "was_cancelled": cancelled, "ground_truth": False,
                                    "lead_time": 4.2, "task": task["id"]})

    def an_earlier_version_of(self, task):
        earlier = {"data": dict(task["data"], **{FINGERPRINT: EARLIER})}
        self.tasks.append(dict(earlier, id=len(self.tasks) + 1, annotations=[], predictions=[]))
        return self.tasks[-1]

    def write(self, path):
        path.write_text(json.dumps(self.tasks, ensure_ascii=False, indent=1), encoding="utf-8")
        return str(path)


# --- NLVR2: every round of the collection --------------------------------------------------------

def _read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _answer_rows(path):
    import csv
    if path.endswith(".csv"):
        with open(path, encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def _nlvr2_exports(folder, staging, out):
    """The sample's answers of each round, as the Label Studio exports of the build's
    projects: an answer on a task of the build (as that task shows it) becomes an
    annotation; per image round, a set's answers one annotation per worker pass (a second
    answer for the same image a second annotation, as a second worker's). Each export
    also gets a cancelled annotation and one on an earlier build's version of a task."""
    from pipelines.nlvr2.collection.rounds import JUDGEMENTS, VERDICTS, YES_NO
    from pipelines.nlvr2.sample import CONFIG
    import yaml
    with open(CONFIG, encoding="utf-8") as f:
        inputs = yaml.safe_load(f)["collection"]["inputs"]
    rounds = {"pruning": ("pruning_answers", "set"), "interest": ("interest_answers", "set"),
              "writing": ("sentences", "task"), "validation": ("validations", "example"),
              "extra_validation": ("extra_validations", "example")}
    exports, used = {}, {}
    for name, (key, task_column) in rounds.items():
        with open(os.path.join(staging, "crowd", "labelstudio", f"{name}.json"), encoding="utf-8") as f:
            export = Export(json.load(f))
        by_key = {t["data"][task_column]: t for t in export.tasks}
        passes, count = {}, 0
        for row in _answer_rows(os.path.join(folder, os.path.basename(inputs[key]))):
            task = by_key.get(str(row.get(task_column)))
            if task is None or row.get(FINGERPRINT, task["data"][FINGERPRINT]) != task["data"][FINGERPRINT]:
                continue   # no task of this build, as this build shows it: no Label Studio work
            data = task["data"]
            if name in ("pruning", "interest"):
                places = [k for k in range(64) if f"image@{k}" in data and str(data[f"image@{k}"]) == str(row.get("image"))
                          and data[f"image@{k}"] != ""]
                answers = ({"verdict": row.get("verdict")} if name == "pruning" else
                           {"duplicate": str(row.get("duplicate")).lower(), "interesting": str(row.get("interesting")).lower()})
                if not places or not all(a in (VERDICTS if name == "pruning" else YES_NO) for a in answers.values()):
                    continue
                results = passes.setdefault(data["set"], [])
                for annotation in results:   # the first pass without this image
                    if not any(r["from_name"].endswith(f"@{places[0]}") for r in annotation):
                        break
                else:
                    annotation = []
                    results.append(annotation)
                annotation += [_choice(f"{column}@{places[0]}", value) for column, value in answers.items()]
            elif name == "writing":
                selected = row.get("selected")
                selected = selected if isinstance(selected, list) else str(selected).split(",")
                selected = sorted({str(s).strip() for s in selected})
                if not isinstance(row.get("sentence"), str) or len(selected) != 2 or not all(s.isdigit() for s in selected):
                    continue   # the project offers two distinct pairs, and nothing else
                export.annotate(task, [_choice("selected", ",".join(selected)),
                                       _text("sentence", row["sentence"])], worker=str(row.get("writer", "")))
                count += 1
            else:
                if row.get("judgement") not in (JUDGEMENTS if name == "validation" else ("True", "False")):
                    continue
                export.annotate(task, [_choice("judgement", row["judgement"])], worker=str(row.get("worker", "")))
                count += 1
        for set_key, annotations in passes.items():
            for results in annotations:
                export.annotate(by_key[set_key], results)
                count += 1
        first = export.tasks[0]
        asked = next(a["result"] for t in export.tasks for a in t["annotations"])
        item = asked[0]["from_name"].partition("@")[2]   # an image round's: one item's answers
        asked = [r for r in asked if r["from_name"].partition("@")[2] == item]
        export.annotate(export.an_earlier_version_of(first), asked, worker="stale-worker")
        export.annotate(first, asked, worker="skipping-worker", cancelled=True)
        exports[key] = export.write(out / f"project-{name}-export.json")
        used[name] = count
    return exports, used


def test_every_nlvr2_round_reads_its_label_studio_export(tmp_path_factory):
    from pipelines.nlvr2.collection.collect import collection_tables
    from pipelines.nlvr2.sample import make_nlvr2_sample
    from tests.nlvr2.test_collection import _build
    folder = str(tmp_path_factory.mktemp("nlvr2-sample"))
    make_nlvr2_sample(folder)
    staging = str(tmp_path_factory.mktemp("from-answer-files"))
    cfg, from_files, _ = _build(folder, staging)
    for name in ("pruning", "interest", "writing"):   # what each project shows and asks
        config = ElementTree.fromstring(open(os.path.join(staging, "crowd", "labelstudio", f"{name}.xml")).read())
        assert config.findall(".//Image")
    exports, used = _nlvr2_exports(folder, staging, tmp_path_factory.mktemp("exports"))
    assert all(count > 5 for count in used.values()), used

    _, from_exports, _ = _build(folder, str(tmp_path_factory.mktemp("from-exports")),
                                **{key: path for key, path in exports.items()})
    for table in (MAIN, *collection_tables(cfg)):
        assert sorted(map(repr, from_exports[table])) == sorted(map(repr, from_files[table])), table
    assert from_exports[MAIN]
    in_exports = {}
    for reject in from_exports[REJECTS]:
        where = str(reject.item_id)
        if "-export.json" in where:
            in_exports.setdefault(os.path.basename(where).split("-export.json")[0], []).append(reject.reason)
    # each export's rejects: its stale and its cancelled annotation, and the sample's
    # second answer of a task (answered twice, as in its answer file); nothing else, so
    # every other answer landed on its task (its image of its set)
    assert {name: sorted(reasons) for name, reasons in in_exports.items()} == {
        f"project-{name}": ["duplicate_answer", "rejected_assignment", "stale_answer"] for name in used}


# --- ImageCoDe: retrieve ----------------------------------------------------------------------

def test_imagecode_retrieve_maps_the_place_through_shown_order(tmp_path):
    """The retriever picks an image by its place on the page; the answer row holds the
    canonical index (shown_order[place]), as the worker page submits it."""
    from pipelines.imagecode import reasons
    from pipelines.imagecode.crowd.rounds import RETRIEVE_LABELSTUDIO, ReadRetrievals, retrieve_task, task_row
    from pipelines.imagecode.crowd.records import Description
    sets = {s.set_name: s for s in SETS}
    video, still = sets["vid-video1-shot0_0"], sets["open-images-1"]
    tasks = [retrieve_task(Description(f"{s.set_name}#4#a1", s.set_name, 4, "the described one", "a1"), s, SEED)
             for s in (video, still)]
    rows = [task_row(t) for t in tasks]
    imported = json.loads(labelstudio.tasks_json(RETRIEVE_LABELSTUDIO, rows, "https://cdn.example.org/ic/1.0.0"))
    assert imported[0]["data"]["image_0"] == "https://cdn.example.org/ic/1.0.0/" + rows[0]["image_0"]
    export = Export(imported)
    place = [list(t.shown_order).index(4) for t in tasks]   # where the target is on each page
    assert place[1] != 4   # the page's order is not the canonical one
    export.annotate(export.tasks[0], [_choice("guessed_index", place[0])], "r1")
    export.annotate(export.tasks[1], [_choice("guessed_index", place[1])], "r1")
    export.annotate(export.tasks[1], [_choice("guessed_index", (place[1] + 1) % 10)], "r2")   # a wrong pick
    export.annotate(export.tasks[1], [_choice("guessed_index", 10)], "r3")   # no place of the page
    export.annotate(export.tasks[1], [_choice("guessed_index", place[1])], "r4", cancelled=True)
    export.annotate(export.an_earlier_version_of(export.tasks[0]), [_choice("guessed_index", place[0])], "r5")
    path = export.write(tmp_path / "project-4-export.json")

    p = local_test_pipeline()
    known = p | "Sets" >> beam.Create(SETS)
    read = p | ReadRetrievals(path, known, p | "Tasks" >> beam.Create(tasks))
    collect(read[MAIN] | beam.Map(lambda r: (r.description_id, r.worker, r.guessed_index)), tmp_path, "kept")
    collect(read[REJECTS] | beam.Map(lambda r: (r.reason, r.item_id)), tmp_path, "rejects")
    run(p)
    wrong = tasks[1].shown_order[(place[1] + 1) % 10]
    assert sorted(collected(tmp_path, "kept")) == sorted([
        (tasks[0].description_id, "r1", 4), (tasks[1].description_id, "r1", 4),
        (tasks[1].description_id, "r2", wrong)])
    assert sorted(reason for reason, _ in collected(tmp_path, "rejects")) == sorted(
        [reasons.BAD_FIELD, reasons.REJECTED_ASSIGNMENT, reasons.STALE_ANSWER])


# --- VSR: captions ---------------------------------------------------------------------------

def test_vsr_caption_round_reads_relation_and_true_image(tmp_path):
    """The writer picks a relation and the image the caption is true for; the answer row
    holds the relation and that image's file name, the writer from completed_by."""
    from pipelines.vsr import reasons
    from pipelines.vsr.annotations import ReadCaptions
    from pipelines.vsr.release import caption_labelstudio, caption_task
    from pipelines.vsr.worker_pages import caption_row
    from tests.vsr.test_vsr_annotations import _pair
    pairs = [_pair("pair-a"), _pair("pair-b")]
    layout = caption_labelstudio(["under", "left of"])
    choices = ElementTree.fromstring(labelstudio.labeling_config(layout)).findall("Choices")
    assert [c.get("name") for c in choices] == ["relation", "true_image"]
    export = Export(json.loads(labelstudio.tasks_json(layout, [caption_row(caption_task(p)) for p in pairs])))
    a, b = export.tasks
    export.annotate(a, [_choice("relation", "under"), _choice("true_image", "image_1")], "writer-1")
    export.annotate(b, [_choice("relation", "under"), _choice("true_image", "image_0")], "writer-2",
                    cancelled=True)
    export.annotate(b, [_choice("relation", "under"), _choice("true_image", "subj")], "writer-3")   # no image
    export.annotate(export.an_earlier_version_of(b), [_choice("relation", "under"),
                                                      _choice("true_image", "image_0")], "writer-4")
    path = export.write(tmp_path / "project-5-export.json")

    p = local_test_pipeline()
    read = p | ReadCaptions([path], frozenset({"under", "left of"}), p | beam.Create(pairs))
    collect(read[MAIN] | beam.Map(lambda t: (t[0].pair_id, t[0].image, t[0].label, t[0].annotator_id)),
            tmp_path, "examples")
    collect(read[REJECTS] | beam.Map(lambda r: (r.level, r.reason)), tmp_path, "rejects")
    run(p)
    assert sorted(collected(tmp_path, "examples")) == [("pair-a", "1.jpg", 0, "writer-1"),
                                                       ("pair-a", "2.jpg", 1, "writer-1")]
    assert sorted(collected(tmp_path, "rejects")) == sorted([
        ("line", reasons.REJECTED_ASSIGNMENT), ("line", reasons.BAD_FIELD), ("line", reasons.STALE_ANSWER),
        ("pair", reasons.UNCAPTIONED_PAIR)])


# --- the reader stays strict -------------------------------------------------------------------

@pytest.mark.parametrize("results, problem", [
    ([_choice("verdict@0", "keep", "inappropriate")], "must hold one choice or one text"),
    ([_choice("opinion", "keep")], "answers no question of this round"),
    ([_choice("verdict@0", "keep"), _choice("set", "other#0")], "is a column of the task"),
])
def test_a_result_the_round_does_not_ask_is_bad_field(results, problem):
    from pipelines.nlvr2.collection.rounds import image_round_labelstudio
    row = {"set": "cups#0", "synset": "cup", "images": [{"image": 0, "url": "images/0.jpg"}], FINGERPRINT: "f" * 32}
    export = Export(json.loads(labelstudio.tasks_json(image_round_labelstudio("pruning"), [row])))
    export.annotate(export.tasks[0], results, "w")
    [answer] = labelstudio.answer_rows("p.json", export.tasks, lambda *a: a)
    assert answer[3][0] == "bad_field" and problem in answer[3][1] and "annotation 1 of user w on task 1" in answer[3][1]


def test_an_item_round_gives_a_row_per_answered_place():
    from pipelines.nlvr2.collection.rounds import image_round_labelstudio
    row = {"set": "cups#0", "synset": "cup", FINGERPRINT: "f" * 32,
           "images": [{"image": k + 5, "url": f"images/{k}.jpg"} for k in range(3)]}
    export = Export(json.loads(labelstudio.tasks_json(image_round_labelstudio("interest"), [row])))
    export.annotate(export.tasks[0], [_choice("duplicate@2", "yes"), _choice("interesting@2", "no"),
                                      _choice("duplicate@0", "no")], "w")
    export.annotate(export.tasks[0], [], "v")   # nothing answered: one row, the round's missing_field
    answers = list(labelstudio.answer_rows("p.json", export.tasks, lambda *a: a))
    assert [(line, f.get("image"), f.get("duplicate"), f.get("interesting")) for _, line, f, _ in answers] == [
        (1, 5, "no", None), (1, 7, "yes", "no"), (2, None, None, None)]
    assert all(f["set"] == "cups#0" and f[FINGERPRINT] == "f" * 32 and not any("@" in c for c in f)
               for _, _, f, _ in answers)
