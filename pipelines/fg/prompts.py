"""The prompts that ask the captioner for details (F9, §3.2.2(2), Table 1).

The paper's Table 1, "Five example prompts to inspire VinVL to generate details from
different aspects. X is the placeholder for nouns (objects) appeared in the texts":

    Row  Prompts                    Details
    1    It is                      new object/place/weather
    2    There is/are               new object
    3    The X is/are               attribute
    4    The color of X             color
    5    The man/woman wears/in     wearing

Each prompt p_i is appended after the coarse caption d_c (d_c^i = <d_c, p_i>); Figure 4
shows the result as two sentences, "a woman standing on a sidewalk. the woman wears a
white jacket.", so the caption is closed with a full stop and the prompt follows in lower
case: `text = caption + ". " + words` (no second stop when the caption already ends in
`.`, `!` or `?`).

The choices Table 1 leaves open (ours):
- Rows 1 and 2 name no noun: one prompt each per caption (`noun == ""`). Row 2 says
  "there is": the object it asks for is not known yet, and the captioner is free to go on
  with "there is a ... and two ...".
- Row 3 takes "is" after a singular noun and "are" after a plural one (`is_plural`).
- Row 4 reads "the color of the X" (Table 1's X is the bare noun, e.g. "sidewalk").
- Row 5 only for a caption that mentions a person. Gendered words give "man"/"woman"
  (both when both are mentioned), any other person word ("person", "child", "player",
  "skier", ...) gives "person", which Table 1 does not list but which keeps the row from
  guessing a gender. "wears" follows one person ("the woman wears"), "in" several ("the
  women in"), so the prompt agrees in number without asking which verb the captioner
  prefers. The noun of a row-5 prompt is the person word as used in the prompt.
One prompt per (caption, row, noun), nouns in the order given, duplicates once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence

TEMPLATES = {1: "It is", 2: "There is/are", 3: "The X is/are", 4: "The color of X",
             5: "The man/woman wears/in"}
DETAILS = {1: "new object/place/weather", 2: "new object", 3: "attribute", 4: "color",
           5: "wearing"}

IRREGULAR_PLURALS = frozenset({"men", "women", "people", "children", "feet", "teeth", "mice",
                               "geese", "police", "cattle", "oxen", "sheep", "deer", "fish",
                               "persons", "ladies", "guys", "kids"})
_SINGULAR_ENDINGS = ("ss", "us", "is", "ous")
# Row 5: who can wear something, by the word the caption uses.
MALE_WORDS = frozenset({"man", "men", "boy", "boys", "guy", "guys", "gentleman", "gentlemen",
                        "male", "males", "father", "son", "husband", "groom"})
FEMALE_WORDS = frozenset({"woman", "women", "girl", "girls", "lady", "ladies", "female",
                          "females", "mother", "daughter", "wife", "bride"})
PERSON_WORDS = frozenset({"person", "persons", "people", "child", "children", "kid", "kids",
                          "player", "players", "skier", "skiers", "surfer", "surfers",
                          "skateboarder", "skateboarders", "snowboarder", "rider", "riders",
                          "someone", "adult", "adults", "baby", "toddler", "couple", "crowd",
                          "worker", "workers", "tourist", "tourists", "biker", "cyclist",
                          "athlete", "athletes", "pitcher", "batter", "catcher"})
_PLURAL_PEOPLE = frozenset({"men", "boys", "guys", "gentlemen", "males", "women", "girls",
                            "ladies", "females", "people", "persons", "children", "kids",
                            "players", "skiers", "surfers", "skateboarders", "riders", "adults",
                            "workers", "tourists", "athletes", "couple", "crowd"})


@dataclass(frozen=True)
class Prompt:
    template: int   # Table 1's row, 1-5
    noun: str       # the noun X ("" for rows 1 and 2; the person word for row 5)
    text: str       # d_c^i: the caption, a full stop, the prompt words
    words: str = ""  # the prompt words alone


def is_plural(noun: str) -> bool:
    """A noun's number from its form: irregular plurals by list, else a final -s that is
    not -ss/-us/-is/-ous. The last word of a compound decides ("tennis rackets")."""
    word = noun.lower().split()[-1] if noun.strip() else ""
    if word in IRREGULAR_PLURALS:
        return True
    return word.endswith("s") and not word.endswith(_SINGULAR_ENDINGS)


def people_in(caption: str) -> List[str]:
    """The row-5 subjects a caption allows: "man", "woman", "men", "women" as mentioned,
    else "person"/"people" for an ungendered person word, else nothing."""
    words = [_person_word(w.strip(".,;:!?\"'()").lower()) for w in caption.split()]
    found: List[str] = []
    for group, one, many in ((MALE_WORDS, "man", "men"), (FEMALE_WORDS, "woman", "women")):
        mentioned = [w for w in words if w in group]
        if mentioned:
            found.append(many if all(w in _PLURAL_PEOPLE for w in mentioned) else one)
    if not found:
        mentioned = [w for w in words if w in PERSON_WORDS]
        if mentioned:
            found.append("people" if all(w in _PLURAL_PEOPLE for w in mentioned) else "person")
    return found


def _person_word(word: str) -> str:
    """A possessive back to its noun: "woman's", and "womans" as the release writes it."""
    for suffix in ("'s", "s"):
        stem = word[:-len(suffix)]
        if word.endswith(suffix) and stem in MALE_WORDS | FEMALE_WORDS | PERSON_WORDS \
                and stem not in _PLURAL_PEOPLE:
            return stem
    return word


def prompts_for(caption: str, nouns: Sequence[str]) -> List[Prompt]:
    """Every prompt of Table 1 for `caption` whose nouns (F8) are `nouns`, rows in order."""
    stem = caption.strip()
    stem = stem if stem.endswith((".", "!", "?")) else stem + "."

    def prompt(template: int, noun: str, words: str) -> Prompt:
        return Prompt(template, noun, f"{stem} {words}", words)

    unique = list(dict.fromkeys(n.strip().lower() for n in nouns if n.strip()))
    prompts = [prompt(1, "", "it is"), prompt(2, "", "there is")]
    prompts += [prompt(3, n, f"the {n} {'are' if is_plural(n) else 'is'}") for n in unique]
    prompts += [prompt(4, n, f"the color of the {n}") for n in unique]
    prompts += [prompt(5, who, f"the {who} {'in' if who in _PLURAL_PEOPLE else 'wears'}")
                for who in people_in(caption)]
    return prompts
