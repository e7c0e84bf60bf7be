"""The crowd rounds: seeded tasks, exports, ingestion of bad rows, the keep rule, and the
whole chain over the simulated sample answers (pipelines/imagecode/sample/crowd.py)."""
import csv
import hashlib
import json
import pickle

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that

from pipelines.imagecode import reasons
from pipelines.imagecode.crowd.agreement import ComputeAgreement, WorkerPools
from pipelines.imagecode.sample.crowd import write_sample_crowd_outputs
from pipelines.imagecode.crowd.rounds import (JUDGED, ApplyKeepRule, MakeDescribeTasks, MakeRetrieveTasks,
                                        ReadDescriptions, ReadRetrievals, WriteTasks,
                                        choose_targets, describe_tasks, keep_decision,
                                        shown_order)
from pipelines.imagecode.crowd.records import (DESCRIBE_TASK_COLUMNS, DESCRIPTION_COLUMNS,
                                               RETRIEVAL_COLUMNS, RETRIEVE_TASK_COLUMNS,
                                               AnnotationSet, RetrieveTask, canonical_order,
                                               frame_identity, image_identity)
from tests.beam_testing import local_test_pipeline
from transforms.core.stage import MAIN, REJECTS, check_links, read_stage_counts, reconcile
from transforms.crowd.answer_files import parse_file

SEED = 7


def make_set(name, split, is_video, n=10, numbers=None, content=""):
    """A set of n images; `content` stands for the bytes behind it (another content, the
    same names: what a changed video looks like)."""
    numbers = numbers or ([3 + 17 * i for i in range(n)] if is_video else list(range(n)))
    paths = tuple(f"compat/image-sets/{name}/img{k}.jpg" for k in numbers)
    digest = lambda text: hashlib.sha256((content + text).encode()).hexdigest()  # noqa: E731
    ids = tuple(frame_identity(digest(name), k) if is_video else image_identity(digest(f"{name}/{k}"))
                for k in numbers)
    return AnnotationSet(name, "vid" if is_video else "open-images", split, is_video,
                         canonical_order(paths), ids)


SETS = [make_set("open-images-1", "train", False), make_set("vid-video1-shot0_0", "train", True),
        make_set("open-images-2", "train", False), make_set("vid-video2-shot0_0", "valid", True),
        make_set("open-images-3", "valid", False), make_set("vid-video3-shot1_0", "test", True),
        make_set("open-images-4", "test", False)]


class _Dump:
    """assert_that matcher that saves what arrived, so the test can look at it after run."""

    def __init__(self, path):
        self.path = path

    def __call__(self, actual):
        with open(self.path, "wb") as f:
            pickle.dump(list(actual), f)


def collect(pcoll, tmp_path, name):
    assert_that(pcoll, _Dump(str(tmp_path / f"{name}.pkl")), label=f"collect {name}")


def collected(tmp_path, name):
    with open(tmp_path / f"{name}.pkl", "rb") as f:
        return pickle.load(f)


def run(p):
    result = p.run()
    result.wait_until_finish()
    return read_stage_counts(result)


# --- pure choices -----------------------------------------------------------------------

def test_canonical_order_sorts_by_the_number_after_img():
    assert canonical_order(["a/img100.jpg", "a/img20.jpg", "a/img3.jpg"]) == (
        "a/img3.jpg", "a/img20.jpg", "a/img100.jpg")
    with pytest.raises(ValueError):
        canonical_order(["a/frame1.jpg"])


def test_targets_are_seeded_distinct_and_three_per_set():
    names = [f"open-images-{i}" for i in range(200)]
    chosen = [choose_targets(SEED, n) for n in names]
    assert chosen == [choose_targets(SEED, n) for n in names]          # deterministic
    assert all(len(set(t)) == 3 and all(0 <= i < 10 for i in t) for t in chosen)
    assert chosen != [choose_targets(SEED + 1, n) for n in names]      # the seed matters
    assert len({i for t in chosen for i in t}) == 10                   # every position occurs


def test_static_order_is_a_seeded_permutation_and_video_order_is_temporal():
    orders = [shown_order(SEED, f"set{i}#0", is_video=False) for i in range(50)]
    assert all(sorted(o) == list(range(10)) for o in orders)
    assert sum(o != tuple(range(10)) for o in orders) == 50
    assert orders[0] == shown_order(SEED, "set0#0", is_video=False)
    assert shown_order(SEED, "x", is_video=True) == tuple(range(10))


@pytest.mark.parametrize("split, correct, retrievers, expected", [
    ("train", 1, 1, None), ("train", 0, 1, reasons.RETRIEVER_WRONG),
    ("valid", 2, 3, None), ("valid", 3, 3, None), ("valid", 1, 3, reasons.TOO_FEW_CORRECT),
    ("test", 2, 3, None), ("test", 0, 3, reasons.TOO_FEW_CORRECT), ("test", 1, 1, reasons.TOO_FEW_CORRECT),
    ("train", 0, 0, reasons.NO_RETRIEVAL), ("valid", 0, 0, reasons.NO_RETRIEVAL),
    ("other", 1, 1, reasons.BAD_FIELD),
])
def test_keep_decision(split, correct, retrievers, expected):
    assert keep_decision(split, correct, retrievers) == expected


# --- keep rule and ingestion on hand-built cases ----------------------------------------

def _hand_built_files(tmp_path):
    """Describer CSV and retriever JSONL with good rows and one of each kind of bad row.
    Most rows carry no task_fingerprint (answers collected before tasks had one: they are
    read against the tasks as exported, route 2); line 14 carries a wrong one."""
    wrong = next(t for t in _describe_tasks() if t.task_id == "open-images-1#8").view().fingerprint
    desc_csv = tmp_path / "descriptions.csv"
    with open(desc_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["set_name", "target_index", "text", "worker", "extra", "task_fingerprint"])
        w.writerow(["open-images-1", "4", "A dog, left; it says \"hi\"\nsecond line.", "a1", "x", ""])  # r2
        w.writerow(["open-images-1", "6", "The cup is empty.", "a2", "", ""])       # train, wrong
        w.writerow(["open-images-3", "4", "The lamp is off.", "a1", "", ""])        # valid, 2 of 3
        w.writerow(["open-images-3", "8", "Nobody at the door.", "a3", "", ""])     # valid, 1 of 3
        w.writerow(["vid-video3-shot1_0", "2", "He starts to turn.", "a4", "", ""])  # test, none
        w.writerow(["no-such-set", "1", "Text.", "a1", "", ""])
        w.writerow(["open-images-1", "12", "Text.", "a1", "", ""])
        w.writerow(["open-images-1", "x", "Text.", "a1", "", ""])
        w.writerow(["open-images-1", "1", "", "a1", "", ""])
        w.writerow(["open-images-1", "4", "Again the dog.", "a1", "", ""])           # duplicate id
        w.writerow(["open-images-1", "5", "Not a target.", "a5", "", ""])            # no such task
        w.writerow(["open-images-1", "6", "The cup again.", "a6", "", wrong])       # saw #8's view
        f.write("too,few\n")
    retr_jsonl = tmp_path / "retrievals.jsonl"
    rows = [("open-images-1", "open-images-1#4#a1", "b1", 4), ("open-images-1", "open-images-1#6#a2", "b1", 4),
            ("open-images-3", "open-images-3#4#a1", "b1", 4), ("open-images-3", "open-images-3#4#a1", "b2", 4),
            ("open-images-3", "open-images-3#4#a1", "b3", 0), ("open-images-3", "open-images-3#8#a3", "b1", 8),
            ("open-images-3", "open-images-3#8#a3", "b2", 1), ("open-images-3", "open-images-3#8#a3", "b3", 1),
            ("open-images-3", "open-images-3#8#a3", "b3", 8),   # duplicate retrieval (b3 again)
            ("open-images-3", "open-images-3#8#a3", "a3", 8),   # the describer: self retrieval
            ("open-images-1", "open-images-3#4#a1", "b4", 4),   # names another set
            ("open-images-1", "open-images-1#0#ghost", "b1", 0),  # unknown description
            ("no-such-set", "no-such-set#1#a1", "b1", 1), ("open-images-1", "open-images-1#4#a1", "b2", 12)]
    with open(retr_jsonl, "w") as f:
        for s, d, w, g in rows:
            f.write(json.dumps(dict(set_name=s, description_id=d, worker=w, guessed_index=g)) + "\n")
        f.write(json.dumps(dict(set_name="open-images-1", description_id="x", worker="b9")) + "\n")
        f.write("[1, 2]\n{not json\n")
    return str(desc_csv), str(retr_jsonl)


def _describe_tasks(sets=SETS):
    return [t for s in sets if len(s.image_paths) == 10 for t in describe_tasks(s, SEED)]


def _as_exported(tasks, label):
    """(task id, view) of tasks, as a release that exported them lists them (route 2)."""
    return tasks | label >> beam.Map(lambda t: (t.task_id, t.view()))


@pytest.mark.parametrize("mode", ["in_memory", "multi_processing"])  # the latter: pickling
def test_ingestion_and_keep_rule_on_hand_built_rows(tmp_path, mode):
    desc_path, retr_path = _hand_built_files(tmp_path)
    p = local_test_pipeline(direct_running_mode=mode, direct_num_workers=2)
    sets = p | "Sets" >> beam.Create(SETS)
    tasks = sets | MakeDescribeTasks(SEED)
    descriptions = p | ReadDescriptions(desc_path, sets, tasks[MAIN], _as_exported(tasks[MAIN], "Exported"))
    retrieve_tasks = descriptions[MAIN] | MakeRetrieveTasks(SEED, sets)
    retrievals = p | ReadRetrievals(retr_path, sets, retrieve_tasks[MAIN],
                                    _as_exported(retrieve_tasks[MAIN], "Exported retrieve"))
    kept = {"descriptions": descriptions[MAIN], "retrievals": retrievals[MAIN], "sets": sets} | ApplyKeepRule()
    for name, pcoll in [("descriptions", descriptions[MAIN]), ("kept", kept[MAIN]), ("judged", kept[JUDGED])]:
        collect(pcoll, tmp_path, name)
    rejects = (descriptions[REJECTS], retrievals[REJECTS], kept[REJECTS]) | beam.Flatten()
    collect(rejects | beam.Map(lambda r: (r.stage, r.level, r.reason, r.item_id)), tmp_path, "rejects")
    collect(rejects | "Details" >> beam.Map(lambda r: (r.item_id, r.detail)), tmp_path, "details")
    counts = run(p)

    first = [d for d in collected(tmp_path, "descriptions") if d.description_id == "open-images-1#4#a1"]
    assert [d.text for d in first] == ["A dog, left; it says \"hi\"\nsecond line."]  # earliest row wins
    # (that quoted newline makes every later CSV row start one line further down)
    assert first[0].split == "train"
    kept_rows = {k.description_id: (k.retrievers, k.correct, k.split, k.worker) for k in collected(tmp_path, "kept")}
    assert kept_rows == {"open-images-1#4#a1": (1, 1, "train", "a1"), "open-images-3#4#a1": (3, 2, "valid", "a1")}
    assert sorted(collected(tmp_path, "rejects")) == sorted([
        ("describe", "line", reasons.UNKNOWN_SET, "descriptions.csv:8"),
        ("describe", "line", reasons.INDEX_OUT_OF_RANGE, "descriptions.csv:9"),
        ("describe", "line", reasons.BAD_FIELD, "descriptions.csv:10"),
        ("describe", "line", reasons.MISSING_FIELD, "descriptions.csv:11"),
        ("describe", "line", reasons.DUPLICATE_DESCRIPTION, "descriptions.csv:12"),
        ("describe", "line", reasons.STALE_ANSWER, "descriptions.csv:13"),
        ("describe", "line", reasons.STALE_ANSWER, "descriptions.csv:14"),
        ("describe", "line", reasons.MALFORMED_ROW, "descriptions.csv:15"),
        ("retrieve", "line", reasons.DUPLICATE_RETRIEVAL, "retrievals.jsonl:9"),
        ("retrieve", "line", reasons.UNKNOWN_DESCRIPTION, "retrievals.jsonl:12"),
        ("retrieve", "line", reasons.UNKNOWN_SET, "retrievals.jsonl:13"),
        ("retrieve", "line", reasons.INDEX_OUT_OF_RANGE, "retrievals.jsonl:14"),
        ("retrieve", "line", reasons.MISSING_FIELD, "retrievals.jsonl:15"),
        ("retrieve", "line", reasons.BAD_JSON, "retrievals.jsonl:16"),
        ("retrieve", "line", reasons.BAD_JSON, "retrievals.jsonl:17"),
        ("retrieve", "retrieval", reasons.SELF_RETRIEVAL, "open-images-3#8#a3@a3"),
        ("retrieve", "retrieval", reasons.SET_MISMATCH, "open-images-3#4#a1@b4"),
        ("retrieve", "description", reasons.RETRIEVER_WRONG, "open-images-1#6#a2"),
        ("retrieve", "description", reasons.TOO_FEW_CORRECT, "open-images-3#8#a3"),
        ("retrieve", "description", reasons.NO_RETRIEVAL, "vid-video3-shot1_0#2#a4"),
    ])
    details = dict(collected(tmp_path, "details"))
    assert details["descriptions.csv:13"] == "this build shows no task open-images-1#5"
    # the worker saw target img8; this build asks about img6 of the same set
    assert details["descriptions.csv:14"].startswith(
        "task open-images-1#6 changed since the worker saw it (as its row says): the worker saw other")
    judged = {j.description_id: (j.guesses, j.kept) for j in collected(tmp_path, "judged")}
    assert judged["open-images-3#8#a3"] == ((("b1", 8), ("b2", 1), ("b3", 1)), False)
    assert "vid-video3-shot1_0#2#a4" not in judged   # nothing to agree on
    assert reconcile(counts) == []
    assert counts["describe"]["line.in"] == 13 and counts["retrieve"]["line.in"] == 17
    assert check_links(counts, [("describe", "line.out", "retrieve", "description.in"),
                                ("retrieve", "line.out", "retrieve", "retrieval.in")]) == []


def test_sample_files_parse_in_either_format(tmp_path):
    sample = write_sample_crowd_outputs(SETS[:2], str(tmp_path), seed=SEED,
                                        describer_format="jsonl", retriever_format="csv")
    for path, columns in [(sample.descriptions, DESCRIPTION_COLUMNS), (sample.retrievals, RETRIEVAL_COLUMNS)]:
        fmt = "csv" if path.endswith(".csv") else "jsonl"
        with open(path, "rb") as f:
            parsed = list(parse_file(path, f, fmt, columns))
        good = [row.fields for row in parsed if row.error is None]
        errors = [row.error[0] for row in parsed if row.error is not None]
        assert good and all(set(columns) <= set(row) for row in good)
        assert errors == [reasons.MALFORMED_ROW if fmt == "csv" else reasons.BAD_JSON]


def test_unknown_file_extension_fails_before_running():
    with pytest.raises(ValueError, match=r"\.csv, \.jsonl or \.json"):
        ReadDescriptions("answers.txt", None, None)


def _hostile_describer_csv(path):
    """Header and 44 good rows (lines 2-45), but the row on line 8 opens a quote it never
    closes, so a CSV parser runs on to the next quote (the quoted text on line 29); then a
    Latin-1 row (line 46) and a row naming an unknown set (line 47)."""
    names = [s.set_name for s in SETS]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(DESCRIPTION_COLUMNS)
        for line in range(2, 46):
            if line == 8:
                f.write(f'{names[0]},4,"The dog on the left,w{line:02d}\n')
                continue
            text = "A cat, on the mat." if line == 29 else f"The dog turns round in take {line}."
            name = names[line % len(names)]
            writer.writerow([name, choose_targets(SEED, name)[line % 3], text, f"w{line:02d}"])
    with open(path, "ab") as f:
        f.write(f"{names[1]},4,Un caf\xe9 noir.,w46\n".encode("latin-1"))
        f.write(b"no-such-set,4,A cat.,w47\n")
    return str(path)


def test_hostile_describer_file_loses_no_row_and_publishes_no_replacement_character(tmp_path):
    path = _hostile_describer_csv(tmp_path / "descriptions.csv")
    p = local_test_pipeline()
    sets = p | "Sets" >> beam.Create(SETS)
    tasks = sets | MakeDescribeTasks(SEED)
    descriptions = p | ReadDescriptions(path, sets, tasks[MAIN], _as_exported(tasks[MAIN], "Exported"))
    tasks = descriptions[MAIN] | MakeRetrieveTasks(SEED, sets)
    _ = tasks[MAIN] | WriteTasks(str(tmp_path / "retrieve_tasks"), RetrieveTask)
    collect(descriptions[MAIN], tmp_path, "descriptions")
    collect(descriptions[REJECTS], tmp_path, "rejects")
    counts = run(p)

    described = collected(tmp_path, "descriptions")
    # 44 rows, one bad quote: 43 ingested and 1 rejected; the two later bad rows rejected alone
    assert sorted(d.worker for d in described) == [f"w{line:02d}" for line in range(2, 46) if line != 8]
    assert next(d.text for d in described if d.worker == "w29") == "A cat, on the mat."
    rejects = sorted((r.line, r.reason, r.file, r.item_id, r.detail) for r in collected(tmp_path, "rejects"))
    assert rejects == [
        (8, reasons.RUNAWAY_QUOTE, path, "descriptions.csv:8",
         "quote opened on line 8 runs to line 29, swallowing lines 9-29 (read again as rows of their own)"),
        (46, reasons.BAD_ENCODING, path, "descriptions.csv:46", "byte 0xe9 at column 28 is not UTF-8"),
        (47, reasons.UNKNOWN_SET, path, "descriptions.csv:47", "no-such-set")]
    assert counts["describe"]["line.in"] == 46 and counts["describe"]["line.out"] == 43
    assert reconcile(counts) == []
    for ext in ("csv", "jsonl"):
        with open(tmp_path / f"retrieve_tasks.{ext}", "rb") as f:
            exported = f.read().decode("utf-8")
        assert "\ufffd" not in exported and "Un caf" not in exported
    with open(tmp_path / "retrieve_tasks.jsonl") as f:
        assert len(f.readlines()) == 43


def test_task_files_are_in_task_id_order_whatever_order_the_tasks_arrive(tmp_path):
    """The same tasks give the same bytes on any runner: a file's rows do not follow
    arrival order (on Flink it follows the shuffle)."""
    def write(folder, order):
        p = local_test_pipeline()
        tasks = p | beam.Create(order(SETS)) | MakeDescribeTasks(SEED)
        _ = tasks[MAIN] | beam.Reshuffle() | WriteTasks(str(folder / "describe_tasks"))
        run(p)
        return {ext: (folder / f"describe_tasks.{ext}").read_bytes() for ext in ("csv", "jsonl")}

    forward = write(tmp_path / "a", list)
    backward = write(tmp_path / "b", lambda sets: list(reversed(sets)))
    assert forward == backward
    ids = [json.loads(line)["task_id"] for line in forward["jsonl"].decode().splitlines()]
    assert len(ids) == 3 * len(SETS) and ids == sorted(ids)
    rows = list(csv.reader(forward["csv"].decode().splitlines()))
    assert rows[0] == list(DESCRIBE_TASK_COLUMNS) and [r[0] for r in rows[1:]] == ids


# --- the whole chain over the simulated sample ------------------------------------------

@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("chain")
    sets = SETS + [make_set("open-images-short", "train", False, n=9)]
    sample = write_sample_crowd_outputs(SETS, str(tmp / "answers"), seed=SEED)
    p = local_test_pipeline()
    sets_pc = p | "Sets" >> beam.Create(sets)
    tasks = sets_pc | MakeDescribeTasks(SEED)
    _ = tasks[MAIN] | "Write describe" >> WriteTasks(str(tmp / "describe_tasks"))
    descriptions = p | ReadDescriptions(sample.descriptions, sets_pc, tasks[MAIN])
    retrieve_tasks = descriptions[MAIN] | MakeRetrieveTasks(SEED, sets_pc)
    _ = retrieve_tasks[MAIN] | "Write retrieve" >> WriteTasks(str(tmp / "retrieve_tasks"), RetrieveTask)
    retrievals = p | ReadRetrievals(sample.retrievals, sets_pc, retrieve_tasks[MAIN])
    kept = {"descriptions": descriptions[MAIN], "retrievals": retrievals[MAIN], "sets": sets_pc} | ApplyKeepRule()
    agreement = kept[JUDGED] | ComputeAgreement()
    pools = {"descriptions": descriptions[MAIN], "retrievals": retrievals[MAIN]} | WorkerPools()
    rejects = (tasks[REJECTS], descriptions[REJECTS], retrieve_tasks[REJECTS], retrievals[REJECTS],
               kept[REJECTS]) | "All rejects" >> beam.Flatten()
    for name, pcoll in [("tasks", tasks[MAIN]), ("descriptions", descriptions[MAIN]),
                        ("retrieve_tasks", retrieve_tasks[MAIN]), ("kept", kept[MAIN]),
                        ("judged", kept[JUDGED]), ("agreement", agreement), ("pools", pools),
                        ("rejects", rejects)]:
        collect(pcoll, tmp, name)
    counts = run(p)
    out = {name: collected(tmp, name) for name in
           ["tasks", "descriptions", "retrieve_tasks", "kept", "judged", "agreement", "pools", "rejects"]}
    return dict(out, counts=counts, tmp=tmp, sample=sample)


def test_describe_tasks_three_per_set_in_the_right_order(chain):
    tasks = chain["tasks"]
    assert len(tasks) == 3 * len(SETS)
    for s in SETS:
        mine = [t for t in tasks if t.set_name == s.set_name]
        assert sorted(t.target_index for t in mine) == list(choose_targets(SEED, s.set_name))
        for t in mine:
            assert t.task_id == f"{s.set_name}#{t.target_index}" and t.image_paths == s.image_paths
            assert sorted(t.shown_order) == list(range(10))
            assert (t.shown_order == tuple(range(10))) == s.is_video
    assert [(r.reason, r.item_id) for r in chain["rejects"] if r.stage == "describe" and r.level == "set"] == [
        (reasons.WRONG_SET_SIZE, "open-images-short")]


def test_exports_read_back_as_csv_and_jsonl(chain):
    tmp, tasks = chain["tmp"], {t.task_id: t for t in chain["tasks"]}
    with open(tmp / "describe_tasks.csv", newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == DESCRIBE_TASK_COLUMNS
        csv_rows = list(reader)
    with open(tmp / "describe_tasks.jsonl") as f:
        json_rows = [json.loads(line) for line in f]
    assert len(csv_rows) == len(json_rows) == len(tasks)
    for row in json_rows:
        t = tasks[row["task_id"]]
        assert row["shown_order"] == list(t.shown_order) and row["is_video"] is t.is_video
        assert row[f"image_{row['target_position']}"] == row["target_image"] == t.image_paths[t.target_index]
        assert [row[f"image_{k}"] for k in range(10)] == [t.image_paths[i] for i in t.shown_order]
    for row in csv_rows:
        assert json.loads(row["shown_order"]) == list(tasks[row["task_id"]].shown_order)
        assert row["is_video"] in ("true", "false")
    with open(tmp / "retrieve_tasks.jsonl") as f:
        retrieve_rows = [json.loads(line) for line in f]
    with open(tmp / "retrieve_tasks.csv", newline="") as f:
        assert tuple(csv.DictReader(f).fieldnames) == RETRIEVE_TASK_COLUMNS
    assert len(retrieve_rows) == len(chain["descriptions"])
    assert all("target_index" not in r and "target_image" not in r for r in retrieve_rows)
    assert {r["split"]: r["assignments"] for r in retrieve_rows} == {"train": 1, "valid": 3, "test": 3}


def test_sample_answers_run_through_with_every_reject_reason(chain):
    got = {}
    for r in chain["rejects"]:
        got[r.reason] = got.get(r.reason, 0) + 1
    for file_name, injected in chain["sample"].injected.items():
        for reason, n in injected.items():
            assert got.get(reason, 0) >= n, (file_name, reason)
    assert got.get(reasons.NO_RETRIEVAL) == 1
    assert got.get(reasons.RETRIEVER_WRONG, 0) >= 1 and got.get(reasons.TOO_FEW_CORRECT, 0) >= 1
    kept = chain["kept"]
    assert kept and all(k.correct >= (1 if k.split == "train" else 2) for k in kept)
    assert len(kept) + sum(r.level == "description" for r in chain["rejects"]) == len(chain["descriptions"])
    assert reconcile(chain["counts"]) == []


def test_sample_is_byte_identical_for_the_same_seed(chain, tmp_path):
    again = write_sample_crowd_outputs(SETS, str(tmp_path), seed=SEED)
    for a, b in [(chain["sample"].descriptions, again.descriptions), (chain["sample"].retrievals, again.retrievals)]:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            assert fa.read() == fb.read()
    texts = [d.text for d in chain["descriptions"]]
    assert len({len(t.split()) for t in texts}) >= 3   # varied lengths for language statistics


def test_agreement_and_pools_over_the_chain(chain):
    rows = {(r["split"], r["kind"]): r for r in chain["agreement"]}
    assert set(rows) >= {("valid", "video"), ("valid", "static"), ("valid", "all"), ("train", "all")}
    assert rows[("valid", "static")]["level"] == "nominal" and rows[("valid", "video")]["level"] == "interval"
    kept_valid = [j for j in chain["judged"] if j.kept and j.split == "valid"]
    assert rows[("valid", "all")]["descriptions"] == len(kept_valid)
    assert 0.5 <= rows[("valid", "all")]["accuracy"] <= 1.0
    pools = chain["pools"][0]
    assert set(pools["workers"]) == {"describer", "retriever", "any"}
    overlap = pools["overlap"]["any"]
    assert set(overlap["sizes"]) == {"train", "valid", "test"}
    assert 0 < overlap["jaccard"]["train|valid"] < 1    # partly disjoint pools
