"""Mechanical Turk's API route: each HIT's HTMLQuestion, rendered from a round's worker page
and one row of its batch input.

MTurk takes a round's page in one of two ways (docs/crowd.md, "Two routes to MTurk"):

* the requester UI: a project whose layout is `crowd/pages/<page>.html`, its `${column}`
  placeholders left in, and a batch published with the page's batch input CSV: MTurk fills
  each HIT's page from its row;
* the API (`CreateHIT`, or `CreateHITWithHITType`, with `Question=`): MTurk fills nothing,
  so each HIT's Question is the page already filled with its row (each value
  HTML-escaped, transforms/crowd/pages.py `fill`), wrapped in an HTMLQuestion document of
  the 2011-11-11 schema: `HTMLContent`, the page (in CDATA), and `FrameHeight`, the height
  in pixels of the frame MTurk shows it in. tests/crowd/data/HTMLQuestion.xsd holds that
  schema as MTurk's documentation gives it; tests/crowd/test_html_question.py validates
  every page's questions against it.

    for number, question in questions(template, rows): create_hit(..., Question=question)
"""
from __future__ import annotations

from typing import Iterable, Iterator, Mapping, Tuple

from transforms.core.errors import InputError
from transforms.crowd.pages import fill

NAMESPACE = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2011-11-11/HTMLQuestion.xsd"
MAX_QUESTION_CHARS = 65535   # the most a Question parameter of CreateHIT may hold
FRAME_HEIGHT = 1000          # pixels: an ImageCoDe page's ten images and its text box without scrolling
_CDATA_END = "]]>"


def html_question(page: str, frame_height: int = FRAME_HEIGHT) -> str:
    """A filled page as an HTMLQuestion document. A "]]>" inside the page (a worker's text
    shown on it) would end the CDATA section early: it is split across two sections."""
    content = page.replace(_CDATA_END, "]]" + _CDATA_END + "<![CDATA[" + ">")
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<HTMLQuestion xmlns="{NAMESPACE}">\n'
            f"<HTMLContent><![CDATA[{content}]]></HTMLContent>\n"
            f"<FrameHeight>{int(frame_height)}</FrameHeight>\n</HTMLQuestion>\n")


def questions(template: str, rows: Iterable[Mapping[str, str]],
              frame_height: int = FRAME_HEIGHT) -> Iterator[Tuple[int, str]]:
    """(row number from 1, its HIT's HTMLQuestion) for each row of a page's batch input.
    InputError, naming the row, for a row that lacks a column the page asks for or whose
    question would be longer than MTurk takes."""
    for number, row in enumerate(rows, start=1):
        try:
            page = fill(template, row)
        except KeyError as e:
            raise InputError(f"row {number} of the batch input: {e.args[0]}") from None
        question = html_question(page, frame_height)
        if len(question) > MAX_QUESTION_CHARS:
            raise InputError(f"row {number} of the batch input: its HTMLQuestion has {len(question):,} "
                             f"characters, more than the {MAX_QUESTION_CHARS:,} MTurk takes")
        yield number, question
