"""Hostile values mixed into real builds, one per benchmark (issue 24, part 3), and a
build that yields nothing (part 4).

Each full build reads a small good input with hostile lines added (a lone surrogate in a
published text, an integer beyond 64 bits, a key named twice, NaN, a Latin-1 byte, a
path where a name belongs, a NUL, a BD2BB intention `=HYPERLINK(...)` ...): it must end with exit 0, no traceback, each hostile line
in rejects/ with its reason, file and line, counts reconciled (the release writer checks
them before publishing) and a non-empty release. tests/test_hostile_inputs.py holds the
case-by-case tables; this module proves the same through the runner, end to end.

A build whose main tables hold no row (every line bad, captions that match no image, a
file that is one JSON array) fails with exit 2 and one line saying what was rejected,
and its version stays unused (pipelines/release/write/assemble.py yields_nothing).
"""
from __future__ import annotations

import json
import os
from typing import Dict, List, Sequence, Tuple

import pyarrow.parquet as pq
import pytest

from pipelines import build, cli, registry
from pipelines.config import generating_sample, load_config
from tests.release.release_files import on_building_machine

SURROGATE = "\ud83d"


def _build(benchmark: str, config: str, sets: Sequence[str], out, capsys, version: str = "1.0.0"):
    """(exit code, the error line or "", the release folder or None) of one build run as
    the command line runs it; any traceback fails the test."""
    args = ["--config", config, "--output", str(out), "--version", version, "--quiet", "--no-explorer"]
    for item in sets:
        args += ["--set", item]
    code = cli.run_main(lambda argv: build.build(benchmark, argv), args)
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    release = None
    for root, _, files in os.walk(out):
        if "MANIFEST.json" in files and os.path.basename(root) == version:
            release = root
    return code, "\n".join(errors), release


def _rejects(release: str) -> List[dict]:
    return pq.read_table(os.path.join(release, "rejects")).to_pylist()


def _placed(release: str, path: str) -> Dict[int, Tuple[str, str]]:
    """{line: (reason, detail)} of the rejects naming `path`."""
    return {r["line"]: (r["reason"], r["detail"]) for r in _rejects(release)
            if r["file"] and on_building_machine(release, r["file"]) == path}


def _manifest(release: str) -> dict:
    with open(os.path.join(release, "MANIFEST.json")) as f:
        return json.load(f)


def _write_lines(path, lines: Sequence) -> str:
    with open(path, "wb") as f:
        for line in lines:
            f.write((line if isinstance(line, bytes) else
                     (json.dumps(line) if isinstance(line, dict) else line).encode()) + b"\n")
    return str(path)


def _hostile_lines(good: dict, text: str, number: str) -> List[Tuple[bytes, str, str]]:
    """(line, reason, piece of the detail) for the hostile values every line reader refuses."""
    dumps = lambda record: json.dumps(record).encode()   # noqa: E731
    return [
        (dumps({**good, text: good[text] + SURROGATE}), "bad_encoding", f"field '{text}' holds a lone UTF-16 surrogate"),
        (dumps({**good, number: 2 ** 64}), "bad_field", f"field '{number}': 18446744073709551616 is beyond the 64-bit"),
        (dumps(good)[:-1] + f', "{text}": "again"}}'.encode(), "bad_json", f"key '{text}' appears twice"),
        (dumps(good)[:-1] + b', "score": NaN}', "bad_field", "NaN is not a finite number"),
        (json.dumps({**good, text: "caf\u00e9"}, ensure_ascii=False).encode("latin-1"), "bad_encoding",
         "byte 0xe9 at column"),
        (dumps({**good, text: good[text] + "\x00"}), "control_character",
         f"field '{text}' holds the control character U+0000"),
        (dumps({**good, text: "a dog " * 16_666 + "abcd"}), "too_long",   # issue 45 (NLVR2 took it)
         f"field '{text}' holds 100,000 characters"),
    ]


def _assert_hostile_lines_rejected(release: str, path: str, first_line: int, expected) -> None:
    placed = _placed(release, path)
    for offset, (_, reason, says) in enumerate(expected):
        line = first_line + offset
        assert line in placed, (line, placed)
        assert placed[line][0] == reason and says in placed[line][1], (line, placed[line])


def _formula_cells(release: str) -> List[Tuple[str, str]]:
    """(file, cell) of every cell of every CSV in the release that a spreadsheet would run
    as a formula (OWASP: it begins with =, +, -, @, tab or carriage return; in any form
    NFKC makes one of them, behind invisible format characters: issue 45)."""
    import csv

    from transforms.io.free_text import begins_like_formula
    found = []
    for folder, _, names in os.walk(release):
        for name in (n for n in names if n.endswith(".csv")):
            with open(os.path.join(folder, name), newline="", encoding="utf-8") as f:
                found += [(name, cell) for row in csv.reader(f) for cell in row if begins_like_formula(cell)]
    return found


def _assert_published(release: str, tables: Sequence[str]) -> None:
    manifest = _manifest(release)
    assert manifest["reconciled"] is True
    for table in tables:
        assert manifest["counts"]["tables"][table]["total"] > 0, table


def _assert_unpublished(out, benchmark_dir: str, version: str = "1.0.0") -> None:
    folder = out / benchmark_dir
    assert not (folder / version).exists()
    assert not folder.exists() or not [n for n in os.listdir(folder) if version in n], os.listdir(folder)


# --- NLVR2: released files ---------------------------------------------------------------

def _nlvr2_line(set_id: int, pair: int, sentence: int, label: bool) -> dict:
    text = "True" if label else "False"
    return {"validation": {"w1": text}, "sentence": f"There are {set_id + 2} dogs ({sentence}).",
            "left_url": f"http://img/dev/{set_id}/{pair}/l.jpg", "writer": "w0", "label": text,
            "right_url": f"http://img/dev/{set_id}/{pair}/r.jpg", "synset": "dog", "query": "two dogs",
            "identifier": f"dev-{set_id}-{pair}-{sentence}",
            "extra_validations": {"w2": text, "w3": text, "w4": text, "w5": text}}


def _nlvr2_good() -> List[dict]:
    return [_nlvr2_line(s, p, n, p < 2) for s in range(2) for n in range(2) for p in range(4)]


def test_nlvr2_build_with_hostile_lines(tmp_path, capsys):
    good = _nlvr2_good()
    respelled = json.dumps(good[2], separators=(",", ":"))        # the same values, another spelling
    hostile = _hostile_lines(_nlvr2_line(5, 0, 0, True), "sentence", "directory")
    extra = [(json.dumps({**_nlvr2_line(6, 0, 0, True), "identifier": "dev-6-0-0\n"}).encode(), "bad_identifier",
              "is not split-set-pair-sentence"),
             (json.dumps(_nlvr2_line(7, 0, 0, True)).replace("dev-7-0-0", "dev-99999999999999999999-0-0").encode(),
              "bad_identifier", "set id beyond the 64-bit")]
    lines = [*good[:2], respelled, *good[3:], *(line for line, _, _ in hostile + extra)]
    path = _write_lines(tmp_path / "dev.json", lines)
    code, error, release = _build("nlvr2", "public", [f"inputs.public=[{path}]"], tmp_path / "out", capsys)
    assert code == 0 and release, error
    _assert_published(release, ["examples", "sets", "sentences"])
    assert _manifest(release)["counts"]["tables"]["examples"]["total"] == len(good)
    _assert_hostile_lines_rejected(release, path, len(good) + 1, hostile + extra)
    card = open(os.path.join(release, "DATACARD.md")).read()
    assert "byte for byte except **1 line not written in the public spelling**" in card
    assert "`dev.json:3`" in card
    with open(os.path.join(release, "compat", "dev.json")) as f:
        assert f.read().splitlines()[2] == json.dumps(good[2])   # its values, the public spelling


def test_nlvr2_a_file_that_is_one_json_array_yields_nothing_and_fails(tmp_path, capsys):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(_nlvr2_good()) + "\n")
    code, error, release = _build("nlvr2", "public", [f"inputs.public=[{path}]"], tmp_path / "out", capsys)
    assert code == 2 and release is None
    assert error == ("error: the build yields nothing: parquet/examples, parquet/sets, parquet/sentences "
                     "have no rows (1 rejected: bad_json 1); nothing was published and version 1.0.0 "
                     "is still unused")
    _assert_unpublished(tmp_path / "out", "nlvr2")


# --- VSR: the public raw layout ------------------------------------------------------------

def _vsr_line(n: int, label: int = 1) -> dict:
    image = f"{n:012d}.jpg"
    return {"image": image, "image_link": f"http://images.cocodataset.org/val2017/{image}",
            "caption": "The cat is under the couch.", "label": label, "relation": "under",
            "annotator_id": f"w{n}", "vote_true_validator_id": ["v1", "v2", "v3"] if label else [],
            "vote_false_validator_id": [] if label else ["v1", "v2", "v3"]}


def test_vsr_build_with_hostile_lines_keeps_the_first_of_two_duplicate_lines(tmp_path, capsys):
    good = [_vsr_line(n, n % 2) for n in range(1, 9)]
    # the same example as line 1, later in the file, whose text sorts first (it used to win)
    duplicate = json.dumps(dict(sorted({**good[0], "annotator_id": "w99"}.items())))
    hostile = _hostile_lines(_vsr_line(20), "caption", "annotator_id") + [
        (json.dumps({**_vsr_line(21), "image": "../../etc/passwd.jpg"}).encode(), "bad_field",
         "is not a plain COCO file name")]
    path = _write_lines(tmp_path / "raw.jsonl", [*good, duplicate, *(line for line, _, _ in hostile)])
    code, error, release = _build("vsr", "paper", [f"inputs.annotations=[{path}]"], tmp_path / "out", capsys)
    assert code == 0 and release, error
    _assert_published(release, ["examples"])
    _assert_hostile_lines_rejected(release, path, len(good) + 2, hostile)
    placed = _placed(release, path)
    assert placed[len(good) + 1][0] == "duplicate_example"                 # line 9, not line 1
    annotators = {r["annotator_id"] for r in pq.read_table(os.path.join(release, "parquet", "examples")).to_pylist()}
    assert "w1" in annotators and "w99" not in annotators


def test_vsr_annotations_that_are_all_bad_yield_nothing_and_fail(tmp_path, capsys):
    hostile = _hostile_lines(_vsr_line(1), "caption", "annotator_id")
    path = _write_lines(tmp_path / "raw.jsonl", [line for line, _, _ in hostile])
    code, error, release = _build("vsr", "paper", [f"inputs.annotations=[{path}]"], tmp_path / "out", capsys)
    assert code == 2 and release is None
    assert error.startswith("error: the build yields nothing: parquet/examples has no rows "
                            f"({len(hostile)} rejected: ")
    _assert_unpublished(tmp_path / "out", "vsr")


# --- BD2BB: the sample's tuples with hostile ones --------------------------------------------

@pytest.fixture(scope="module")
def bd2bb_sample(tmp_path_factory):
    from pipelines.bd2bb.sample import make_bd2bb_sample
    return os.path.dirname(str(make_bd2bb_sample(str(tmp_path_factory.mktemp("bd2bb")))))


def _bd2bb_sets(sample: str, tuples: str) -> List[str]:
    return [f"inputs.tuples={tuples}", f"inputs.captions={sample}/captions.json",
            f"inputs.parses={sample}/actions.conllu"]


BD2BB_TUPLE = {"id": "h1", "image": "COCO_train2014_000000100007.jpg", "intention": "want to relax for a while",
               "action": "sit on the bench", "annotator": "w17"}


def test_bd2bb_build_with_hostile_tuples(bd2bb_sample, tmp_path, capsys):
    with open(os.path.join(bd2bb_sample, "tuples.jsonl"), "rb") as f:
        good = f.read().splitlines()
    hostile = _hostile_lines(BD2BB_TUPLE, "intention", "annotator") + [
        (json.dumps({**BD2BB_TUPLE, "image": "../COCO_train2014_000000100007.jpg"}).encode(), "bad_field",
         "is neither a plain COCO file name"),
        # published verbatim in compat/*.csv, so never there (issue 35)
        (json.dumps({**BD2BB_TUPLE, "intention": '=HYPERLINK("http://evil.example","see")'}).encode(),
         "formula_text", "field 'intention' begins with '='"),
        (json.dumps({**BD2BB_TUPLE, "action": "@SUM(1+1)*cmd|' /C calc'!A0"}).encode(),
         "formula_text", "field 'action' begins with '@'"),
        # issue 45: published as they were (fullwidth, and behind a zero-width space)
        (json.dumps({**BD2BB_TUPLE, "intention": "\uff1dSUM(1)"}).encode(),
         "formula_text", "field 'intention' begins with '\uff1d', which a spreadsheet reads as '='"),
        (json.dumps({**BD2BB_TUPLE, "action": "\u200b=SUM(1)"}).encode(),
         "formula_text", "field 'action' begins with '\\u200b=', which a spreadsheet reads as '='")]
    path = _write_lines(tmp_path / "tuples.jsonl", [*good, *(line for line, _, _ in hostile)])
    code, error, release = _build("bd2bb", "sample", _bd2bb_sets(bd2bb_sample, path), tmp_path / "out", capsys)
    assert code == 0 and release, error
    _assert_published(release, ["samples"])
    _assert_hostile_lines_rejected(release, path, len(good) + 1, hostile)
    images = {r["image"] for r in pq.read_table(os.path.join(release, "parquet", "samples")).to_pylist()}
    assert not any("/" in image for image in images)
    assert _formula_cells(release) == []


def test_bd2bb_a_captions_document_with_a_lone_surrogate_stops_before_any_work(bd2bb_sample, tmp_path, capsys):
    captions = tmp_path / "captions.json"
    captions.write_text(json.dumps({"annotations": [{"image_id": 1, "caption": "a dog " + SURROGATE}]}))
    sets = _bd2bb_sets(bd2bb_sample, os.path.join(bd2bb_sample, "tuples.jsonl"))
    sets[1] = f"inputs.captions={captions}"
    code, error, release = _build("bd2bb", "sample", sets, tmp_path / "out", capsys)
    assert code == 2 and release is None
    assert error == (f"error: inputs.captions: {captions}: field 'annotations[0].caption' holds a lone "
                     "UTF-16 surrogate (a dog \\ud83d): not text")


def test_bd2bb_tuples_that_are_all_bad_yield_nothing_and_fail(bd2bb_sample, tmp_path, capsys):
    path = _write_lines(tmp_path / "tuples.jsonl", [line for line, _, _ in _hostile_lines(BD2BB_TUPLE, "intention", "id")])
    code, error, release = _build("bd2bb", "sample", _bd2bb_sets(bd2bb_sample, path), tmp_path / "out", capsys)
    assert code == 2 and release is None
    assert error.startswith("error: the build yields nothing: parquet/samples has no rows (")
    assert "bad_encoding 2, bad_field 2, bad_json 1" in error
    _assert_unpublished(tmp_path / "out", "bd2bb")


# --- FG: the sample with hostile pool lines ----------------------------------------------------

@pytest.fixture(scope="module")
def fg_sample(tmp_path_factory):
    from pipelines.fg.sample import make_fg_sample
    return str(make_fg_sample(str(tmp_path_factory.mktemp("fg"))))


def _fg_sets(sample: str, **inputs) -> List[str]:
    paths = {"captions": f"{sample}/mscoco/captions.json", "images": f"{sample}/mscoco/images",
             "pool": f"{sample}/mscoco/pool.jsonl", **inputs}
    return [f"inputs.{key}={value}" for key, value in paths.items()]


def test_fg_build_with_hostile_pool_lines(fg_sample, tmp_path, capsys):
    pool = os.path.join(fg_sample, "mscoco", "pool.jsonl")
    with open(pool, "rb") as f:
        good = f.read().splitlines()
    first = json.loads(good[0])
    hostile = _hostile_lines({"path": first["path"], "image_id": "hostile"}, "image_id", "n")
    path = _write_lines(os.path.join(os.path.dirname(pool), "hostile_pool.jsonl"),   # paths relative to it
                        [*good, *(line for line, _, _ in hostile)])
    code, error, release = _build("fg", "sample", _fg_sets(fg_sample, pool=path), tmp_path / "out", capsys)
    assert code == 0 and release, error
    _assert_published(release, ["captions", "similar_sets", "pool"])
    _assert_hostile_lines_rejected(release, path, len(good) + 1, hostile)


def test_fg_captions_that_match_no_image_yield_nothing_and_fail(fg_sample, tmp_path, capsys):
    with open(os.path.join(fg_sample, "mscoco", "captions.json")) as f:
        captions = json.load(f)
    other = tmp_path / "captions.json"
    other.write_text(json.dumps({f"COCO_val2014_{900000000 + i:012d}": texts
                                 for i, texts in enumerate(captions.values())}))
    code, error, release = _build("fg", "sample", _fg_sets(fg_sample, captions=other), tmp_path / "out", capsys)
    assert code == 2 and release is None
    assert error.startswith("error: the build yields nothing: parquet/captions, parquet/similar_sets, "
                            "parquet/pool have no rows (")
    assert "no_image" in error
    _assert_unpublished(tmp_path / "out", "mscoco-fg")


def test_fg_a_captions_document_naming_an_image_twice_stops_before_any_work(fg_sample, tmp_path, capsys):
    five = json.dumps(["a dog", "a cat", "a cow", "a pig", "a hen"])
    captions = tmp_path / "captions.json"
    captions.write_text(f'{{"COCO_val2014_000000000001": {five}, "COCO_val2014_000000000001": {five}}}')
    code, error, release = _build("fg", "sample", _fg_sets(fg_sample, captions=captions), tmp_path / "out", capsys)
    assert code == 2 and release is None
    assert error == (f"error: inputs.captions: {captions}: key 'COCO_val2014_000000000001' appears twice "
                     "in one object (which value is meant?)")


# --- ImageCoDe: sample videos with hostile manifest lines --------------------------------------

@pytest.fixture(scope="module")
def imagecode_videos(tmp_path_factory):
    """The good lines of the sample's video manifest, their paths made absolute."""
    benchmark = registry.load("imagecode")
    config = load_config(benchmark.config_path("sample"), [], benchmark.config_type)
    with generating_sample("imagecode"):   # another test worker may be making it
        benchmark.ensure_sample(config)
    folder = os.path.dirname(config.inputs.videos)
    good = []
    with open(config.inputs.videos) as f:
        for text in f:
            try:
                record = json.loads(text)
            except ValueError:
                continue
            path = os.path.join(folder, record.get("path", ""))
            if isinstance(record, dict) and record.get("video_id") and os.path.isfile(path) \
                    and not path.endswith("corrupt.mp4"):
                good.append({**record, "path": path})
    return good[:2]


IMAGECODE_SETS = ["static.images=null", "crowd.descriptions=null", "crowd.retrievals=null"]


def test_imagecode_build_with_hostile_manifest_lines(imagecode_videos, tmp_path, capsys):
    line = {**imagecode_videos[0], "video_id": "hostile"}
    hostile = _hostile_lines(line, "video_id", "n") + [
        (json.dumps({**line, "path": "/dev/zero"}).encode(), "not_a_file", "/dev/zero is not a regular file")]
    path = _write_lines(tmp_path / "videos.jsonl", [*imagecode_videos, *(l for l, _, _ in hostile)])
    code, error, release = _build("imagecode", "sample", [f"inputs.videos={path}", *IMAGECODE_SETS],
                                  tmp_path / "out", capsys)
    assert code == 0 and release, error
    _assert_published(release, ["video_sets"])
    _assert_hostile_lines_rejected(release, path, len(imagecode_videos) + 1, hostile)


def test_imagecode_a_manifest_of_missing_videos_yields_nothing_and_fails(tmp_path, capsys):
    path = _write_lines(tmp_path / "videos.jsonl", [
        {"path": str(tmp_path / f"gone{i}.mp4"), "source": "msr-vtt", "video_id": f"v{i}", "split": "train"}
        for i in range(3)])
    code, error, release = _build("imagecode", "sample", [f"inputs.videos={path}", *IMAGECODE_SETS],
                                  tmp_path / "out", capsys)
    assert code == 2 and release is None
    assert error == ("error: the build yields nothing: parquet/video_sets has no rows (3 rejected: "
                     "path_not_found 3); nothing was published and version 1.0.0 is still unused")
    _assert_unpublished(tmp_path / "out", "imagecode")

