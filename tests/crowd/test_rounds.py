"""What every crowd round of every benchmark owes the people who do the work (issue 44), one
parametrised test each over the nine rounds (tests/crowd/rounds.py: ImageCoDe's describe
and retrieve, NLVR2's pruning, interest, writing, validation and extra validation, VSR's
caption and validation), each read by the round's own reader from Mechanical Turk's
results file and from Label Studio's export:

- a worker is who the platform says: MTurk's WorkerId, Label Studio's annotator; a
  posted field that names someone else is a bad_field reject, never someone's answer.
"""
import pytest

from tests.crowd.mturk_files import assignment, write_results
from tests.crowd.rounds import ROUNDS, choice, labelstudio_export, text
from transforms.crowd.labelstudio import CHOICE, CHOICES, COLUMN_NAMED, PLACE_IN, TEXT

IDS = [r.id for r in ROUNDS]


def labelstudio_results(round_, answer: dict) -> list:
    """The results a Label Studio annotation holds for the answer a worker page submits
    (answer columns by the controls' forms: a place is where the page showed the value,
    a named column the one holding it)."""
    forms, data = round_.layout.answers(), round_.labelstudio_task
    results = []
    for name, value in answer.items():
        form = forms.get(name)
        if form in (CHOICE, None) and name not in forms:
            continue   # the task's own columns, echoed by the page
        if form == CHOICE:
            results.append(choice(name, value))
        elif form == CHOICES:
            results.append(choice(name, *str(value).split(",")))
        elif form == TEXT:
            results.append(text(name, value))
        elif form.startswith(PLACE_IN):
            results.append(choice(name, list(data[form[len(PLACE_IN):]]).index(int(value))))
        elif form == COLUMN_NAMED:
            results.append(choice(name, next(c for c, v in data.items() if v == value)))
    return results


@pytest.mark.parametrize("round_", ROUNDS, ids=IDS)
def test_the_worker_is_who_mechanical_turk_says(round_, tmp_path):
    """One honest assignment, one from a page of an earlier release (it posted the worker
    column, as MTurk's WorkerId), one that posts another worker in the round's worker
    column, one that posts another WorkerId: the two forged are bad_field, and only the
    honest workers are credited with anything."""
    honest, earlier = "A1HONEST", "A4EARLIER"
    forged_worker = dict(round_.answer, **{round_.worker or "worker": "w01", "worker_column": round_.worker})
    forged_id = dict(round_.answer, WorkerId="A1HONEST")
    from_earlier_page = dict(round_.answer, **({round_.worker: earlier, "worker_column": round_.worker}
                                               if round_.worker else {}))
    path = tmp_path / "Batch_1_batch_results.csv"
    write_results(path, [assignment(1, honest, round_.task, round_.answer),
                         assignment(2, "A2POSER", round_.task, forged_worker),
                         assignment(3, "A3POSER", round_.task, forged_id),
                         assignment(4, earlier, round_.task, from_earlier_page)], list(round_.task))
    outcome = round_.read(str(path), tmp_path)
    assert outcome.accepted(2) and outcome.accepted(5), outcome.rejects
    if round_.worker:   # the forged worker column; a round that names no worker ignores it
        assert outcome.rejects.get(3) == ["bad_field"], outcome.rejects
    assert outcome.rejects.get(4) == ["bad_field"], outcome.rejects
    if round_.worker:
        assert honest in outcome.workers and set(outcome.workers) <= {honest, earlier}, outcome.workers


@pytest.mark.parametrize("round_", ROUNDS, ids=IDS)
def test_the_worker_is_who_label_studio_says(round_, tmp_path):
    """The annotator the export names (by email) is the worker; a result that names
    another worker is bad_field."""
    results = labelstudio_results(round_, round_.answer)
    assert results, "an honest answer holds a result"
    forged = results + [choice(round_.worker or "worker", "w01")]
    path = labelstudio_export(round_, [("h1@workers.example", results), ("p2@workers.example", forged)],
                              tmp_path / "project-1-export.json")
    outcome = round_.read(path, tmp_path)
    assert outcome.accepted(1) and outcome.rejects.get(2) == ["bad_field"], outcome.rejects
    if round_.worker:
        assert set(outcome.workers) == {"h1@workers.example"}, outcome.workers
