"""Reading released NLVR2 files: every malformed line is a reject naming its file and line
(one hand-made file through the runner hits every reason of the reader), what the paper's
rules say about groups, and the leakage policy."""
import json
import os

import pyarrow.parquet as pq
import pytest

from pipelines import build as build_command
from pipelines.nlvr2 import reasons
from pipelines.nlvr2.compat import public_line
from pipelines.nlvr2.read_public import parse_public_line
from pipelines.nlvr2.records import Example
from transforms.io.lines import SourceLine
from tests.release.release_files import on_building_machine


def row(identifier, label=True, left=None, right=None, sentence="Two dogs.", writer="7",
        extra=None, **more):
    """A valid public line's object for `identifier` (split-set-pair-sentence)."""
    split, set_id, pair, _ = identifier.split("-")
    text = "True" if label else "False"
    out = {"validation": {"11": text}, "sentence": sentence,
           "left_url": left or f"http://img/{split}/{set_id}/{pair}/l.jpg", "writer": writer,
           "label": text, "right_url": right or f"http://img/{split}/{set_id}/{pair}/r.jpg",
           "synset": "dog", "query": "two dogs3", "identifier": identifier,
           "extra_validations": ({"21": text, "22": text, "23": text, "24": text}
                                 if extra is None else extra)}
    out.update(more)
    return out


def group(split, set_id, sentence_id, labels=(True, True, False, False)):
    return [row(f"{split}-{set_id}-{pair}-{sentence_id}", label=label, sentence=f"S{set_id}.{sentence_id}")
            for pair, label in enumerate(labels)]


def write_lines(path, rows):
    with open(path, "wb") as f:
        for r in rows:
            f.write(r if isinstance(r, bytes) else (json.dumps(r) if isinstance(r, dict) else r).encode())
            f.write(b"\n")
    return str(path)


def source(text):
    return SourceLine("f.json", 3, text)


# --- one line at a time ---------------------------------------------------------------------

def bad(obj):
    result = parse_public_line(source(obj if isinstance(obj, str) else json.dumps(obj)))
    assert isinstance(result, tuple), result
    return result[0]


def test_a_valid_line_round_trips_and_keeps_its_origin():
    line = json.dumps(row("dev-3-2-1", label=False))
    example = parse_public_line(source(line))
    assert isinstance(example, Example)
    assert (example.split, example.set_id, example.pair, example.sentence_id) == ("dev", 3, 2, 1)
    assert example.label is False and example.origin == ("f.json", 3)
    assert public_line(example) == line


def test_train_lines_carry_their_directory():
    line = json.dumps(row("train-5-0-0", extra={}, directory=17))
    example = parse_public_line(source(line))
    assert example.directory == 17 and public_line(example) == line


@pytest.mark.parametrize("obj, reason", [
    ("{not json", reasons.BAD_JSON),
    ("[1, 2]", reasons.BAD_JSON),
    ({k: v for k, v in row("dev-0-0-0").items() if k != "query"}, reasons.MISSING_FIELD),
    ({k: v for k, v in row("dev-0-0-0").items() if k != "extra_validations"}, reasons.MISSING_FIELD),
    (row("dev-0-0-0", sentence=""), reasons.BAD_FIELD),
    (row("dev-0-0-0", validation=["11", "True"]), reasons.BAD_FIELD),
    (row("dev-0-0-0", extra=["True"]), reasons.BAD_FIELD),
    (row("dev-0-0-0", comment="x"), reasons.UNKNOWN_KEY),
    (row("dev-0-4-0"), reasons.BAD_IDENTIFIER),
    (row("dev-0-0-2"), reasons.BAD_IDENTIFIER),
    (row("valid-0-0-0"), reasons.BAD_IDENTIFIER),
    (row("dev-00-0-0"), reasons.BAD_IDENTIFIER),
    (row("dev-0-0-0", writer=7), reasons.BAD_WORKER),
    (row("dev-0-0-0", writer=" "), reasons.BAD_WORKER),
    (row("dev-0-0-0", extra={"": "True"}), reasons.BAD_WORKER),
    ({**row("dev-0-0-0"), "label": "true"}, reasons.BAD_LABEL),
    ({**row("dev-0-0-0"), "label": True}, reasons.BAD_LABEL),
    (row("dev-0-0-0", validation={"11": "true"}), reasons.BAD_LABEL),
    (row("dev-0-0-0", extra={"21": "yes"}), reasons.BAD_LABEL),
    (row("dev-0-0-0", validation={"11": "True", "12": "True"}), reasons.LABEL_NOT_VALIDATION),
    (row("dev-0-0-0", validation={}), reasons.LABEL_NOT_VALIDATION),
    (row("dev-0-0-0", validation={"11": "False"}), reasons.LABEL_NOT_VALIDATION),
    (row("train-0-0-0", extra={}), reasons.BAD_DIRECTORY),
    (row("train-0-0-0", extra={}, directory="3"), reasons.BAD_DIRECTORY),
    (row("train-0-0-0", extra={}, directory=True), reasons.BAD_DIRECTORY),
    (row("dev-0-0-0", directory=3), reasons.BAD_DIRECTORY),
])
def test_each_malformed_line_has_its_reason(obj, reason):
    assert bad(obj) == reason


def test_bytes_that_are_not_utf8_are_a_reject():
    assert parse_public_line(SourceLine("f.json", 1, "", "byte 0xff"))[0] == reasons.BAD_ENCODING


# --- whole files through the runner ---------------------------------------------------------

def build(tmp_path, files, *settings, name="out"):
    return build_command.build("nlvr2", ["--config", "public", "--output", str(tmp_path / name),
                                         "--version", "1.0.0", "--set", f"inputs.public=[{','.join(files)}]",
                                         *[a for s in settings for a in ("--set", s)]])


def rejects(release):
    return pq.read_table(os.path.join(release, "rejects")).to_pylist()


def test_every_reader_reason_through_the_runner(tmp_path):
    good = group("dev", 0, 0) + group("dev", 0, 1)
    changed = row("dev-1-0-1", left="http://img/other.jpg")     # its pair shows other URLs in sentence 0
    lines = good + [
        "{not json",                                            # 9
        b"\xff\xfe not utf-8",                                   # 10
        {k: v for k, v in row("dev-2-0-0").items() if k != "query"},
        row("dev-2-0-0", sentence=""),
        row("dev-2-0-0", comment="x"),
        row("dev-2-4-0"),
        row("dev-2-0-0", writer=7),
        {**row("dev-2-0-0"), "label": "yes"},
        row("dev-2-0-0", validation={"11": "False"}),
        row("train-2-0-0", extra={}),
        row("dev-2-0-0", directory=1),
        good[0],                                                # 20: a second dev-0-0-0
        row("dev-1-0-0"), changed,                              # 21, 22
    ]
    path = write_lines(tmp_path / "dev.json", lines)
    release = build(tmp_path, [path])
    found = {(r["reason"], r["line"]) for r in rejects(release)}
    assert found == {
        (reasons.BAD_JSON, 9), (reasons.BAD_ENCODING, 10), (reasons.MISSING_FIELD, 11),
        (reasons.BAD_FIELD, 12), (reasons.UNKNOWN_KEY, 13), (reasons.BAD_IDENTIFIER, 14),
        (reasons.BAD_WORKER, 15), (reasons.BAD_LABEL, 16), (reasons.LABEL_NOT_VALIDATION, 17),
        (reasons.BAD_DIRECTORY, 18), (reasons.BAD_DIRECTORY, 19),
        (reasons.DUPLICATE_IDENTIFIER, 20),
        (reasons.PAIR_URLS_DIFFER, 21), (reasons.PAIR_URLS_DIFFER, 22)}
    assert {on_building_machine(release, r["file"]) for r in rejects(release)} == {path}
    # the good lines come back byte for byte, in their order
    compat = open(os.path.join(release, "compat", "dev.json")).read().splitlines()
    assert compat == [json.dumps(r) for r in good]


def test_several_files_keep_the_order_of_inputs_public(tmp_path):
    first = write_lines(tmp_path / "b.json", group("dev", 1, 0))
    second = write_lines(tmp_path / "a.json", group("dev", 0, 0))
    release = build(tmp_path, [first, second])
    compat = open(os.path.join(release, "compat", "dev.json")).read().splitlines()
    assert compat == [json.dumps(r) for r in group("dev", 1, 0) + group("dev", 0, 0)]


def test_a_group_with_three_true_breaks_the_rule(tmp_path):
    path = write_lines(tmp_path / "dev.json", group("dev", 0, 0, (True, True, True, False))
                       + group("dev", 0, 1))
    reported = build(tmp_path, [path], name="report")
    anomalies = json.load(open(os.path.join(reported, "stats", "anomalies.json")))
    assert {(a["identifier"], a["reason"]) for a in anomalies} == {
        (f"dev-0-{p}-0", reasons.GROUP_LABELS) for p in range(4)}
    assert rejects(reported) == []
    enforced = build(tmp_path, [path], "rules.enforce=true", name="enforce")
    assert sorted((r["item_id"], r["reason"], r["line"]) for r in rejects(enforced)) == [
        (f"dev-0-{p}-0", reasons.GROUP_LABELS, p + 1) for p in range(4)]
    assert len(open(os.path.join(enforced, "compat", "dev.json")).read().splitlines()) == 4


def test_an_image_in_two_splits_is_reported_or_fails_the_build(tmp_path, capsys):
    dev = group("dev", 0, 0)
    test1 = group("test1", 0, 0)
    test1[2]["left_url"] = dev[1]["left_url"]
    files = [write_lines(tmp_path / "dev.json", dev), write_lines(tmp_path / "test1.json", test1)]
    release = build(tmp_path, files, name="report")
    url = {r["kind"]: r for r in json.load(open(os.path.join(release, "stats", "leakage.json")))}["url"]
    assert url["in_several_splits"] == 1 and url["examples"] == [
        {"image": dev[1]["left_url"], "splits": ["dev", "test1"]}]
    code = build_command.build_main("nlvr2", [
        "--config", "public", "--output", str(tmp_path / "forbid"), "--version", "1.0.0",
        "--set", f"inputs.public=[{','.join(files)}]", "--set", "leakage.forbid_shared_images=true"])
    assert code == 2
    assert "leakage.forbid_shared_images" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "forbid" / "nlvr2" / "1.0.0")


def test_a_missing_input_is_a_preflight_error(tmp_path):
    from transforms.core.errors import UserError
    with pytest.raises(UserError, match="inputs.public"):
        build(tmp_path, [str(tmp_path / "missing.json")])
