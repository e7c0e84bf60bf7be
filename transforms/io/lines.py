"""Reading text inputs line by line with their file and line number (every benchmark).

Beam's ReadFromText splits files for speed but forgets where a line came from, decodes
with replacement characters and stops the whole build at the first byte that is not
UTF-8. A data engineer needs the opposite: a bad line becomes a reject that says
`videos.jsonl:43`, every other line goes on, and no U+FFFD is ever published.

    lines = p | ReadNumberedLines(["a.jsonl", "more/*.jsonl"])   # SourceLine per line
    record = parse_json_object(line, required_fields)          # dict or (reason, detail)

One worker reads one file (line numbers need a sequential read); a Reshuffle then spreads
the lines, so everything after reading runs on every worker.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Sequence, Tuple, Union

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas import reasons
from transforms.io import strict_json
from transforms.io.files import open_regular_file
from transforms.io.paths import special_file_kind

_BOM = b"\xef\xbb\xbf"
# The error of a line that starts with a byte order mark when it is not the file's first
MISPLACED_BOM = strict_json.byte_order_mark_detail("column 1")


@dataclass(frozen=True)
class SourceLine:
    """One non-blank line of an input file. `error` is set (and `text` empty) when the
    line's bytes are not UTF-8: a line-level problem that the caller rejects. `rank` is
    the place of the pattern that named its file among those read (ReadNumberedLines)."""
    path: str
    number: int   # 1-based
    text: str
    error: Optional[str] = None
    rank: int = 0

    @property
    def where(self) -> str:
        return f"{self.path}:{self.number}"

    @property
    def place(self) -> Tuple[int, str, int]:
        """Where the line stands in the inputs: the order "the first line" means (its
        file's pattern as listed, its file's path, its number), never its content."""
        return self.rank, self.path, self.number


def without_bom(number: int, raw: bytes) -> Tuple[bytes, Optional[str]]:
    """A line's bytes without a byte order mark, and the problem of one that starts a
    later line than the first (files joined with `cat`, each with its mark): a BOM
    there would stick, invisible, to the line's first field or word."""
    if not raw.startswith(_BOM):
        return raw, None
    return raw[len(_BOM):], None if number == 1 else MISPLACED_BOM


def iter_numbered_lines(path: str, stream, rank: int = 0) -> Iterator[SourceLine]:
    """SourceLine per non-blank line of a binary stream (the file's BOM is dropped; a BOM
    starting a later line makes that line's `error`)."""
    for number, raw in enumerate(stream, start=1):
        raw, bom = without_bom(number, raw)
        if bom:
            yield SourceLine(path, number, "", bom, rank)
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            yield SourceLine(path, number, "", f"byte 0x{raw[e.start]:02x} at column "
                                               f"{e.start + 1} is not UTF-8", rank)
            continue
        text = text.rstrip("\r\n")
        if text.strip():  # blank lines are layout, not items
            yield SourceLine(path, number, text, rank=rank)


def read_numbered_lines(path: str) -> Iterator[SourceLine]:
    """Every SourceLine of one file on any Beam filesystem (driver or worker), read as
    stored; a FIFO or device raises NotARegularFile instead of being read."""
    with open_regular_file(path) as raw:
        yield from iter_numbered_lines(path, raw)


class ReadNumberedLines(beam.PTransform):
    """file paths or glob patterns -> SourceLine per non-blank line.

    A pattern that matches nothing is the caller's preflight error, not ours: this reads
    what there is, so a test can build an empty input."""

    def __init__(self, patterns: Union[str, Sequence[str]]):
        super().__init__()
        self._patterns = [patterns] if isinstance(patterns, str) else list(patterns)

    def expand(self, pbegin):
        patterns = list(enumerate(self._patterns))

        def files(ranked_pattern):
            rank, pattern = ranked_pattern
            for path in sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list):
                if not path.endswith(("/", "\\")) and special_file_kind(path) != "a folder":
                    yield rank, path   # a folder a glob matched is skipped, as ReadMatches does

        def lines(ranked_path):
            rank, path = ranked_path
            # the bytes as stored, as every reader reads them (preflight refuses a
            # compressed input: pipelines/preflight.py), so a line number is a line of
            # the file the user has
            with open_regular_file(path) as raw:
                yield from iter_numbered_lines(path, raw, rank)

        # an impulse and two FlatMaps rather than Create, MatchAll and ReadMatches: the
        # same files read the same way in fewer transforms (each costs every build
        # start-up time), and each line knows its pattern's place
        return (pbegin
                | "Once" >> beam.Impulse()
                | "Patterns" >> beam.FlatMap(lambda _: patterns)
                | "Match" >> beam.FlatMap(files)
                | "Lines" >> beam.FlatMap(lines)
                | "Spread lines" >> beam.Reshuffle())


def parse_json_object(line: Union[SourceLine, str],
                      required_fields: Iterable[str] = ()) -> Union[dict, Tuple[str, str]]:
    """One JSON Lines line as a dict whose `required_fields` are non-empty strings, or
    (reason code, detail) saying what is wrong with it. The line is decoded under
    transforms/io/strict_json.py's rules: a lone surrogate, a key named twice, an integer
    beyond 64 bits, NaN or Infinity anywhere in it is that line's reject, naming the field."""
    if isinstance(line, SourceLine):
        if line.error:
            return reasons.BAD_ENCODING, line.error
        line = line.text
    try:
        record = strict_json.loads(line)
    except strict_json.JsonProblem as e:
        return e.problem
    if not isinstance(record, dict):
        return reasons.BAD_JSON, "a line must be a JSON object"
    return required_strings_problem(record, required_fields) or record


def required_strings_problem(record: dict, required_fields: Iterable[str]) -> Optional[Tuple[str, str]]:
    """missing_field or bad_field when a required field is absent or not a non-empty string."""
    required_fields = tuple(required_fields)
    missing = [f for f in required_fields if f not in record]
    if missing:
        return reasons.MISSING_FIELD, f"missing field(s): {', '.join(missing)}"
    bad = [f for f in required_fields if not isinstance(record[f], str) or not record[f].strip()]
    if bad:
        return reasons.BAD_FIELD, f"field(s) must be non-empty strings: {', '.join(bad)}"
    return None
