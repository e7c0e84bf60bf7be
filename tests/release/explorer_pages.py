"""Reading a release explorer's data scripts back (pipelines/release/explorer.py), as the
page's JavaScript does: data/index.js calls EXPLORER.index(...), each page script
EXPLORER.page(id, cards)."""
import json
import os
import re

# What a page could request beyond its own folder: a URL with a network scheme in an
# attribute, a CSS url() or an import (text that merely mentions a URL is no request).
NETWORK_REFERENCE = re.compile(r"""(src|href|action)\s*=\s*["']?\s*(https?:|//)|url\(\s*["']?\s*(https?:|//)|@import""",
                               re.IGNORECASE)


def _call(path: str, function: str) -> list:
    text = open(path, encoding="utf-8").read()
    prefix = f"EXPLORER.{function}("
    assert text.startswith(prefix) and text.endswith(");\n"), path
    return json.loads("[" + text[len(prefix):-3] + "]")   # the call's arguments


def load_index(explorer: str) -> dict:
    return _call(os.path.join(explorer, "data", "index.js"), "index")[0]


def load_page(explorer: str, path: str, page: int) -> list:
    page_id, cards = _call(os.path.join(explorer, "data", path, f"{page}.js"), "page")
    assert page_id == f"{path}/{page}"
    return cards


def all_cards(explorer: str, path: str, pages: int) -> list:
    return [c for page in range(1, pages + 1) for c in load_page(explorer, path, page)]


def page_files(explorer: str) -> list:
    return sorted(os.path.relpath(os.path.join(d, n), explorer)
                  for d, _, names in os.walk(os.path.join(explorer, "data")) for n in names)


def network_references(explorer: str) -> list:
    """(file, match) for every network reference in the explorer's text files."""
    found = []
    for folder, _, names in os.walk(explorer):
        for name in names:
            if name.endswith((".html", ".js", ".css")):
                path = os.path.join(folder, name)
                for match in NETWORK_REFERENCE.finditer(open(path, encoding="utf-8").read()):
                    found.append((os.path.relpath(path, explorer), match.group(0)))
    return found
