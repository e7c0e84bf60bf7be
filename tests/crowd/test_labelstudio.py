"""Label Studio's files (issue 38, item 3): a round's labeling config and tasks, and its JSON
export read as downloaded (tests/crowd/data/labelstudio_export.json: an export snapshot of
Label Studio 1.23.2, POST /api/projects/<id>/exports then .../download?exportType=JSON,
annotators expanded with their emails; VSR validation tasks with three users'
annotations, one cancelled, one with two choices, one empty). The live round trip
against a real server is tests/crowd/test_labelstudio_server.py."""
import json
import os
import xml.etree.ElementTree as ElementTree

import apache_beam as beam
import pytest

from pipelines.nlvr2.collection.rounds import VALIDATION_LABELSTUDIO as NLVR2_VALIDATION
from pipelines.vsr import reasons
from pipelines.vsr.release import VALIDATION_LABELSTUDIO as VSR_VALIDATION
from tests.beam_testing import local_test_pipeline
from tests.imagecode.crowd.test_crowd import collect, collected, run
from transforms.core.errors import InputError
from transforms.crowd import labelstudio
from transforms.crowd.answer_files import check_answer_file, files_without_column, parse_file
from transforms.crowd.shown import FINGERPRINT

EXPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "labelstudio_export.json")
VOTE_COLUMNS = ("example_id", "validator_id", "label")


def test_the_labeling_config_asks_what_the_round_reads():
    config = ElementTree.fromstring(labelstudio.labeling_config(VSR_VALIDATION))
    assert [(e.tag, e.get("name"), e.get("value")) for e in config if e.tag in ("Image", "Text")] == [
        ("Image", "image_link", "$image_link"), ("Text", "caption", "$caption")]
    choices = config.find("Choices")
    assert (choices.get("name"), choices.get("toName")) == ("label", "caption")
    assert [(c.get("value"), c.get("alias")) for c in choices] == [("True", "1"), ("False", "0")]
    nlvr2 = ElementTree.fromstring(labelstudio.labeling_config(NLVR2_VALIDATION))
    assert [c.get("alias") for c in nlvr2.find("Choices")] == ["True", "False", "report"]
    describe = labelstudio.RoundLayout(images=("frame",), texts=(), asks=(labelstudio.Ask("text"),))
    area = ElementTree.fromstring(labelstudio.labeling_config(describe)).find("TextArea")
    assert (area.get("name"), area.get("toName")) == ("text", "frame")


def test_tasks_carry_the_row_and_how_each_answer_is_read():
    row = {"example_id": "ex1", "caption": 'A "quoted" caption, <b>not markup</b>', FINGERPRINT: "e" * 32}
    tasks = json.loads(labelstudio.tasks_json(VSR_VALIDATION, [row]))
    assert tasks == [{"data": {**row, "labelstudio_answers": {"label": "choice"}}}]   # who answers: Label Studio's


def test_an_export_as_downloaded_becomes_answer_rows():
    assert check_answer_file(EXPORT, VOTE_COLUMNS, worker="validator_id") == [EXPORT]
    assert files_without_column(EXPORT, FINGERPRINT) == []
    with open(EXPORT, "rb") as f:
        rows = list(parse_file(EXPORT, f, "jsonl", VOTE_COLUMNS, worker="validator_id"))
    assert [r.line for r in rows] == [1, 2, 3, 4, 5, 6]   # the annotation's place in the file
    good = [(r.line, r.fields["example_id"], r.fields["validator_id"], r.fields.get("label"), r.fields[FINGERPRINT])
            for r in rows if r.error is None]
    v2, v3, v4 = (f"v{n}@workers.example" for n in (2, 3, 4))   # the annotators as the export names them
    assert good == [(1, "ex1", v2, "1", "e" * 32), (2, "ex1", v3, "0", "e" * 32),
                    (4, "ex2", v2, "0", "d" * 32), (6, "ex2", v4, None, "d" * 32)]
    by_line = {r.line: r for r in rows}
    assert "worker_column" not in by_line[1].fields and by_line[1].fields["labelstudio_annotation"] == 1
    assert "label" not in by_line[6].fields   # an empty result: the round's missing_field
    assert by_line[3].error == (reasons.REJECTED_ASSIGNMENT,
                                f"annotation 3 of user {v4} on task 1 was cancelled (skipped) in Label Studio")
    assert by_line[5].error[0] == reasons.BAD_FIELD and "one choice or one text" in by_line[5].error[1]


def test_a_file_that_is_no_export_stops_the_build(tmp_path):
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(open(EXPORT, "rb").read()[:500])
    with pytest.raises(InputError, match="truncated.json: not JSON"):
        check_answer_file(str(truncated), VOTE_COLUMNS)
    not_tasks = tmp_path / "list.json"
    not_tasks.write_text('[{"example_id": "ex1"}]')
    with pytest.raises(InputError, match="not a Label Studio JSON export"):
        check_answer_file(str(not_tasks), VOTE_COLUMNS)
    with pytest.raises(InputError, match="no task or result of this Label Studio export has the field"):
        check_answer_file(EXPORT, VOTE_COLUMNS + ("relation",), worker="validator_id")


def test_an_export_that_names_annotators_by_number_stops_the_build(tmp_path):
    """Label Studio's plain export names an annotator by the server's user number: the
    first user of every server is 1, so two servers' "1" would be one worker in a release's
    votes and in Dawid-Skene. Refused before any work, naming the file and the export
    that names annotators."""
    tasks = json.load(open(EXPORT))
    for task in tasks:
        for annotation in task["annotations"]:
            annotation["completed_by"] = annotation["completed_by"]["id"]
    plain = tmp_path / "project-1-at-2026-11-29.json"
    plain.write_text(json.dumps(tasks))
    with pytest.raises(InputError, match=r"project-1-at-2026-11-29.json: annotation 1 names its annotator as 2, .*"
                                         r"export the project with its annotators' emails"):
        check_answer_file(str(plain), VOTE_COLUMNS, worker="validator_id")
    assert check_answer_file(str(plain), ("example_id", "label")) == [str(plain)]   # a round that names no worker
    with open(plain, "rb") as f:   # past preflight, no row is anyone's
        assert {r.error[0] for r in parse_file(str(plain), f, "jsonl", VOTE_COLUMNS, worker="validator_id")} == {
            reasons.BAD_FIELD, reasons.REJECTED_ASSIGNMENT}


def test_vsr_reads_an_export_where_it_reads_json_lines(tmp_path):
    """VSR's vote file may be Label Studio's export: an annotation a row, the label 0 or 1
    (pipelines/vsr/annotations.py), a cancelled annotation that row's reject."""
    from pipelines.vsr.annotations import ReadAnswerLines, parse_record
    jsonl = tmp_path / "votes.jsonl"
    jsonl.write_text('{"example_id": "ex3", "validator_id": "V3", "label": 0}\n')
    p = local_test_pipeline()
    lines = p | ReadAnswerLines([EXPORT, str(jsonl)], "validator_id")
    collect(lines | beam.Map(lambda line: (line.rank, line.number, parse_record(line, ("example_id",)))),
            tmp_path, "lines")
    run(p)
    got = {(rank, number): record for rank, number, record in collected(tmp_path, "lines")}
    assert sorted(got) == [(0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 6), (1, 1)]
    assert (got[0, 1]["example_id"], got[0, 1]["validator_id"], got[0, 1]["label"]) == ("ex1", "v2@workers.example", 1)
    assert got[0, 3][0] == reasons.REJECTED_ASSIGNMENT
    assert got[1, 1] == {"example_id": "ex3", "validator_id": "V3", "label": 0}


def test_nlvr2_validation_rows_from_an_export(tmp_path):
    """NLVR2's validation round (S8) reads the export by its own columns: `worker` from
    completed_by, `judgement` the choice's alias."""
    from pipelines.nlvr2.collection.rounds import VALIDATION_COLUMNS
    row = {"example": "cup#0#0#1", "sentence": "There are two cups.", "left_url": "images/1.jpg",
           "right_url": "images/2.jpg", FINGERPRINT: "c" * 32}
    task = json.loads(labelstudio.tasks_json(NLVR2_VALIDATION, [row]))[0]
    judged = [{"from_name": "judgement", "to_name": "sentence", "type": "choices", "value": {"choices": ["report"]}}]
    task.update(id=7, annotations=[{"id": 11, "completed_by": {"id": 5, "email": "w5@workers.example"},
                                    "result": judged, "was_cancelled": False}], predictions=[
        {"id": 1, "result": [dict(judged[0], value={"choices": ["True"]})]}])
    path = tmp_path / "project-2-export.json"
    path.write_text(json.dumps([task]))
    assert check_answer_file(str(path), VALIDATION_COLUMNS, worker="worker") == [str(path)]
    with open(path, "rb") as f:
        rows = list(parse_file(str(path), f, "jsonl", VALIDATION_COLUMNS, worker="worker"))
    assert [(r.line, r.fields["example"], r.fields["worker"], r.fields["judgement"]) for r in rows] == [
        (1, "cup#0#0#1", "w5@workers.example", "report")]   # the prediction is no worker's answer


def test_imagecode_describe_round_from_an_export(tmp_path):
    """ImageCoDe's describe round (a TextArea): the typed text is the description, the
    Label Studio user its describer; a cancelled annotation never reaches the release."""
    from pipelines.imagecode import reasons as imagecode_reasons
    from pipelines.imagecode.crowd.rounds import DESCRIBE_LABELSTUDIO, MakeDescribeTasks, ReadDescriptions, task_row
    from tests.imagecode.crowd.test_crowd import SEED, SETS, _describe_tasks
    from transforms.core.stage import MAIN, REJECTS
    row = task_row(sorted(_describe_tasks(), key=lambda t: t.task_id)[0])
    config = ElementTree.fromstring(labelstudio.labeling_config(DESCRIBE_LABELSTUDIO))
    assert config.find("TextArea").get("name") == "text"
    task = json.loads(labelstudio.tasks_json(DESCRIBE_LABELSTUDIO, [row]))[0]
    typed = [{"from_name": "text", "to_name": "target_image", "type": "textarea",
              "value": {"text": ['The dog, "left", jumps,\nthen lands.']}}]
    task.update(id=1, annotations=[{"id": 1, "completed_by": {"id": 2, "email": "d2@workers.example"},
                                    "result": typed, "was_cancelled": False},
                                   {"id": 2, "completed_by": {"id": 3, "email": "d3@workers.example"},
                                    "result": typed, "was_cancelled": True}])
    path = tmp_path / "project-3-export.json"
    path.write_text(json.dumps([task]))
    p = local_test_pipeline()
    sets = p | "Sets" >> beam.Create(SETS)
    read = p | ReadDescriptions(str(path), sets, (sets | MakeDescribeTasks(SEED))[MAIN])
    collect(read[MAIN] | beam.Map(lambda d: (d.description_id, d.worker, d.text)), tmp_path, "kept")
    collect(read[REJECTS] | beam.Map(lambda r: (r.reason, r.line)), tmp_path, "rejects")
    run(p)
    assert collected(tmp_path, "kept") == [(f"{row['task_id']}#d2@workers.example", "d2@workers.example",
                                            'The dog, "left", jumps,\nthen lands.')]
    assert collected(tmp_path, "rejects") == [(imagecode_reasons.REJECTED_ASSIGNMENT, 2)]
