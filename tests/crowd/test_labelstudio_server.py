"""Crowd rounds through a real Label Studio server (issue 38, item 3), one round per
benchmark: VSR's validation (a choice), NLVR2's writing (a choice of two pairs and a
text) and ImageCoDe's retrieve (a place on the page, mapped through shown_order).

One server for them all (its start is the cost), started from `.venv-labelstudio/`
(tests/crowd/labelstudio_server.py, loopback, offline). Per round: the sample's build
writes crowd/labelstudio/<round>.{xml,json}; a project gets that config and those tasks
through the REST API; each of the sample's own answers to that round that a worker could
have given in Label Studio (on a task of this build, as that task shows it, a value the
config offers) is submitted as an annotation of its worker (a Label Studio user each) on
the task that worker saw; one more annotation is made on an earlier build's version of a
task (its shown content and fingerprint since changed) and one is cancelled (skipped);
the project is exported as JSON and a rebuild reads that export, as downloaded.
Annotations are posted by the admin with `completed_by` naming the worker's user.

Asserted: the rebuild's tables are those of a build from the same answers as JSON Lines
(each worker named by the email the export snapshot names its annotator by: the same
person's id on any server, where a user number is not), so every answer landed on the
task its worker saw; the export's rejects are those of the JSON
Lines file plus the annotation on the changed task (stale_answer) and the cancelled one
(rejected_assignment), and neither of their workers is in any table.

Slow (a server start and three builds per round) and needs the Label Studio venv: `make
check-label-studio` runs it (LABEL_STUDIO_LIVE=1), as .ci/run does; plain `pytest` skips it.
"""
import dataclasses
import json
import os
import xml.etree.ElementTree as ElementTree
from typing import Callable, Optional

import pyarrow.parquet as pq
import pytest

from pipelines import build as build_command
from tests.crowd import labelstudio_server
from tests.paths import ROOT
from transforms.crowd import labelstudio
from transforms.crowd.shown import FINGERPRINT

pytestmark = [
    pytest.mark.skipif(os.environ.get("LABEL_STUDIO_LIVE") != "1",
                       reason="slow (a Label Studio server and three builds a round): make check-label-studio runs it"),
    pytest.mark.skipif(not labelstudio_server.available(),
                       reason="no Label Studio venv (.venv-labelstudio): make labelstudio-setup makes it")]

STALE_WORKER, CANCELLING_WORKER = "stale-worker", "skipping-worker"


def _choice(name, *values):
    return {"from_name": name, "to_name": "x", "type": "choices", "value": {"choices": [str(v) for v in values]}}


def _text(name, text):
    return {"from_name": name, "to_name": "x", "type": "textarea", "value": {"text": [text]}}


def _vsr_validation(vote, data):
    return [_choice("label", vote["label"])] if vote.get("label") in (0, 1) else None


def _nlvr2_writing(row, data):
    selected = row.get("selected")
    selected = sorted({str(s).strip() for s in (selected if isinstance(selected, list) else str(selected).split(","))})
    if not isinstance(row.get("sentence"), str) or len(selected) != 2 or not all(s.isdigit() for s in selected):
        return None   # the project offers two distinct pairs, and nothing else
    return [_choice("selected", ",".join(selected)), _text("sentence", row["sentence"])]


def _imagecode_retrieve(row, data):
    """The place on the page the worker clicked: where shown_order holds the guessed index."""
    order = data["shown_order"]
    return [_choice("guessed_index", order.index(row["guessed_index"]))] if row.get("guessed_index") in order else None


@dataclasses.dataclass(frozen=True)
class Round:
    benchmark: str
    name: str                  # crowd/labelstudio/<name>.{xml,json}
    answers: str               # the sample's answers of the round, under the checkout
    key: str                   # the column naming an answer's task
    worker: str                # the answer column of the worker
    results: Callable[[dict, dict], Optional[list]]   # (answer row, task data) -> its annotation's results
    setting: str               # the config key of the round's answer file
    shown: str                 # a column of the task its worker reads (changed in the earlier version)
    as_list: bool = False      # the setting takes a list


ROUNDS = [
    Round("vsr", "validation", "samples/vsr/votes.jsonl", "example_id", "validator_id", _vsr_validation,
          "inputs.votes", "caption", as_list=True),
    Round("nlvr2", "writing", "samples/nlvr2/sentences.jsonl", "task", "writer", _nlvr2_writing,
          "collection.inputs.sentences", "synset"),
    Round("imagecode", "retrieve", "samples/imagecode/crowd/retrievals.jsonl", "description_id", "worker",
          _imagecode_retrieve, "crowd.retrievals", "text"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with labelstudio_server.LabelStudio(tmp_path_factory.mktemp("labelstudio-data")) as ls:
        yield ls


def build(benchmark, out, version, *sets):
    args = ["--config", "sample", "--output", str(out), "--version", version, "--quiet"]
    for s in sets:
        args += ["--set", s]
    return build_command.build(benchmark, args)


def tables(release):
    """Every table's rows, as JSON (NaN is never equal to itself: as text it is)."""
    folder = os.path.join(release, "parquet")
    return {name: sorted(json.dumps(r, sort_keys=True, default=str) for r in pq.read_table(os.path.join(folder, name)).to_pylist())
            for name in sorted(os.listdir(folder))}


def strings(value):
    """Every text value in rows (nested lists and maps included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)


def rejects_of(release, file_name):
    rows = pq.read_table(os.path.join(release, "rejects")).to_pylist()
    return sorted(r["reason"] for r in rows if os.path.basename(r["file"] or "") == file_name)


def answerable(round_, tasks):
    """The sample's answers a worker could have given in this build's project: (task
    data, answer row, results), in the file's order."""
    by_key = {t["data"][round_.key]: t["data"] for t in tasks}
    with open(os.path.join(str(ROOT), round_.answers), encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            data = by_key.get(row.get(round_.key)) if isinstance(row, dict) else None
            if data is None or row.get(FINGERPRINT, data[FINGERPRINT]) != data[FINGERPRINT] \
                    or not isinstance(row.get(round_.worker), str):
                continue
            results = round_.results(row, data)
            if results:
                yield data, row, results


@pytest.mark.parametrize("round_", ROUNDS, ids=[f"{r.benchmark}-{r.name}" for r in ROUNDS])
def test_a_round_trips_through_label_studio(round_, server, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"{round_.benchmark}-{round_.name}")
    release = build(round_.benchmark, out, "1.0.0")
    folder = os.path.join(release, "crowd", "labelstudio")
    with open(os.path.join(folder, f"{round_.name}.xml"), encoding="utf-8") as f:
        config = f.read()
    with open(os.path.join(folder, f"{round_.name}.json"), encoding="utf-8") as f:
        tasks = json.load(f)
    answers = list(answerable(round_, tasks))
    assert len(answers) > 10 and len({a[0][round_.key] for a in answers}) > 5

    ls = server
    project = ls.post("/api/projects", {"title": f"{round_.benchmark} {round_.name}", "label_config": config})["id"]
    first = tasks[0]["data"]
    earlier = dict(first, **{round_.shown: f"{first[round_.shown]} (an earlier build's)", FINGERPRINT: "0" * 32})
    assert ls.post(f"/api/projects/{project}/import", tasks + [{"data": earlier}])["task_count"] == len(tasks) + 1
    listed = ls.get(f"/api/tasks?project={project}&page_size=10000&fields=all")["tasks"]
    task_id = {(t["data"][round_.key], t["data"][FINGERPRINT]): t["id"] for t in listed}
    users, emails = {}, {}

    def user(worker):
        if worker not in users:   # one server for every round: a user per benchmark and worker
            name = f"{round_.benchmark}-{worker}"
            emails[worker] = f"{name}@workers.example"
            users[worker] = ls.post("/api/users/", {"email": emails[worker], "username": name})["id"]
        return users[worker]

    def annotate(data, worker, results, cancelled=False):
        ls.post(f"/api/tasks/{task_id[data[round_.key], data[FINGERPRINT]]}/annotations/"
                + ("?was_cancelled=1" if cancelled else ""), {"result": results, "completed_by": user(worker)})

    for data, row, results in answers:   # each on the task its worker saw
        annotate(data, row[round_.worker], results)
    first_results = next(results for data, _, results in answers)
    annotate(earlier, STALE_WORKER, first_results)
    annotate(first, CANCELLING_WORKER, first_results, cancelled=True)
    export = ls.export(project)

    downloaded = out / f"project-{project}-export.json"
    downloaded.write_bytes(export)
    # the same answers as JSON Lines, on their tasks as Label Studio shows them (a task
    # column an answer row repeats, such as ImageCoDe's set_name, as the task has it) and
    # each worker named as the export names them
    as_lines = out / f"{round_.name}.jsonl"
    as_lines.write_text("".join(json.dumps(dict(row, **{c: data[c] for c in row if c in data},
                                                **{round_.worker: emails[row[round_.worker]]})) + "\n"
                                for data, row, _ in answers))

    def given(path):
        return f"{round_.setting}=[{path}]" if round_.as_list else f"{round_.setting}={path}"

    from_lines = build(round_.benchmark, out, "1.0.1", given(as_lines))
    from_export = build(round_.benchmark, out, "1.0.2", given(downloaded))

    assert tables(from_export) == tables(from_lines)
    # (ImageCoDe publishes its workers hashed: there the rejects below say it)
    named = set(strings([json.loads(row) for rows in tables(from_export).values() for row in rows]))
    assert emails[STALE_WORKER] not in named and emails[CANCELLING_WORKER] not in named
    assert rejects_of(from_export, downloaded.name) == sorted(
        ["stale_answer", "rejected_assignment"] + rejects_of(from_lines, as_lines.name))
    every_other_project_is_accepted(ls, folder, round_.name)


def every_other_project_is_accepted(ls, folder, done):
    """The release's other Label Studio projects, on the same server: each config is
    accepted and its tasks imported; a task answered with one value of each question (the
    first choice, a text; every question of every place of a Repeater, each required)
    comes back in the export as the answer rows the round reads, one per item."""
    for name in sorted(f[:-len(".xml")] for f in os.listdir(folder) if f.endswith(".xml")):
        with open(os.path.join(folder, f"{name}.xml"), encoding="utf-8") as f:
            config = f.read()
        with open(os.path.join(folder, f"{name}.json"), encoding="utf-8") as f:
            tasks = json.load(f)
        if name == done or not tasks:
            continue
        project = ls.post("/api/projects", {"title": f"{name} (accepted?)", "label_config": config})["id"]
        assert ls.post(f"/api/projects/{project}/import", tasks[:3])["task_count"] == len(tasks[:3])
        task = ls.get(f"/api/tasks?project={project}&page_size=1&fields=all")["tasks"][0]
        asked = list(task["data"][labelstudio.ANSWERS])
        by_name = {}   # a Repeater's controls once per place, as Label Studio shows them
        for c in ElementTree.fromstring(config).iter():
            for n in asked:
                if c.get("name") in (n, n.partition("@")[0] + "@" + labelstudio.REPEATED):
                    by_name[n] = c
        results = [_text(n, "A typed answer.") if by_name[n].tag == "TextArea"
                   else _choice(n, by_name[n].find(".//Choice").get("alias")) for n in asked]   # as recorded
        ls.post(f"/api/tasks/{task['id']}/annotations/", {"result": results})
        export = json.loads(ls.export(project))
        rows = list(labelstudio.answer_rows(f"{name}.json", export, lambda *row: row, worker="worker"))
        assert rows and [error for _, _, _, error in rows] == [None] * len(rows), (name, rows)
        fields = rows[0][2]
        assert fields["worker"] == labelstudio_server.ADMIN   # the annotator, as the snapshot names them
        for n in asked:   # each answer under its column (an item's without its @0)
            assert fields[n.partition("@")[0]] not in (None, ""), (name, n, fields)
