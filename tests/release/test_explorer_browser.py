"""The sample releases' explorers opened as a person would: headless Chromium, from
file://, no server. Each sample's first page shows its cards, the next page the next
ones, the rejects and (after a second VSR build with another seed) the changes render,
no request leaves the page, and a screenshot of each is kept in build/explorer/.

Slow (every sample is built) and needs Debian's `chromium`: `make check-explorer` runs
it (and installs chromium), as .ci/run does; plain `pytest` skips it.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

from pipelines import registry, runner
from pipelines.release.explorer import PAGE_SIZE
from tests.paths import ROOT
from tests.release.explorer_pages import load_index, load_page

pytestmark = pytest.mark.skipif(os.environ.get("EXPLORER_BROWSER") != "1",
                                reason="the browser test: make check-explorer")
SCREENSHOTS = ROOT / "build" / "explorer"
CARD = re.compile(r'<article class="card"')


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """{name: version folder} of every sample, and VSR 1.1.0 built with another seed."""
    assert shutil.which("chromium"), "Debian's chromium is needed: make check-explorer installs it"
    out = tmp_path_factory.mktemp("explorer")
    built = {}
    for name in registry.names():
        for sample in registry.load(name).sample_configs():
            folder = runner.build(name, ["--config", sample, "--output", str(out),
                                         "--version", "1.0.0", "--quiet"])
            built[os.path.basename(os.path.dirname(folder))] = folder
    built["vsr 1.1.0"] = runner.build("vsr", ["--config", "sample", "--output", str(out),
                                              "--version", "1.1.0", "--set", "seed=1", "--quiet"])
    return built


class Page:
    """One route of an explorer as Chromium rendered it (its DOM and the network log)."""

    def __init__(self, folder, route, tmp_path, screenshot=None):
        url = f"file://{folder}/explorer/index.html" + (f"#{route}" if route else "")
        netlog = tmp_path / "net.json"
        common = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                  "--disable-background-networking", "--no-first-run",
                  "--virtual-time-budget=10000", f"--log-net-log={netlog}",
                  "--net-log-capture-mode=Everything"]
        self.dom = self._run(common + ["--dump-dom", url])
        self.requests = _requested_urls(netlog)
        if screenshot:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            self._run(common + ["--window-size=1400,1000", f"--screenshot={SCREENSHOTS / screenshot}", url])

    @staticmethod
    def _run(command):
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    @property
    def cards(self):
        return len(CARD.findall(self.dom))

    def ready(self):
        return 'data-ready="1"' in self.dom

    def text(self, element_id):
        found = re.search(rf'id="{element_id}"[^>]*>([^<]*)<', self.dom)
        return found and found.group(1)


def _requested_urls(netlog) -> list:
    """The URLs the page asked the network for, from Chromium's network log: requests
    with an initiator (a file:// page's is "null"); the browser's own background
    requests (updates, dictionaries) have "not an origin". Local files are not network
    requests and do not appear."""
    text = netlog.read_text()
    events = json.loads(text if text.rstrip().endswith("}") else text.rstrip().rstrip(",") + "]}")["events"]
    return sorted({e["params"]["url"] for e in events
                   if e.get("params", {}).get("initiator") not in (None, "not an origin")
                   and "url" in e["params"]})


def _assert_no_request_left(page):
    assert page.requests == []
    sources = re.findall(r'<img[^>]* src="([^"]*)"', page.dom)
    assert all(s.startswith("thumbs/") for s in sources), sources


def test_the_network_check_sees_a_page_that_asks_the_network(tmp_path):
    """The check above cannot pass by seeing nothing: a page with a remote image and
    script is caught (nothing listens there; the request is made all the same)."""
    folder = tmp_path / "probe"
    (folder / "explorer").mkdir(parents=True)
    (folder / "explorer" / "index.html").write_text(
        '<html><body><img src="http://127.0.0.1:9/x.png">'
        '<script src="https://example.invalid/a.js"></script></body></html>')
    page = Page(folder, "", tmp_path)
    assert page.requests == ["http://127.0.0.1:9/x.png", "https://example.invalid/a.js"]


@pytest.mark.parametrize("name", ["imagecode", "vsr", "bd2bb", "mscoco-fg"])
def test_first_page_paging_and_rejects_render(releases, name, tmp_path):
    folder = releases[name]
    index = load_index(os.path.join(folder, "explorer"))
    first = index["views"][0]["groups"][0]
    page = Page(folder, "", tmp_path, screenshot=f"{name}.png")
    assert page.ready() and page.cards == min(PAGE_SIZE, first["items"])
    assert f"{index['benchmark']} {index['version']}" in page.dom
    _assert_no_request_left(page)

    paged = [(v, g, group) for v, view in enumerate(index["views"])
             for g, group in enumerate(view["groups"]) if group["pages"] > 1]
    if paged:
        v, g, group = paged[0]
        page = Page(folder, f"items/{v}/{g}/1", tmp_path)
        assert f'id="next" href="#items/{v}/{g}/2"' in page.dom
        page = Page(folder, f"items/{v}/{g}/2", tmp_path)
        assert page.ready() and page.cards == min(PAGE_SIZE, group["items"] - PAGE_SIZE)
        assert page.text("where").startswith(f"page 2 of {group['pages']}")

    reasons = index["rejects"]["reasons"]
    page = Page(folder, "rejects", tmp_path)
    assert page.ready() and all(f">{r['reason']}</a>" in page.dom for r in reasons)
    # the first reason whose rejects are pictured (ImageCoDe: blurry frames from their video)
    explorer = os.path.join(folder, "explorer")
    n = next((n for n, r in enumerate(reasons)
              if any("images" in c for c in load_page(explorer, r["path"], 1))), 0)
    page = Page(folder, f"rejects/{n}/1", tmp_path, screenshot=f"{name}-rejects.png")
    assert page.ready() and page.cards == min(PAGE_SIZE, reasons[n]["shown"])
    if name == "imagecode":
        assert reasons[n]["reason"] == "blurry" and page.dom.count("<img") == page.cards
    _assert_no_request_left(page)


def test_the_changes_since_the_previous_version_render(releases, tmp_path):
    folder = releases["vsr 1.1.0"]
    diff = load_index(os.path.join(folder, "explorer"))["diff"]
    assert diff["from"] == "1.0.0" and {c["key"] for c in diff["config"]} == {"seed"}
    page = Page(folder, "diff", tmp_path)
    assert page.ready() and "Config change 1.0.0 → 1.1.0" in page.dom and ">seed<" in page.dom
    shown = [(t, k) for t, table in enumerate(diff["tables"]) for k in table["kinds"] if k["count"]]
    assert shown, "another seed changes the examples"
    for t, kind in shown:
        page = Page(folder, f"diff/{t}/{kind['kind']}/1", tmp_path,
                    screenshot=f"vsr-diff-{t}-{kind['kind']}.png")
        assert page.ready() and page.cards == min(PAGE_SIZE, kind["count"]), kind
        _assert_no_request_left(page)
