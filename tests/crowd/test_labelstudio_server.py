"""VSR's validation round through a real Label Studio server (issue 38, item 3): the
sample's build writes crowd/labelstudio/validation.{xml,json}; a server started from
`.venv-labelstudio/` (tests/crowd/labelstudio_server.py, loopback, offline) gets a project
with that config and those tasks through its REST API; each of the sample's votes is
submitted as an annotation of its validator (a Label Studio user each) on the task that
validator saw; one more annotation is made on an earlier build's version of a task (the
caption since changed) and one is cancelled (skipped); the project is exported as JSON
and a rebuild reads that export, as downloaded, as its votes.

Asserted: the rebuild's examples are those of a build from the same votes as JSON Lines
(each validator named by the Label Studio user id the export names them by), so every
answer landed on the task its worker saw; the annotation on the changed task is a
stale_answer reject and the cancelled one a rejected_assignment reject, and neither
worker is in any example's votes.

Slow (a server start and three sample builds) and needs the Label Studio venv: `make
check-label-studio` runs it (LABEL_STUDIO_LIVE=1), as .ci/run does; plain `pytest` skips it.
"""
import json
import os

import pyarrow.parquet as pq
import pytest

from pipelines import runner
from tests.crowd import labelstudio_server
from tests.paths import ROOT
from transforms.crowd.shown import FINGERPRINT

pytestmark = [
    pytest.mark.skipif(os.environ.get("LABEL_STUDIO_LIVE") != "1",
                       reason="slow (a Label Studio server and three builds): make check-label-studio runs it"),
    pytest.mark.skipif(not labelstudio_server.available(),
                       reason="no Label Studio venv (.venv-labelstudio): make labelstudio-setup makes it")]

STALE_WORKER, CANCELLING_WORKER = "stale-validator", "skipping-validator"


def build(out, version, *sets):
    args = ["--config", "sample", "--output", str(out), "--version", version, "--quiet"]
    for s in sets:
        args += ["--set", s]
    return runner.build("vsr", args)


def examples(release):
    """The examples table's rows, as JSON (a missing reference frame is NaN, never equal to itself)."""
    rows = pq.read_table(os.path.join(release, "parquet", "examples")).to_pylist()
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def vote_rejects(release):
    rows = pq.read_table(os.path.join(release, "rejects")).to_pylist()
    return sorted((os.path.basename(r["file"] or ""), r["line"], r["reason"]) for r in rows if r["stage"] == "votes")


def sample_votes(tasks):
    """The sample's own vote lines that a validator could have given in Label Studio: on a
    task of this build, as that task shows it (or with no fingerprint), with a label."""
    shown = {t["data"]["example_id"]: t["data"][FINGERPRINT] for t in tasks}
    with open(os.path.join(str(ROOT), "samples", "vsr", "votes.jsonl"), encoding="utf-8") as f:
        for line in f:
            try:
                vote = json.loads(line)
            except ValueError:
                continue
            if isinstance(vote, dict) and vote.get("example_id") in shown \
                    and vote.get(FINGERPRINT, shown[vote["example_id"]]) == shown[vote["example_id"]] \
                    and vote.get("label") in (0, 1) and isinstance(vote.get("validator_id"), str):
                yield vote


def test_vsr_validation_round_trips_through_label_studio(tmp_path_factory):
    out = tmp_path_factory.mktemp("vsr-labelstudio")
    release = build(out, "1.0.0")
    folder = os.path.join(release, "crowd", "labelstudio")
    with open(os.path.join(folder, "validation.xml"), encoding="utf-8") as f:
        config = f.read()
    with open(os.path.join(folder, "validation.json"), encoding="utf-8") as f:
        tasks = json.load(f)
    votes = list(sample_votes(tasks))
    assert len(votes) > 20 and len({v["example_id"] for v in votes}) > 10

    with labelstudio_server.LabelStudio(tmp_path_factory.mktemp("labelstudio-data")) as ls:
        project = ls.post("/api/projects", {"title": "VSR validation", "label_config": config})["id"]
        earlier = dict(tasks[0]["data"], caption=tasks[0]["data"]["caption"] + " (an earlier build's caption)")
        earlier[FINGERPRINT] = "0" * 32
        assert ls.post(f"/api/projects/{project}/import", tasks + [{"data": earlier}])["task_count"] == len(tasks) + 1
        listed = ls.get(f"/api/tasks?project={project}&page_size=1000&fields=all")["tasks"]
        task_id = {(t["data"]["example_id"], t["data"][FINGERPRINT]): t["id"] for t in listed}
        users = {}

        def user(worker):
            if worker not in users:
                users[worker] = ls.post("/api/users/", {"email": f"{worker}@workers.example", "username": worker})["id"]
            return users[worker]

        def annotate(task, worker, label, cancelled=False):
            result = [{"from_name": "label", "to_name": "caption", "type": "choices",
                       "value": {"choices": [str(label)]}}]
            ls.post(f"/api/tasks/{task}/annotations/" + ("?was_cancelled=1" if cancelled else ""),
                    {"result": result, "completed_by": user(worker)})

        for vote in votes:   # each on the task its validator saw
            shown = next(t["data"][FINGERPRINT] for t in tasks if t["data"]["example_id"] == vote["example_id"])
            annotate(task_id[vote["example_id"], shown], vote["validator_id"], vote["label"])
        annotate(task_id[earlier["example_id"], earlier[FINGERPRINT]], STALE_WORKER, 1)
        annotate(task_id[earlier["example_id"], tasks[0]["data"][FINGERPRINT]], CANCELLING_WORKER, 1, cancelled=True)
        export = ls.get(f"/api/projects/{project}/export?exportType=JSON", raw=True)

    downloaded = out / "project-1-export.json"
    downloaded.write_bytes(export)
    # the same answers as JSON Lines, each validator named as the export names them
    as_lines = out / "votes.jsonl"
    as_lines.write_text("".join(json.dumps(dict(v, validator_id=str(users[v["validator_id"]]))) + "\n"
                                for v in votes))
    from_lines = build(out, "1.0.1", f"inputs.votes=[{as_lines}]")
    from_export = build(out, "1.0.2", f"inputs.votes=[{downloaded}]")

    assert examples(from_export) == examples(from_lines)
    voters = {w for r in map(json.loads, examples(from_export))
              for w in r["vote_true_validator_id"] + r["vote_false_validator_id"]}
    assert voters and str(users[STALE_WORKER]) not in voters and str(users[CANCELLING_WORKER]) not in voters
    in_export = sorted(reason for name, _, reason in vote_rejects(from_export) if name == downloaded.name)
    assert in_export == sorted(["stale_answer", "rejected_assignment"] +
                               [reason for _, _, reason in vote_rejects(from_lines)])
