"""What a crowd worker was shown (transforms/crowd/shown.py): fingerprints of content, the
judgement of an answer by its evidence (route 1: the row, route 2: the tasks release),
the detail of a stale answer, the Beam stage, and the checks before any work."""
import json
import pickle

import apache_beam as beam
from apache_beam.testing.util import assert_that
import pytest

from schemas import reasons
from tests.beam_testing import local_test_pipeline
from transforms.core.errors import InputError
from transforms.core.stage import MAIN, REJECTS, read_stage_counts
from transforms.crowd.answer_files import files_without_column
from transforms.crowd.shown import (FINGERPRINT, Answer, CheckShown, Evidence, ReadTaskViews,
                                    carried, change_detail, check_evidence, check_task_release,
                                    fingerprint, judge, labels, view)

SET = "compat/image-sets/s/"


def task(frames, target, video="a" * 64):
    """A describe-like task over frames of one video: content ids, and paths as labels."""
    ids = [f"video:{video}#frame{n}" for n in frames]
    return view({"images": ids, "target": f"video:{video}#frame{target}"},
                {"target": f"{SET}img{target}.jpg", "images": [f"{SET}img{n}.jpg" for n in frames]})


BEFORE = task([1, 5, 9, 61], 61)


def test_a_fingerprint_is_of_content_and_order_not_of_key_order():
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"images": ["x", "y"]}) != fingerprint({"images": ["y", "x"]})
    assert len(BEFORE.fingerprint) == 32
    # the same names over another video: another fingerprint, the same labels
    other = task([1, 5, 9, 61], 61, video="b" * 64)
    assert other.fingerprint != BEFORE.fingerprint and other.labels == BEFORE.labels


def test_an_answer_stands_only_on_what_its_worker_saw():
    seen = Evidence(BEFORE.fingerprint)
    assert judge("s#3", seen, BEFORE) is None                                  # route 1
    assert judge("s#3", Evidence(), BEFORE, then=BEFORE, has_then=True) is None  # route 2
    moved = task([1, 5, 9, 57], 57)
    reason, detail = judge("s#3", seen, moved, then=None)
    assert reason == reasons.STALE_ANSWER
    assert detail == ("task s#3 changed since the worker saw it (as its row says): "
                      "the worker saw other content; this build shows target: img57.jpg; "
                      f"images: img1.jpg, img5.jpg, img9.jpg, img57.jpg (in {SET})")
    # route 2 knows the old labels too: the detail names old and new target and members
    reason, detail = judge("s#3", Evidence(), moved, then=BEFORE, route="crowd.tasks_release.x",
                           has_then=True)
    assert (reason, detail) == (reasons.STALE_ANSWER, (
        "task s#3 changed since the worker saw it (as crowd.tasks_release.x lists it): "
        f"target: img61.jpg -> img57.jpg; images: removed img61.jpg; added img57.jpg (in {SET})"))
    # the row's own evidence comes first, and borrows the release's labels when they agree
    assert judge("s#3", seen, moved, then=BEFORE, has_then=True)[1].endswith(
        f"target: img61.jpg -> img57.jpg; images: removed img61.jpg; added img57.jpg (in {SET})")
    assert judge("s#3", Evidence(moved.fingerprint), moved, then=BEFORE, has_then=True) is None


def test_no_evidence_and_no_task_are_never_used():
    reason, detail = judge("s#3", Evidence(), BEFORE, route="crowd.tasks_release.descriptions")
    assert reason == reasons.STALE_ANSWER
    assert detail == ("nothing shows what the worker saw: the row has no task_fingerprint and "
                      "crowd.tasks_release.descriptions is not set")
    assert "does not list task s#3" in judge("s#3", Evidence(), BEFORE, has_then=True, route="k")[1]
    # a task this build does not show: stale with evidence, the caller's reason without
    assert judge("s#4", Evidence(BEFORE.fingerprint), None) == (
        reasons.STALE_ANSWER, "this build shows no task s#4; the worker answered it as another "
                              "build showed it (as its row says)")
    assert judge("s#4", Evidence(), None, missing_reason="unknown_set") == (
        "unknown_set", "this build shows no task s#4")
    # ids that are digests of what the task shows need no more evidence; a wrong one still fails
    assert judge("pair-1", Evidence(), BEFORE, ids_name_content=True) is None
    assert judge("pair-1", Evidence("0" * 32), BEFORE, ids_name_content=True)[0] == reasons.STALE_ANSWER


def test_change_detail_names_what_changed():
    a = labels({"sentence": "two dogs", "pairs": ["l1 | r1", "l2 | r2"]})
    assert change_detail(a, labels({"sentence": "two cats", "pairs": ["l1 | r1", "l2 | r2"]})) == \
        "sentence: two dogs -> two cats"
    assert change_detail(a, labels({"sentence": "two dogs", "pairs": ["l2 | r2", "l1 | r1"]})) == \
        "pairs: the same, in another order"
    assert change_detail(a, a).startswith("the same names, other content")
    many = labels({"images": [f"x/{i}" for i in range(12)]})
    assert change_detail(labels({"images": []}), many) == \
        "images: added 0, 1, 2, 3, 4, 5, 6, 7 and 4 more (in x/)"


def test_carried_reads_the_fingerprint_and_the_task_columns_a_row_carries():
    row = {FINGERPRINT: " abc ", "target": "t.jpg"}
    assert carried(row, lambda r: {"target": r["target"]}) == Evidence("abc", (("target", "t.jpg"),))
    assert carried({FINGERPRINT: "abc"}, lambda r: {"target": r["target"]}) == Evidence("abc")
    assert carried({"set": "x"}) == Evidence()


class _Dump:
    def __init__(self, path):
        self.path = path

    def __call__(self, actual):
        with open(self.path, "wb") as f:
            pickle.dump(sorted(actual, key=repr), f)


def test_check_shown_as_a_beam_stage(tmp_path):
    """Answers joined with this build's tasks and the tasks release; only stale ones
    and unknown tasks are rejected, each counted at the caller's stage and level."""
    moved = task([1, 5, 9, 57], 57)
    answers = [Answer("s#1", Evidence(BEFORE.fingerprint), {"item_id": "a.csv:2", "line": 2}, "kept-1"),
               Answer("s#2", Evidence(), {"item_id": "a.csv:3", "line": 3}, "kept-2"),
               Answer("s#2", Evidence(BEFORE.fingerprint), {"item_id": "a.csv:4", "line": 4}, "stale"),
               Answer("s#9", Evidence(), {"item_id": "a.csv:5", "line": 5}, "unknown")]
    p = local_test_pipeline()
    now = p | "Now" >> beam.Create([("s#1", BEFORE), ("s#2", moved)])
    then = p | "Then" >> beam.Create([("s#2", moved)])
    out = (p | beam.Create(answers)
           | CheckShown("describe", "line", now, then, missing_reason="unknown_set", route="k"))
    assert_that(out[MAIN], _Dump(str(tmp_path / "main.pkl")), label="main")
    assert_that(out[REJECTS] | beam.Map(lambda r: (r.item_id, r.reason, r.line)),
                                  _Dump(str(tmp_path / "rejects.pkl")), label="rejects")
    result = p.run()
    result.wait_until_finish()
    main = pickle.load(open(tmp_path / "main.pkl", "rb"))
    rejects = pickle.load(open(tmp_path / "rejects.pkl", "rb"))
    assert main == ["kept-1", "kept-2"]
    assert rejects == [("a.csv:4", reasons.STALE_ANSWER, 4), ("a.csv:5", "unknown_set", 5)]
    counts = read_stage_counts(result)["describe"]
    assert counts == {"line.rejected.stale_answer": 1, "line.rejected.unknown_set": 1}


def _release(folder, rows, benchmark="imagecode", name="crowd/describe_tasks.jsonl"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "MANIFEST.json").write_text(json.dumps({"benchmark": benchmark}))
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(folder)


def test_the_tasks_release_is_checked_whole_before_any_work(tmp_path):
    good = [{"task_id": "s#1", FINGERPRINT: BEFORE.fingerprint, "target_image": "t"}]
    release = _release(tmp_path / "r1", good)
    files = ["crowd/describe_tasks.jsonl"]
    assert check_task_release(release, "imagecode", files, "task_id") == [
        f"{release}/crowd/describe_tasks.jsonl"]
    with pytest.raises(InputError, match="not a release folder"):
        check_task_release(str(tmp_path / "nowhere"), "imagecode", files, "task_id")
    with pytest.raises(InputError, match="a release of 'vsr', not 'imagecode'"):
        check_task_release(_release(tmp_path / "r2", good, "vsr"), "imagecode", files, "task_id")
    with pytest.raises(InputError, match="has no crowd/retrieve_tasks.jsonl"):
        check_task_release(release, "imagecode", ["crowd/retrieve_tasks.jsonl"], "task_id")
    old = _release(tmp_path / "r3", [{"task_id": "s#1", "target_image": "t"}])
    with pytest.raises(InputError, match=r"describe_tasks.jsonl:1: no task_fingerprint \(exported before"):
        check_task_release(old, "imagecode", files, "task_id")


def test_an_answer_file_without_any_route_stops_the_build(tmp_path):
    with_column = tmp_path / "a.csv"
    with_column.write_text(f"set_name,text,{FINGERPRINT}\ns,x,abc\n")
    without = tmp_path / "b.csv"
    without.write_text("set_name,text\ns,x\n")
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text(json.dumps({"set_name": "s"}) + "\n" + json.dumps({"set_name": "s", FINGERPRINT: "f"}) + "\n")
    assert files_without_column(str(tmp_path / "*.csv"), FINGERPRINT) == [str(without)]
    assert files_without_column(str(jsonl), FINGERPRINT) == []
    check_evidence(str(with_column), "crowd.descriptions", None, "crowd.tasks_release.descriptions",
                   "imagecode", ["crowd/describe_tasks.jsonl"], "task_id")
    with pytest.raises(InputError, match=(
            r"^crowd.descriptions: .*b.csv has no task_fingerprint column and "
            r"crowd.tasks_release.descriptions is not set")):
        check_evidence(str(without), "crowd.descriptions", None, "crowd.tasks_release.descriptions",
                       "imagecode", ["crowd/describe_tasks.jsonl"], "task_id")
    with pytest.raises(InputError, match="^crowd.tasks_release.descriptions: .* is not a release folder"):
        check_evidence(str(without), "crowd.descriptions", str(tmp_path), "crowd.tasks_release.descriptions",
                       "imagecode", ["crowd/describe_tasks.jsonl"], "task_id")


def test_read_task_views_reads_what_an_earlier_release_exported(tmp_path):
    rows = [{"task_id": "s#1", FINGERPRINT: BEFORE.fingerprint, "target_image": "t1"},
            {"task_id": "s#2", FINGERPRINT: "f2", "target_image": "t2"}]
    release = _release(tmp_path / "r", rows)
    p = local_test_pipeline()
    views = p | ReadTaskViews([f"{release}/crowd/describe_tasks.jsonl"], "task_id",
                              lambda r: {"target": r["target_image"]})
    assert_that(views, _Dump(str(tmp_path / "views.pkl")))
    p.run().wait_until_finish()
    assert pickle.load(open(tmp_path / "views.pkl", "rb")) == [
        ("s#1", (BEFORE.fingerprint, (("target", "t1"),))), ("s#2", ("f2", (("target", "t2"),)))]
