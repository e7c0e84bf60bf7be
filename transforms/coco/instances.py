"""COCO instances files, streamed (any benchmark that samples COCO images).

`iter_coco_file` walks an instances JSON file (train 2017 is ~450 MB) with
json.JSONDecoder.raw_decode over 1 MiB chunks, one array element at a time, so a worker
holds one element, never the file. Each file is read by one worker (the reads of several
files run in parallel); an image becomes a CocoImage, an annotation a small tuple
(image_id, category_id, area, iscrowd). An entry that lacks what it needs, an image
whose file_name is not a plain COCO name (schemas.coco.FILE_NAME) or whose coco_url is
not http(s) or names another file, an entry holding NaN or an infinity, and one that
breaks the rules of transforms/io/strict_json.py (a key named twice, a lone UTF-16
surrogate, an integer beyond 64 bits) is bad_coco_record. A file that is not COCO JSON (not an object, broken
JSON, truncated, a top-level key twice) is dropped as a whole
(`malformed_coco`): its entries are emitted only after one streaming pass has read it
to its end, so a half-read file never feeds a sample.
"""
from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass
import pickle
import tempfile
from typing import Iterator, List, NamedTuple, Optional, Tuple, Union

import apache_beam as beam

from schemas import reasons
from schemas.coco import CocoImage, is_file_name, is_link, link_file_name
from schemas.tfexample import INT64_MAX, INT64_MIN
from transforms.core.stage import MAIN, REJECTS, KeepFirst, StageFn, stage_pardo
from transforms.io import strict_json
from transforms.io.files import open_regular_file

CHUNK = 1 << 20
MAX_ELEMENT = 64 << 20   # characters; no COCO entry comes near it
STAGE = "coco"
IMAGE, ANNOTATION, BROKEN = "image", "annotation", "broken"
log = logging.getLogger("transforms.coco.instances")


class MalformedCoco(ValueError):
    """The file is not a COCO instances JSON object."""


def _elements(f, buffer: str, pos: int, decoder) -> Iterator:
    """Yields the elements of the JSON array starting at buffer[pos] == '[', reading more
    chunks as needed; finally yields ('__end__', buffer, pos) just after the ']'."""
    pos += 1
    first = True
    while True:
        buffer, pos = _skip_ws(f, buffer, pos)
        if buffer[pos] == "]":
            yield ("__end__", buffer, pos + 1)
            return
        if not first:
            if buffer[pos] != ",":
                raise MalformedCoco(f"expected ',' or ']' at offset {pos}")
            buffer, pos = _skip_ws(f, buffer, pos + 1)
        first = False
        while True:
            try:
                value, end = _decode_element(decoder, buffer, pos)
                # a number cut at the chunk end would decode short: make sure a delimiter follows
                if end >= len(buffer):
                    raise json.JSONDecodeError("at chunk end", buffer, end)
                break
            except json.JSONDecodeError:
                buffer, pos = _refill(f, buffer, pos)
        yield value
        pos = end   # no slicing per element: the buffer is compacted only when refilled


@dataclass(frozen=True)
class Refused:
    """An element that breaks transforms/io/strict_json.py's rules (a key twice, a lone
    surrogate, an integer beyond 64 bits): why, and the value as json reads it."""
    detail: str
    value: object


_LENIENT = json.JSONDecoder()


def _decode_element(decoder, buffer: str, pos: int):
    """(element or Refused, end). A JSONDecodeError means the text is cut short."""
    try:
        value, end = decoder.raw_decode(buffer, pos)
    except strict_json.DuplicateKey as e:
        value, end = _LENIENT.raw_decode(buffer, pos)   # where it ends; the last value of the key
        return Refused(e.detail, value), end
    problem = strict_json.value_problem(value, buffer, pos, end)
    return (Refused(problem[1], value) if problem else value), end


def _refill(f, buffer: str, pos: int) -> Tuple[str, int]:
    """Drop what was consumed and append a chunk; an element that never ends (broken JSON)
    stops at MAX_ELEMENT instead of reading the rest of the file into memory."""
    more = f.read(CHUNK)
    if not more or len(buffer) - pos > MAX_ELEMENT:
        raise MalformedCoco(f"truncated or broken JSON near character {pos}")
    return buffer[pos:] + more, 0


def _skip_ws(f, buffer: str, pos: int) -> Tuple[str, int]:
    while True:
        while pos < len(buffer) and buffer[pos] in " \t\r\n":
            pos += 1
        if pos < len(buffer):
            return buffer, pos
        more = f.read(CHUNK)
        if not more:
            raise MalformedCoco("unexpected end of file")
        buffer, pos = more, 0


def iter_coco_file(path: str) -> Iterator[Tuple[str, object]]:
    """(IMAGE, dict) and (ANNOTATION, dict) for each entry of `path`; other top-level keys
    are decoded and discarded one value at a time. Raises MalformedCoco."""
    import codecs
    decoder = strict_json.decoder(finite_numbers=False)   # NaN: named per field by _non_finite
    with open_regular_file(path) as raw:
        f = codecs.getreader("utf-8")(raw)
        buffer, pos = _skip_ws(f, "", 0)
        if buffer[pos] != "{":
            raise MalformedCoco("the top level is not a JSON object")
        pos += 1
        first, keys = True, set()
        while True:
            buffer, pos = _skip_ws(f, buffer, pos)
            if buffer[pos] == "}":
                return
            if not first:
                if buffer[pos] != ",":
                    raise MalformedCoco(f"expected ',' or '}}' at offset {pos}")
                buffer, pos = _skip_ws(f, buffer, pos + 1)
            first = False
            key, buffer, pos = _decode_value(f, buffer, pos, _LENIENT)
            buffer, pos = _skip_ws(f, buffer, pos)
            if not isinstance(key, str) or buffer[pos] != ":":
                raise MalformedCoco("expected a key and ':'")
            if key in keys:   # "images" twice: which list is meant?
                raise MalformedCoco(f"the top-level key {strict_json.printable(key)!r} appears twice")
            keys.add(key)
            buffer, pos = _skip_ws(f, buffer, pos + 1)
            kind = {"images": IMAGE, "annotations": ANNOTATION}.get(key)
            if kind and buffer[pos] == "[":
                for value in _elements(f, buffer, pos, decoder):
                    if isinstance(value, tuple) and value and value[0] == "__end__":
                        _, buffer, pos = value
                        break
                    yield kind, value
            elif kind:
                raise MalformedCoco(f"{key!r} is not a list")
            else:
                _, buffer, pos = _decode_value(f, buffer, pos, _LENIENT)   # skipped whole


def _decode_value(f, buffer: str, pos: int, decoder):
    while True:
        try:
            value, end = decoder.raw_decode(buffer, pos)
            if end < len(buffer):
                return value, buffer, end
        except json.JSONDecodeError:
            pass
        try:
            buffer, pos = _refill(f, buffer, pos)
        except MalformedCoco:
            try:   # the last value of the file may end exactly at its end
                value, end = decoder.raw_decode(buffer, pos)
                return value, buffer, end
            except json.JSONDecodeError:
                raise MalformedCoco(f"truncated or broken JSON near character {pos}") from None


def source_of(path: str, coco_url: str) -> str:
    """train2017 / val2017: the folder of an image URL that ends in the file name, else
    the instances file's name (instances_val2014: the first 2014 release linked
    http://mscoco.org/images/<id>, whose folder is no source)."""
    if coco_url and is_file_name(link_file_name(coco_url)) and coco_url.count("/") >= 3:
        return coco_url.rstrip("/").split("/")[-2]
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem.split("instances_", 1)[-1]


def _non_finite(entry: dict) -> List[str]:
    """Fields of an entry holding NaN or an infinity (Python's json reads NaN, Infinity
    and 1e999): its top-level numbers and its bbox. Polygons are never read, so never
    checked."""
    def bad(value) -> bool:
        return isinstance(value, float) and not math.isfinite(value)
    found = [key for key, value in entry.items() if bad(value)]
    bbox = entry.get("bbox")
    if isinstance(bbox, list) and any(bad(v) for v in bbox):
        found.append("bbox")
    return sorted(found)


def _image(entry, path: str) -> Union[CocoImage, str]:
    """A CocoImage, or what is wrong with the entry (its bad_coco_record detail)."""
    if isinstance(entry, Refused):
        return entry.detail
    if not isinstance(entry, dict):
        return "an images entry must be an object"
    image_id, file_name = entry.get("id"), entry.get("file_name")
    if not isinstance(image_id, int) or isinstance(image_id, bool) or not isinstance(file_name, str):
        return "needs an integer id and a string file_name"
    if not is_file_name(file_name):
        # It becomes a released image name and, for a user, a path: only a plain name.
        return f"file_name {file_name[:100]!r} is not a plain COCO file name"
    url = entry.get("coco_url") if isinstance(entry.get("coco_url"), str) else ""
    if url and not is_link(url):
        return f"coco_url {url[:100]!r} is not an http(s) link"
    other = _other_image_linked(url, file_name, image_id) if url else None
    if other:   # a sample publishes both: labelled on one picture, linked to another
        return f"coco_url {url[:100]!r} names {other}"
    non_finite = _non_finite(entry)
    if non_finite:
        return f"not a finite number: {', '.join(non_finite)}"
    return CocoImage(image_id, file_name, url, source_of(path, url))


def _other_image_linked(url: str, file_name: str, image_id: int) -> Optional[str]:
    """What a coco_url names when that is not this entry's image, else None. Links of
    2017 and of today's 2014 files end in the file name; the first 2014 release linked
    http://mscoco.org/images/<id>. Any other link names no image to compare."""
    last = link_file_name(url)
    if is_file_name(last) and last != file_name:
        return f"another file than file_name {file_name!r}"
    if last.isascii() and last.isdigit() and int(last) != image_id:
        return f"image {last}, not this entry's id {image_id}"
    return None


def _valid_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _broken_concept(entry) -> Optional[Tuple[int, int]]:
    """(image_id, category_id) of a bad annotation entry whose image and category are
    still readable: that concept cannot be checked in that image (its instance count or
    area is unknown), so it must not be eligible there."""
    if isinstance(entry, Refused):
        entry = entry.value
    if (isinstance(entry, dict) and _valid_int(entry.get("image_id")) and _valid_int(entry.get("category_id"))
            and all(INT64_MIN <= entry[k] <= INT64_MAX for k in ("image_id", "category_id"))):
        return entry["image_id"], entry["category_id"]
    return None


def _annotation(entry) -> Union[Tuple[int, int, float, int], str]:
    """(image_id, category_id, area, iscrowd), or what is wrong with the entry."""
    if isinstance(entry, Refused):
        return entry.detail
    if not isinstance(entry, dict):
        return "an annotations entry must be an object"
    values = [entry.get(k) for k in ("image_id", "category_id", "area")]
    if (not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            or not isinstance(values[0], int) or not isinstance(values[1], int)):
        return "needs integer image_id and category_id and a numeric area"
    non_finite = _non_finite(entry)
    if non_finite:   # a NaN area passed `area < min_area` as not small
        return f"not a finite number: {', '.join(non_finite)}"
    return values[0], values[1], float(values[2]), int(bool(entry.get("iscrowd", 0)))


class ReadCoco(beam.PTransform):
    """Instances files -> {"images": CocoImage, "annotations": (image_id, category_id,
    area, iscrowd), "broken": (image_id, category_id) of annotation entries rejected as
    bad_coco_record whose image and category are readable, REJECTS: file / record rejects
    (stage coco)}.

    `paths` are concrete files (the pipeline expands patterns once, before
    the run). A file that cannot be opened is an error, never a malformed_coco reject."""

    def __init__(self, paths: List[str]):
        super().__init__()
        self._paths = list(paths)

    def expand(self, pbegin):
        read = (pbegin | "Files" >> beam.Create(self._paths)
                | "Spread files" >> beam.Reshuffle()
                | "Stream entries" >> stage_pardo(_StreamCoco(), outputs=(ANNOTATION, BROKEN)))
        # the same image id in two files (train and val both list it): the first by
        # (source, file name) is kept, the others are duplicate_coco_image
        unique = read[MAIN] | "One per id" >> KeepFirst(
            STAGE, IMAGE, key=lambda image: image.image_id,
            order=lambda image: (image.source, image.file_name), why=_same_id)
        return {"images": unique[MAIN], "annotations": read[ANNOTATION], "broken": read[BROKEN],
                REJECTS: (read[REJECTS], unique[REJECTS]) | "COCO rejects" >> beam.Flatten()}


class _StreamCoco(StageFn):
    """One file: counted at level file, its entries at level image or annotation (in,
    rejected; annotations out here, images out once unique by id).

    The file is parsed once. Each entry's verdict (a record, or what is wrong with it) is
    spooled to a local temporary file as it is read, and the verdicts are emitted only
    once the whole file has parsed, so a broken file still emits nothing and the worker
    holds one chunk of verdicts, never the file (parsing it twice, to validate and then
    to emit, was 18% of a VSR build's CPU)."""
    stage, level = STAGE, "file"
    counts_out = False

    def judge(self, path: str):
        with tempfile.TemporaryFile() as spool:
            try:
                _spool_verdicts(path, spool)
            except FileNotFoundError:
                raise    # expand_inputs found it: a missing file is an error, not a malformed one
            except (MalformedCoco, UnicodeDecodeError) as e:
                # A decode error's position counts from the start of a 1 MiB chunk, not the
                # file: name the byte instead of a position that would mislead.
                detail = (f"not UTF-8: byte 0x{e.object[e.start]:02x} cannot be decoded"
                          if isinstance(e, UnicodeDecodeError) else str(e)[:300])
                yield self.reject(reasons.MALFORMED_COCO, path, file=path, detail=detail)
                return
            self.counts.count_out(level="file")
            spool.seek(0)
            for n, (kind, record) in enumerate(_replay(spool)):
                self.counts.seen(level=kind)
                if isinstance(record, _Bad):
                    yield self.reject(reasons.BAD_COCO_RECORD, f"{path}#{kind}{n}", level=kind,
                                      detail=record.detail)
                    if record.broken is not None:   # a marker, not a record: counted above as rejected
                        yield beam.pvalue.TaggedOutput(BROKEN, record.broken)
                elif kind == IMAGE:
                    yield record
                else:
                    self.counts.count_out(level=kind)
                    yield beam.pvalue.TaggedOutput(ANNOTATION, record)


class _Bad(NamedTuple):
    """A bad entry's verdict: its bad_coco_record detail and, for an annotation whose image
    and category are readable, that (image_id, category_id)."""
    detail: str
    broken: Optional[Tuple[int, int]]


_SPOOL_CHUNK = 10_000   # verdicts pickled together


def _spool_verdicts(path: str, spool) -> None:
    """Every entry of `path` as (kind, record or _Bad), pickled into `spool` in chunks.
    Raises MalformedCoco (or UnicodeDecodeError) when the file is not COCO JSON."""
    chunk = []
    for kind, entry in iter_coco_file(path):
        record = _image(entry, path) if kind == IMAGE else _annotation(entry)
        if isinstance(record, str):
            shown = entry.value if isinstance(entry, Refused) else entry
            record = _Bad(f"{record}: {json.dumps(shown)[:200]}",
                          _broken_concept(entry) if kind == ANNOTATION else None)
        chunk.append((kind, record))
        if len(chunk) == _SPOOL_CHUNK:
            pickle.dump(chunk, spool, protocol=pickle.HIGHEST_PROTOCOL)
            chunk = []
    if chunk:
        pickle.dump(chunk, spool, protocol=pickle.HIGHEST_PROTOCOL)


def _replay(spool) -> Iterator[Tuple[str, object]]:
    while True:
        try:
            chunk = pickle.load(spool)
        except EOFError:
            return
        yield from chunk


def _same_id(image: CocoImage, kept: CocoImage) -> dict:
    return dict(reason=reasons.DUPLICATE_COCO_IMAGE, item_id=str(image.image_id), source=image.source,
                detail=f"{image.file_name}: id already used by {kept.file_name} ({kept.source})")
