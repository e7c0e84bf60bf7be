"""What free text (typed by people: crowd descriptions and sentences, BD2BB intentions
and actions, captions, answer cells) may hold, checked where every reader meets: the
JSON rules (transforms/io/strict_json.py: every JSON Lines line and JSON document) and
every crowd answer row (transforms/crowd/answer_rows.py, CSV cells included).

  control characters   NUL, the other C0 controls but tab, line feed and carriage
                       return, DEL and the C1 controls (U+0080-U+009F): no text holds
                       them (none in the 190,000 texts of the five public releases);
                       they cut strings short in C tools, and a terminal or spreadsheet
                       acts on them. A reject with the reason `control_character`.
  a formula start      text beginning with `=`, `+`, `-`, `@`, tab or carriage return,
                       which a spreadsheet opening a CSV runs as a formula (OWASP, "CSV
                       injection"), also when written in another form that Unicode's
                       compatibility normalisation (NFKC) makes one of them (the fullwidth
                       `＝SUM(1)`, a small `﹢`) or behind characters no one sees (a
                       zero-width space, joiner or word joiner, a byte order mark, a soft
                       hyphen: Unicode's format characters, Cf). Every CSV the project
                       writes neutralises such a cell (transforms/io/csv_out.py); a file
                       that must keep its text verbatim for its original loaders (BD2BB's
                       compat/*.csv) has its benchmark reject such text at ingest instead
                       (`formula_text`).
  length               at most MAX_TEXT_CHARS (16,384) characters in any text of a JSON
                       input or a crowd answer cell: 23 times the longest text of the five
                       public releases (710 characters, an ImageCoDe description). A
                       longer one is no one's typing (NLVR2 accepted a sentence of 100,000
                       characters): `too_long`. A benchmark may hold a field to less
                       (BD2BB's `filters.max_action_chars`, 500).

    problem = text_problem("field 'text'", value)   # (reason, detail) or None
    begins_like_formula(value)                      # True / False
"""
from __future__ import annotations

import re
import unicodedata
from typing import Optional, Tuple

from schemas import reasons

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
MAX_TEXT_CHARS = 16_384
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# The same characters as JSON escapes: where strict_json must look at a decoded value
# (a raw control character is not JSON at all: the decoder refuses it).
# (\u0009, \u000a and \u000d match too: the value is then walked and passes.)
CONTROL_ESCAPE = r"\\u00[01][0-9a-fA-F]|\\u00[89][0-9a-fA-F]|\\u007[fF]"


def control_character_problem(where: str, text: str) -> Optional[Tuple[str, str]]:
    """(control_character, detail naming `where` and the character) for text that holds
    one, else None. The detail never holds the character itself."""
    found = CONTROL.search(text)
    if found is None:
        return None
    return reasons.CONTROL_CHARACTER, (f"{where} holds the control character "
                                       f"U+{ord(found.group()):04X} at character "
                                       f"{found.start() + 1}: not text")


def formula_start(text: str) -> Optional[Tuple[str, str]]:
    """(what `text` begins with as written, the formula character a spreadsheet reads
    there) when it begins like a formula; else None. Format characters (Cf: zero-width,
    joiners, a byte order mark, a soft hyphen) before it are not seen, and its first
    visible character is read in its NFKC form (fullwidth `＝` is `=`)."""
    hidden = 0
    while hidden < len(text) and unicodedata.category(text[hidden]) == "Cf":
        hidden += 1
    if hidden == len(text):
        return None
    read = unicodedata.normalize("NFKC", text[hidden])[:1]
    return (text[:hidden + 1], read) if read in FORMULA_START else None


def length_problem(where: str, text: str) -> Optional[Tuple[str, str]]:
    """(too_long, detail naming `where`) for text longer than MAX_TEXT_CHARS, else None."""
    if len(text) <= MAX_TEXT_CHARS:
        return None
    return reasons.TOO_LONG, (f"{where} holds {len(text):,} characters, more than the "
                              f"{MAX_TEXT_CHARS:,} a text may hold")


def text_problem(where: str, text: str) -> Optional[Tuple[str, str]]:
    """What free text may not hold, the first found: a control character, or too many
    characters; None when it is text."""
    return control_character_problem(where, text) or length_problem(where, text)


def begins_like_formula(text: str) -> bool:
    """Whether a spreadsheet would run `text` as a formula (OWASP's starting characters,
    in any form NFKC makes them, behind any format characters)."""
    return formula_start(text) is not None


def formula_problem(where: str, text: str) -> Optional[Tuple[str, str]]:
    """(formula_text, detail) for text a spreadsheet would run, for a field published
    verbatim in a CSV (no neutralising prefix may change it); else None."""
    start = formula_start(text)
    if start is None:
        return None
    written, read = start
    reads = "" if written == read else f", which a spreadsheet reads as {read!r}"
    return reasons.FORMULA_TEXT, (f"{where} begins with {written!r}{reads}: a spreadsheet opening "
                                  "the CSV it is published in would run it as a formula")
