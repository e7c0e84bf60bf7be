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
                       injection"). Every CSV the project writes neutralises such a cell
                       (transforms/io/csv_out.py); a file that must keep its text verbatim
                       for its original loaders (BD2BB's compat/*.csv) has its benchmark
                       reject such text at ingest instead (`formula_text`).

    problem = control_character_problem("field 'text'", value)   # (reason, detail) or None
    begins_like_formula(value)                                   # True / False
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

from schemas import reasons

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
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


def begins_like_formula(text: str) -> bool:
    """Whether a spreadsheet would run `text` as a formula (OWASP's starting characters)."""
    return text.startswith(FORMULA_START)


def formula_problem(where: str, text: str) -> Optional[Tuple[str, str]]:
    """(formula_text, detail) for text a spreadsheet would run, for a field published
    verbatim in a CSV (no neutralising prefix may change it); else None."""
    if not begins_like_formula(text):
        return None
    return reasons.FORMULA_TEXT, (f"{where} begins with {text[:1]!r}: a spreadsheet opening "
                                  "the CSV it is published in would run it as a formula")
