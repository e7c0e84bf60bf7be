"""Reading a release explorer's data scripts back (pipelines/release/explorer/write.py), as the
page's JavaScript does: data/index.js calls EXPLORER.index(...), every other data script
EXPLORER.data(id, value)."""
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


def load_data(explorer: str, data_id: str):
    got_id, value = _call(os.path.join(explorer, "data", f"{data_id}.js"), "data")
    assert got_id == data_id
    return value


def views(index: dict) -> list:
    """Every view of an explorer's index: the tables, then the rejects."""
    return index["views"] + [index["rejects"]]


def view_cards(explorer: str, view: dict, page_size: int) -> list:
    """A view's cards in order, chunk by chunk."""
    chunks = -(-view["rows"] // page_size)
    return [c for n in range(chunks) for c in load_data(explorer, f"{view['path']}/cards/{n}")]


def index_column(explorer: str, view: dict, name: str) -> list:
    """One search-index column over every row of a view (None where a row has no value)."""
    meta = view["index"]
    column, = [c for c in meta["columns"] if c["name"] == name]
    values = []
    for chunk in range(-(-meta["rows"] // meta["chunk_rows"])):
        size = min(meta["chunk_rows"], meta["rows"] - chunk * meta["chunk_rows"])
        if chunk not in column["chunks"]:
            values += [None] * size
            continue
        cells = load_data(explorer, f"{view['path']}/index/{column['n']}/{chunk}")
        if isinstance(cells, dict):
            cells = [None if c is None else cells["v"][c] for c in cells["c"]]
        assert len(cells) == size
        values += cells
    return values


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
