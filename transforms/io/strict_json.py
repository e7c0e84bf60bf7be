"""JSON as every reader decodes it: one set of rules for a JSON Lines line
(transforms/io/lines.py), a whole JSON document (`load_document`) and an element of a
streamed one (transforms/coco/instances.py).

Python's json module accepts values that no release can hold or that change silently on
the way. Each of these once crashed a build or published a wrong value, so each is a
problem named here, with the field it sits in:

  a lone UTF-16 surrogate ("\\ud83d" is legal JSON; Python keeps it in the str and the
  first UTF-8 encode - a Beam coder, Parquet, TFRecord - kills the build)   bad_encoding
  an object naming a key twice (json keeps the last value without a word)  bad_json
  a control character escaped in a string ("\\u0000"; a raw one is not JSON:
  bad_json), transforms/io/free_text.py                                    control_character
  a string of more than MAX_TEXT_CHARS characters (free_text.py)           too_long
  an integer beyond the 64-bit range of an int64 column or feature           bad_field
  NaN, Infinity, -Infinity, or a number beyond float range such as 1e999
  (not JSON at all: RFC 8259 has no such numbers; Python reads them)        bad_field
  nesting deeper than the interpreter's recursion, an integer of more than
  4,300 digits                                                             bad_json
  a byte order mark after the start (files joined with `cat`): json saw an
  unexpected character there                                               bad_encoding

    value = loads(text)                        # raises JsonProblem(reason, detail)
    problem = value_problem(value, text)       # (reason, detail) or None, for a value
                                               # decoded elsewhere with `decoder()`

Details never repeat a bad character itself (a detail is published too): they escape
it, as `printable` does.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Iterator, List, Optional, Tuple

from schemas import reasons
from schemas.tfexample import INT64_MAX, INT64_MIN
from transforms.io.files import open_regular_file
from transforms.io.free_text import CONTROL_ESCAPE, MAX_TEXT_CHARS, text_problem

Problem = Tuple[str, str]   # (reason code, detail)

# What may hide a lone surrogate or a big integer in the raw text: a \uD800-\uDFFF
# escape, a run of 19+ digits (2**63 has 19). Only a line that holds one is walked.
_SUSPECT = re.compile(r"\\u[dD][89a-fA-F]|\d{19}|" + CONTROL_ESCAPE)
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonProblem(ValueError):
    """A JSON text a reader must refuse: `reason` (a code of schemas.reasons) and
    `detail`, one line naming the field or key."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail

    @property
    def problem(self) -> Problem:
        return self.reason, self.detail


class DuplicateKey(JsonProblem):
    """An object that names a key twice. Not a JSONDecodeError: a streaming reader that
    retries a decode on more input must not take it for text cut short."""


def printable(text: str, limit: int = 100) -> str:
    """`text` cut to `limit` characters with lone surrogates and control characters
    escaped, as a reject detail may hold it."""
    shown = text[:limit].encode("utf-8", "backslashreplace").decode("utf-8")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in shown) + ("..." if len(text) > limit else "")


def _object(pairs: List[Tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(reasons.BAD_JSON, f"key {printable(key)!r} appears twice in "
                                                     "one object (which value is meant?)")
            seen.add(key)
    return obj


def _refuse_constant(name: str):
    raise JsonProblem(reasons.BAD_FIELD, f"{name} is not a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonProblem(reasons.BAD_FIELD, f"{text[:40]} is not a finite number")
    return value


def decoder(finite_numbers: bool = True) -> json.JSONDecoder:
    """A decoder with these rules' hooks: a key named twice raises DuplicateKey, and with
    `finite_numbers` NaN or Infinity a JsonProblem (a reader that names the field of a
    non-finite number itself turns that off). `value_problem` does the rest on what it
    decodes."""
    if not finite_numbers:
        return json.JSONDecoder(object_pairs_hook=_object)
    return json.JSONDecoder(object_pairs_hook=_object, parse_constant=_refuse_constant,
                            parse_float=_finite_float)


_DECODER = decoder()


def loads(text: str) -> Any:
    """`text` decoded under every rule above; raises JsonProblem naming what is wrong."""
    try:
        value = _DECODER.decode(text)
    except JsonProblem:
        raise
    except json.JSONDecodeError as e:
        raise _decode_problem(text, e) from None
    except RecursionError:
        raise JsonProblem(reasons.BAD_JSON, "not JSON: nested too deeply") from None
    except ValueError as e:   # e.g. an integer of more than 4,300 digits
        raise JsonProblem(reasons.BAD_JSON, f"not JSON: {str(e)[:200]}") from None
    problem = value_problem(value, text)
    if problem:
        raise JsonProblem(*problem)
    return value


def _decode_problem(text: str, error: json.JSONDecodeError) -> JsonProblem:
    """What json's error means, placed by line and column where the text has lines (a
    whole document: the column alone does not find a trailing comma in 5 MB). A byte
    order mark where the text does not start (files joined with `cat`, each with one) is
    said to be one: json calls it only an unexpected character."""
    place = f"line {error.lineno} column {error.colno}" if "\n" in text else f"column {error.colno}"
    if text[error.pos:error.pos + 1] == "\ufeff":
        return JsonProblem(reasons.BAD_ENCODING, byte_order_mark_detail(place))
    return JsonProblem(reasons.BAD_JSON, f"not JSON: {error.msg} at {place}")


def byte_order_mark_detail(place: str) -> str:
    """What a byte order mark after a file's start is (every reader says it alike)."""
    return (f"a byte order mark (U+FEFF) at {place}: only a file's first bytes may hold one "
            "(files joined with cat? remove the marks of all but the first)")


def value_problem(value: Any, text: Optional[str] = None, start: int = 0,
                  end: Optional[int] = None) -> Optional[Problem]:
    """(reason, detail) for the first string holding a lone surrogate or a control
    character or too long (anywhere, keys too) or integer beyond int64 in `value`; None
    when there is none. With the `text` it was decoded from (text[start:end]), a value
    whose text cannot hold one is not walked."""
    if text is not None:
        end = len(text) if end is None else end
        if end - start <= MAX_TEXT_CHARS and not _SUSPECT.search(text, start, end):
            return None
    for path, item in _walk(value):
        if isinstance(item, str) and _SURROGATE.search(item):
            return reasons.BAD_ENCODING, (f"{_where(path)} holds a lone UTF-16 surrogate "
                                          f"({printable(item, 60)}): not text")
        if isinstance(item, str):
            problem = text_problem(_where(path), item)
            if problem:
                return problem
        if isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
            return reasons.BAD_FIELD, (f"{_where(path)}: {str(item)[:40]} is beyond the 64-bit "
                                       "integer range a release holds")
    return None


def _walk(value: Any) -> Iterator[Tuple[tuple, Any]]:
    """(path, item) for every value, key and element, depth first, without recursion
    (a value may nest as deep as the decoder allowed)."""
    stack: List[Tuple[tuple, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        yield path, item
        if isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                yield path + (key,), key
                stack.append((path + (key,), child))
        elif isinstance(item, list):
            stack.extend((path + (i,), child) for i, child in reversed(list(enumerate(item))))


def _where(path: tuple) -> str:
    """`field 'sentence'`, `field 'validation.w1'`, `field 'similar[3]'`; `the value`
    for a top-level scalar."""
    if not path:
        return "the value"
    shown = ""
    for part in path:
        shown += f"[{part}]" if isinstance(part, int) else (("." if shown else "") + printable(part, 60))
    return f"field '{shown}'"


def load_document(path: str) -> Any:
    """A whole JSON document (a COCO captions file, FG's captions) under these rules: one
    read of the stored bytes (never decompressed), UTF-8 (a BOM is dropped, as the line
    reader drops it). Raises JsonProblem whose detail names the file (and the byte where
    the bytes are not UTF-8)."""
    with open_regular_file(path) as f:
        raw = f.read()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JsonProblem(reasons.BAD_ENCODING, f"{path}: byte 0x{raw[e.start]:02x} at offset "
                                                f"{e.start} is not UTF-8") from None
    try:
        return loads(text)
    except JsonProblem as e:
        raise type(e)(e.reason, f"{path}: {e.detail}") from None
