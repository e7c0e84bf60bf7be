"""Crowd answer files row by row (transforms/crowd/answer_files.py): a runaway CSV quote costs
one row, not the rows after it; bytes that are not UTF-8 cost their row and never turn
into U+FFFD; legitimate multi-line cells still work. The whole-file checks run in
preflight: tests/imagecode/test_preflight.py."""
import csv
import io
import json
import re

import pytest

from pipelines.imagecode.crowd.records import DESCRIPTION_COLUMNS, RETRIEVAL_COLUMNS
from schemas import reasons
from transforms.core.errors import InputError
from transforms.crowd import answer_files
from transforms.crowd.answer_files import parse_file

PATH = "/answers/descriptions.csv"
HEADER = ",".join(DESCRIPTION_COLUMNS)


def csv_line(*cells) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(cells)
    return buf.getvalue()


def rows_of(data, fmt="csv", columns=DESCRIPTION_COLUMNS):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return list(parse_file(PATH, io.BytesIO(data), fmt, columns))


def good(rows):
    return [(r.line, r.fields["worker"]) for r in rows if r.error is None]


def bad(rows):
    return [(r.line, r.error[0], r.error[1]) for r in rows if r.error is not None]


def no_replacement_character(rows):
    return all("\ufffd" not in json.dumps([r.fields, r.error], ensure_ascii=False) for r in rows)


def forty_four_rows(bad_quote_at=8):
    """Header and 44 describer rows (lines 2-45); the row on `bad_quote_at` opens a quote
    it never closes. The first quote after it is the quoted text on line 29 (a comma), so
    the runaway quote runs over lines 9-29 as in the tester's file."""
    lines = [HEADER + "\n"]
    for line in range(2, 46):
        text = "A cat, on the mat." if line == 29 else f"The dog turns, take {line}."
        row = csv_line(f"open-images-{line % 4}", line % 10, text.replace(",", "") if line != 29 else text,
                       f"w{line:02d}")
        if line == bad_quote_at:
            row = f'open-images-0,3,"The dog on the left,w{line:02d}\n'
        lines.append(row)
    return "".join(lines)


def test_a_runaway_quote_costs_its_own_row_and_the_swallowed_rows_are_read_again():
    rows = rows_of(forty_four_rows())
    # 44 rows: 43 ingested, 1 rejected (the row with the bad quote); nothing swallowed
    assert len(rows) == 44
    assert bad(rows) == [(8, reasons.RUNAWAY_QUOTE, "quote opened on line 8 runs to line 29, swallowing "
                                                    "lines 9-29 (read again as rows of their own)")]
    assert good(rows) == [(line, f"w{line:02d}") for line in range(2, 46) if line != 8]
    line_29 = next(r for r in rows if r.line == 29)
    assert line_29.fields["text"] == "A cat, on the mat."
    assert all(r.path == PATH for r in rows)


def test_a_quote_that_never_closes_does_not_swallow_the_rest_of_the_file():
    data = HEADER + "\n" + 'open-images-1,2,"A dog,w1\n' + "".join(
        csv_line("open-images-1", k, f"Text {k}.", f"w{k}") for k in range(3, 8))
    rows = rows_of(data)
    assert bad(rows) == [(2, reasons.RUNAWAY_QUOTE, "quote opened on line 2 is never closed, swallowing "
                                                    "lines 3-7 (read again as rows of their own)")]
    assert good(rows) == [(k, f"w{k}") for k in range(3, 8)]


def test_a_quote_that_swallows_a_single_row_is_caught_too():
    # the record even has the right number of fields: the swallowed line gives it away
    data = HEADER + "\n" + 'open-images-1,2,"A dog,w1\n' + csv_line("open-images-1", 3, "A cat, grey.", "w2")
    rows = rows_of(data)
    assert bad(rows) == [(2, reasons.RUNAWAY_QUOTE, "quote opened on line 2 runs to line 3, swallowing "
                                                    "line 3 (read again as rows of their own)")]
    assert good(rows) == [(3, "w2")]


def test_a_quote_still_open_after_the_limit_is_a_runaway_even_over_prose():
    limit = answer_files.MAX_QUOTED_LINES
    prose = "".join(f"more words {k}\n" for k in range(limit + 20))
    data = HEADER + "\n" + 'open-images-1,2,"A dog\n' + prose + csv_line("open-images-1", 3, "Cat.", "w2")
    rows = rows_of(data)
    last = 3 + len(prose.splitlines())
    assert bad(rows)[0] == (2, reasons.RUNAWAY_QUOTE, f"quote opened on line 2 is still open after {limit} lines, "
                                                      f"swallowing lines 3-{limit + 1} (read again as rows of their own)")
    # the prose lines come back as one-field rows, each its own reject; the row after them is kept
    assert [r[1] for r in bad(rows)[1:]] == [reasons.MALFORMED_ROW] * len(prose.splitlines())
    assert good(rows) == [(last, "w2")]
    assert len(rows) == 1 + len(prose.splitlines()) + 1


def test_legitimate_multi_line_cells_stay_one_row():
    texts = ["A dog on the left.\nIt says \"hi\".",
             "First paragraph.\n\nSecond paragraph, after a blank line.",
             "Left: a dog, a cat\nright: two birds, a tree, a bench",     # inner lines have commas
             "Ends with commas\nx, y, z"]                                  # last line too
    data = HEADER + "\n" + "".join(csv_line("open-images-1", k, t, f"w{k}") for k, t in enumerate(texts))
    rows = rows_of(data)
    assert bad(rows) == []
    assert [(r.line, r.fields["text"]) for r in rows] == [(2, texts[0]), (4, texts[1]), (7, texts[2]),
                                                          (9, texts[3])]


def test_crlf_rows_and_a_bom_read_as_usual():
    data = ("\ufeff" + HEADER + "\r\n" + 'open-images-1,2,"A dog\r\non the left.",w1\r\n'
            + "open-images-1,3,A cat.,w2\r\n")
    rows = rows_of(data)
    assert [(r.line, r.fields) for r in rows] == [
        (2, dict(set_name="open-images-1", target_index="2", text="A dog\r\non the left.", worker="w1")),
        (4, dict(set_name="open-images-1", target_index="3", text="A cat.", worker="w2"))]


def test_two_files_joined_with_cat_stop_before_work_and_their_second_header_is_a_reject(tmp_path):
    """Each file had its BOM (Excel's "CSV UTF-8" writes one): the second's header, one
    line among the rows, starts with a BOM that would stick to its first cell."""
    one = "\ufeff" + HEADER + "\n" + csv_line("open-images-1", 2, "A dog.", "w1")
    two = "\ufeff" + HEADER + "\n" + csv_line("open-images-1", 3, "A cat.", "w2")
    rows = rows_of(one + two)
    mark = "a byte order mark (U+FEFF) at column 1: only a file's first bytes may hold one"
    assert [(line, reason, detail[:len(mark)]) for line, reason, detail in bad(rows)] == [
        (3, reasons.BAD_ENCODING, mark)]
    assert good(rows) == [(2, "w1"), (4, "w2")]
    path = tmp_path / "joined.csv"
    path.write_text(one + two, encoding="utf-8")
    with pytest.raises(InputError, match=f"^{path}:3: {re.escape(mark)}.*cat"):
        answer_files.check_answer_file(str(path), DESCRIPTION_COLUMNS)


def test_latin1_bytes_reject_their_row_alone_and_never_become_u_fffd():
    data = (HEADER + "\n" + "open-images-1,2,Un caf\xe9.,w1\n"
            + 'open-images-1,3,"Deux lignes\net un caf\xe9.",w2\n'
            + "open-images-1,4,A cat.,w3\n").encode("latin-1")
    rows = rows_of(data)
    assert bad(rows) == [(2, reasons.BAD_ENCODING, "byte 0xe9 at column 23 is not UTF-8"),
                         (3, reasons.BAD_ENCODING, "line 4: byte 0xe9 at column 10 is not UTF-8")]
    assert good(rows) == [(5, "w3")]
    assert no_replacement_character(rows)


def test_a_header_that_is_not_utf8_rejects_every_row_for_that_reason():
    data = ("set_name,target_index,text,worker,r\xe9sum\xe9\n" "open-images-1,2,A dog.,w1,x\n"
            "\n" "open-images-1,3,A cat.,w2,y\n").encode("latin-1")
    rows = rows_of(data)
    reason = ("the header (line 1) is not UTF-8 (byte 0xe9 at column 36 is not UTF-8), "
              "so no row of this file can be read")
    assert bad(rows) == [(2, reasons.BAD_ENCODING, reason), (4, reasons.BAD_ENCODING, reason)]


def test_a_row_with_a_stray_quote_in_one_line_is_an_ordinary_row_problem():
    data = HEADER + "\n" + 'open-images-1,2,A "dog",w1,extra\n' + csv_line("open-images-1", 3, "Cat.", "w2")
    assert bad(rows_of(data)) == [(2, reasons.MALFORMED_ROW, "5 fields, header has 4")]


def test_jsonl_lines_that_are_not_utf8_are_rejected_with_their_line():
    lines = [json.dumps(dict(set_name="s", description_id="s#1#w", worker="b1", guessed_index=1)),
             '{"set_name": "s", "description_id": "s#1#w", "worker": "b\xe9", "guessed_index": 1}',
             "", "[1, 2]"]
    rows = rows_of("\n".join(lines).encode("latin-1"), "jsonl", RETRIEVAL_COLUMNS)
    assert [(r.line, r.error) for r in rows] == [
        (1, None), (2, (reasons.BAD_ENCODING, "byte 0xe9 at column 58 is not UTF-8")),
        (4, (reasons.BAD_JSON, "a line must be a JSON object"))]
    assert no_replacement_character(rows)
