import json

import pytest

from pipelines import build
from pipelines.config import load_config
from pipelines.imagecode.config import ImageCodeConfig
from pipelines.imagecode.preflight import check_imagecode
from transforms.core.errors import PreflightError

SAMPLE_CONFIG = "pipelines/imagecode/configs/sample.yaml"


@pytest.fixture
def manifest(tmp_path):
    path = tmp_path / "videos.jsonl"
    path.write_text('{"path": "v.mp4", "source": "s", "video_id": "v", "split": "train"}\n')
    return str(path)


def config(manifest, *overrides):
    return load_config(SAMPLE_CONFIG, [f"inputs.videos={manifest}", "static.images=null",
                                       "crowd.descriptions=null", "crowd.retrievals=null",
                                       *overrides], ImageCodeConfig)


@pytest.mark.parametrize("override, message", [
    ("static.images=/nowhere/images.jsonl", "static.images: no such file or folder"),
    ("crowd.descriptions=/nowhere/d.csv", "crowd.descriptions: no such file or folder"),
    ("stats.parser=en_core_web_sm", "stats.parser: spaCy model 'en_core_web_sm' is not installed"),
    ("embed.kind=open_clip", "embed.checkpoint is not set"),
])
def test_missing_inputs_and_models_fail_before_any_work(manifest, override, message):
    with pytest.raises(PreflightError, match=message):
        check_imagecode(config(manifest, override))


def test_a_missing_video_manifest_names_its_key(tmp_path):
    with pytest.raises(PreflightError, match="inputs.videos: no such file"):
        check_imagecode(config(str(tmp_path / "none.jsonl")))


def test_the_sample_config_passes(manifest):
    check_imagecode(config(manifest))


# --- crowd answer files: a file that cannot be read whole stops the build here ----------

# with the task's fingerprint carried through, as a platform export has it
DESCRIBER_HEADER = "set_name,target_index,text,worker,task_fingerprint\n"


def write(path, data: bytes):
    path.write_bytes(data)
    return str(path)


def test_a_describer_csv_without_the_worker_column_stops_the_build(manifest, tmp_path):
    answers = write(tmp_path / "d.csv", b"set_name,target_index,text\nopen-images-1,2,A dog.\n")
    with pytest.raises(PreflightError) as e:
        check_imagecode(config(manifest, f"crowd.descriptions={answers}"))
    assert str(e.value) == (
        f"crowd.descriptions: {answers}:1: the header lacks the column(s) worker "
        "(required: set_name, target_index, text, worker; the header has: set_name, target_index, text)")


def test_the_command_line_says_so_in_one_line_and_exits_2_before_any_work(manifest, tmp_path, capsys):
    answers = write(tmp_path / "d.csv", b"set_name,target_index,text\nopen-images-1,2,A dog.\n")
    out = tmp_path / "out"
    code = build.build_main("imagecode", ["--config", SAMPLE_CONFIG, "--output", str(out), "--version", "1.0.0",
                          "--set", f"inputs.videos={manifest}", "--set", "static.images=null",
                          "--set", f"crowd.descriptions={answers}", "--set", "crowd.retrievals=null"])
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if not line.startswith("progress: ")]   # the build's own, before its preflight failed
    assert code == 2
    assert err == [f"error: crowd.descriptions: {answers}:1: the header lacks the column(s) worker "
                   "(required: set_name, target_index, text, worker; the header has: set_name, "
                   "target_index, text)"]
    assert not out.exists()


def test_latin1_bytes_stop_the_build_naming_file_line_and_byte(manifest, tmp_path):
    answers = write(tmp_path / "d.csv", (DESCRIBER_HEADER + "open-images-1,2,A dog.,w1\n"
                                         "open-images-1,3,Un caf\xe9 noir.,w2\n").encode("latin-1"))
    with pytest.raises(PreflightError) as e:
        check_imagecode(config(manifest, f"crowd.descriptions={answers}"))
    assert str(e.value).startswith(
        f"crowd.descriptions: {answers}:3: byte 0xe9 at column 23 is not UTF-8; answer files must be UTF-8")


def with_descriptions(tmp_path, *overrides):
    """Retrievals need the describer round they validate."""
    answers = write(tmp_path / "d.csv", (DESCRIBER_HEADER + "s,1,A dog.,w,f1\n").encode())
    return (f"crowd.descriptions={answers}", *overrides)


def test_a_retriever_jsonl_where_no_line_has_a_field_stops_the_build(manifest, tmp_path):
    rows = [{"set_name": "s", "description_id": f"s#1#w{i}", "worker": "b1"} for i in range(3)]
    answers = write(tmp_path / "r.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    with pytest.raises(PreflightError) as e:
        check_imagecode(config(manifest, *with_descriptions(tmp_path, f"crowd.retrievals={answers}")))
    assert str(e.value) == (f"crowd.retrievals: {answers}: no line has the field(s) guessed_index "
                            "(required: set_name, description_id, worker, guessed_index)")


def test_a_field_missing_on_some_lines_only_is_left_to_the_rows(manifest, tmp_path):
    # those rows are rejected one by one (missing_field); the file as a whole is fine
    rows = ['{"set_name": "s", "description_id": "s#1#w", "worker": "b1"}',
            'not json at all',
            '{"set_name": "s", "description_id": "s#1#w", "worker": "b2", "guessed_index": 1, '
            '"task_fingerprint": "f2"}']
    answers = write(tmp_path / "r.jsonl", ("\n".join(rows) + "\n").encode())
    check_imagecode(config(manifest, *with_descriptions(tmp_path, f"crowd.retrievals={answers}")))


@pytest.mark.parametrize("name, data, message", [
    ("d.csv", b"", "{path} is empty: it has no header row (set_name, target_index, text, worker)"),
    ("d.csv", b"\n  \n", "{path} is empty: it has no header row (set_name, target_index, text, worker)"),
    ("d.csv", DESCRIBER_HEADER.encode(), "{path}: no answer rows below the header"),
    ("d.jsonl", b"", "{path}: no answer rows"),
    ("d.csv", b'set_name,"target_index,text,worker\n', "{path}:1: the header row cannot be read as CSV"),
    ("d.csv", b"set_name,target_index,text,worker,worker\ns,1,t,w,w\n",
     "{path}:1: the header names the column(s) worker more than once"),
    ("d.txt", b"x\n", "crowd output must end in .csv, .jsonl or .json: {path}"),
])
def test_empty_unreadable_or_ambiguous_files_stop_the_build(manifest, tmp_path, name, data, message):
    answers = write(tmp_path / name, data)
    with pytest.raises(PreflightError) as e:
        check_imagecode(config(manifest, f"crowd.descriptions={answers}"))
    assert str(e.value).startswith("crowd.descriptions: " + message.format(path=answers))


def test_a_glob_is_checked_file_by_file(manifest, tmp_path):
    (tmp_path / "answers").mkdir()
    write(tmp_path / "answers" / "part-0.csv", (DESCRIBER_HEADER + "s,1,A dog.,w1,f1\n").encode())
    write(tmp_path / "answers" / "part-1.csv", DESCRIBER_HEADER.encode())   # an empty shard is fine
    check_imagecode(config(manifest, f"crowd.descriptions={tmp_path}/answers/*.csv"))
    bad = write(tmp_path / "answers" / "part-2.csv", b"set_name,text,worker\ns,A dog.,w1\n")
    with pytest.raises(PreflightError, match=f"{bad}:1: the header lacks the column.s. target_index"):
        check_imagecode(config(manifest, f"crowd.descriptions={tmp_path}/answers/*.csv"))


def test_a_glob_matching_nothing_or_a_folder_stops_the_build(manifest, tmp_path):
    with pytest.raises(PreflightError, match=f"crowd.descriptions: no file matches {tmp_path}/x/\\*.csv"):
        check_imagecode(config(manifest, f"crowd.descriptions={tmp_path}/x/*.csv"))
    (tmp_path / "answers.csv").mkdir()
    with pytest.raises(PreflightError, match="answers.csv is a folder: give a file or a glob"):
        check_imagecode(config(manifest, f"crowd.descriptions={tmp_path}/answers.csv"))


# --- answers bound to what their worker saw (pipelines/imagecode/README.md, "Answers are bound to what the worker saw")

def test_answers_that_cannot_show_what_their_worker_saw_stop_the_build(manifest, tmp_path):
    """No task_fingerprint column and no crowd.tasks_release: every row could only be a
    stale_answer, so the file stops the build, naming both keys."""
    answers = write(tmp_path / "d.csv", b"set_name,target_index,text,worker\ns,1,A dog.,w1\n")
    with pytest.raises(PreflightError) as e:
        check_imagecode(config(manifest, f"crowd.descriptions={answers}"))
    assert str(e.value) == (
        f"crowd.descriptions: {answers} has no task_fingerprint column and "
        "crowd.tasks_release.descriptions is not set, so nothing shows which tasks its workers "
        "saw: name the release whose crowd/describe_tasks.jsonl they answered "
        "(--set crowd.tasks_release.descriptions=<release folder>)")
    with pytest.raises(PreflightError, match=(
            f"^crowd.tasks_release.descriptions: {tmp_path} is not a release folder .no MANIFEST.json.")):
        check_imagecode(config(manifest, f"crowd.descriptions={answers}",
                               f"crowd.tasks_release.descriptions={tmp_path}"))
    release = tmp_path / "imagecode" / "1.0.0"
    (release / "crowd").mkdir(parents=True)
    (release / "MANIFEST.json").write_text('{"benchmark": "imagecode"}')
    (release / "crowd" / "describe_tasks.jsonl").write_text('{"task_id": "s#1", "task_fingerprint": "f1"}\n')
    check_imagecode(config(manifest, f"crowd.descriptions={answers}",
                           f"crowd.tasks_release.descriptions={release}"))
