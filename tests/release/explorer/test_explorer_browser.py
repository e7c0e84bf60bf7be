"""The release explorers opened and used as a person would: headless Chromium driven
through the DevTools protocol (tests/release/chromium.py), from file://, no server.

- every sample: its first page shows its cards, the next page the next ones, the rejects
  by reason and a reason's cards render;
- the public NLVR2 re-release (13,949 examples, ../shared/realdata): a search typed into
  the box (whole words; inside words when asked), filters chosen in the menus, a range
  and a sort, and a link to one row, each giving the rows that the release's Parquet
  files say it should; the row whole: every column, its Parquet file and row, its
  compat/ lines, the label's ClassLabel name; the statistics; built in the folder of the
  NLVR2 sample, its changes refused (a sample is no previous version of real data);
- VSR 1.1.0 (another seed), ImageCoDe 1.1.0: the changes since 1.0.0, which version they
  compare with, a changed row's changed fields;
- no request leaves any page (Chromium's network log), images come only from thumbs/.

Screenshots go to build/explorer/, and the times to first paint, to the first cards and
to a search result to build/explorer/timings.json (logged, never asserted).

Slow (every sample is built) and needs Debian's `chromium`: `make check-explorer` runs
it (and installs chromium), as .ci/run does; plain `pytest` skips it.
"""
import json
import os
import re
import shutil
import urllib.parse

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipelines import build, registry
from pipelines.release.explorer.write import PAGE_SIZE
from tests.paths import REALDATA, ROOT
from tests.release.chromium import Browser
from tests.release.explorer.explorer_pages import index_column, load_index

pytestmark = pytest.mark.skipif(os.environ.get("EXPLORER_BROWSER") != "1",
                                reason="the browser test: make check-explorer")
SCREENSHOTS = ROOT / "build" / "explorer"
NLVR2_PUBLIC = [REALDATA / "nlvr2" / "dev.json", REALDATA / "nlvr2" / "test1.json"]
TIMINGS = {}


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """{name: version folder} of every sample, VSR 1.1.0 built with another seed, and the
    public NLVR2 dev and test1 files re-released."""
    assert shutil.which("chromium"), "Debian's chromium is needed: make check-explorer installs it"
    for path in NLVR2_PUBLIC:
        assert path.exists(), f"public NLVR2 data not found at {path} (../shared/realdata)"
    out = tmp_path_factory.mktemp("explorer")
    built = {}
    for name in registry.names():
        for sample in registry.load(name).sample_configs():
            folder = build.build(name, ["--config", sample, "--output", str(out),
                                        "--version", "1.0.0", "--quiet"])
            built[os.path.basename(os.path.dirname(folder))] = folder
    built["vsr 1.1.0"] = build.build("vsr", ["--config", "sample", "--output", str(out),
                                             "--version", "1.1.0", "--set", "seed=1", "--quiet"])
    built["imagecode 1.1.0"] = build.build("imagecode", [
        "--config", "sample", "--output", str(out), "--version", "1.1.0", "--quiet",
        "--set", "mining.distance_threshold=0.30"])
    built["nlvr2 public"] = build.build("nlvr2", [   # beside the sample's 1.0.0
        "--config", "public", "--output", str(out), "--version", "2.0.0", "--quiet",
        "--set", f"inputs.public=[{','.join(map(str, NLVR2_PUBLIC))}]"])
    yield built
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "timings.json").write_text(json.dumps(TIMINGS, indent=1, sort_keys=True) + "\n")


def route(**params) -> str:
    """A hash as the page writes it (URLSearchParams: spaces as '+')."""
    return urllib.parse.urlencode(params)


class Explorer:
    """One release's explorer in one browser; on close, no request may have left it."""

    def __init__(self, folder, tmp_path):
        self.url = f"file://{folder}/explorer/index.html"
        self.index = load_index(os.path.join(folder, "explorer"))
        self.netlog = tmp_path / f"net-{len(list(tmp_path.iterdir()))}.json"
        self.browser = Browser(netlog=self.netlog)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.browser.close()
        if exc[0] is None:
            assert _requested_urls(self.netlog) == []

    def show(self, hash_route: str = "", screenshot: str = "") -> None:
        """Open a route (a fresh page load) and wait until it is drawn."""
        self.browser.open(self.url + ("#" + hash_route if hash_route else ""))
        self.wait(hash_route)
        if screenshot:
            self.screenshot(screenshot)

    def wait(self, hash_route: str) -> None:
        self.browser.wait("document.body && document.body.dataset.ready === '1' && "
                          f"document.body.dataset.route === {json.dumps(hash_route)}")

    def run(self, script: str):
        return self.browser.evaluate(script)

    def screenshot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.browser.wait("[...document.images].every(i => i.complete)")
        self.browser.screenshot(SCREENSHOTS / name)

    @property
    def cards(self) -> int:
        return self.run("document.querySelectorAll('article.card').length")

    def keys(self) -> list:
        return self.run("[...document.querySelectorAll('article.card')].map(c => c.dataset.key)")

    def text(self, element_id: str) -> str:
        return self.run(f"(document.getElementById({json.dumps(element_id)}) || {{}}).textContent")

    def no_foreign_images(self) -> None:
        sources = self.run("[...document.images].map(i => i.getAttribute('src'))")
        assert all(s.startswith("thumbs/") for s in sources), sources


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


def test_the_network_check_sees_a_page_that_asks_the_network(tmp_path):
    """The check above cannot pass by seeing nothing: a page with a remote image and
    script is caught (nothing listens there; the request is made all the same)."""
    page = tmp_path / "probe.html"
    page.write_text('<html><body><img src="http://127.0.0.1:9/x.png">'
                    '<script src="https://example.invalid/a.js"></script></body></html>')
    netlog = tmp_path / "net.json"
    with Browser(netlog=netlog) as browser:
        browser.open(f"file://{page}")
        browser.wait("document.readyState === 'complete'")
    assert _requested_urls(netlog) == ["http://127.0.0.1:9/x.png", "https://example.invalid/a.js"]


@pytest.mark.parametrize("name", ["imagecode", "vsr", "bd2bb", "mscoco-fg", "nlvr2"])
def test_first_page_paging_and_rejects_render(releases, name, tmp_path):
    folder = releases[name]
    with Explorer(folder, tmp_path) as page:
        index, first = page.index, page.index["views"][0]
        page.show("", screenshot=f"{name}.png")
        assert page.cards == min(PAGE_SIZE, first["rows"])
        assert page.text("title") == f"{index['benchmark']} {index['version']}"
        page.no_foreign_images()

        paged = [v for v in index["views"] if v["rows"] > PAGE_SIZE]
        if paged:   # the next page: the next cards, by the pager's own link
            view = paged[0]
            page.show(route(view=view["table"]))
            first_keys = page.keys()
            page.run("document.getElementById('next').click()")
            page.wait(route(view=view["table"], page=2))
            assert page.cards == min(PAGE_SIZE, view["rows"] - PAGE_SIZE)
            assert page.text("where").endswith(f"of {view['rows']:,}") and not set(first_keys) & set(page.keys())

        rejects = index["rejects"]
        page.show("reasons")
        assert all(page.run(f"[...document.querySelectorAll('main a')].some(a => a.textContent === {json.dumps(g['reason'])})")
                   for g in rejects["groups"])
        # the first reason whose rejects are pictured (ImageCoDe: blurry frames from their video)
        pictured = None
        for group in rejects["groups"]:
            page.show(route(view="rejects", **{"f.reason": group["reason"]}))
            assert page.cards == min(PAGE_SIZE, group["count"])
            if page.run("document.querySelectorAll('article.card img').length"):
                pictured = group
                page.screenshot(f"{name}-rejects.png")
                break
        if name == "imagecode":
            assert pictured["reason"] == "blurry"
            assert page.run("document.querySelectorAll('article.card img').length") == page.cards
        page.no_foreign_images()


def test_a_rejected_answer_is_found_by_its_text_and_by_a_pasted_id_or_hash(tmp_path):
    """A description the retrieval round rejected (tests/release/explorer/test_explorer_answers.py):
    its card shows the set's ten pictures; a word of its text finds it (a whole word: a
    part of one does not), and so do its id and a hash pasted in (the set name's)."""
    from tests.release.explorer.test_explorer_answers import DESCRIPTION_ID, answered_release
    folder = answered_release(tmp_path / "release")
    with Explorer(folder, tmp_path) as page:
        for q in ("umbrella", "93d332dd", DESCRIPTION_ID, "A1DESCRIBER hidden"):
            page.show(route(view="rejects", q=q))
            assert page.keys() == [DESCRIPTION_ID], q
        page.screenshot("imagecode-rejected-description.png")
        assert page.run("[...document.querySelectorAll('article.card img')].filter(i => i.naturalWidth > 0).length") == 10
        page.show(route(view="rejects", q="umbrell"))
        assert page.keys() == []


def test_the_public_nlvr2_release_is_searched_filtered_sorted_and_linked(releases, tmp_path):
    folder = releases["nlvr2 public"]
    examples = pq.read_table(os.path.join(folder, "parquet", "examples"))
    explorer = os.path.join(folder, "explorer")
    with Explorer(folder, tmp_path) as page:
        view = page.index["views"][0]
        assert view["table"] == "examples" and view["rows"] == examples.num_rows == 13949
        for load in ("first load", "reload"):   # a fresh browser's first page, then again
            page.show("", screenshot="nlvr2-public.png")
            assert page.cards == PAGE_SIZE and page.text("status").startswith("13,949 of 13,949")
            TIMINGS[f"nlvr2 public, {load}: first contentful paint, ms"] = round(page.run(
                "performance.getEntriesByName('first-contentful-paint')[0].startTime"))
            TIMINGS[f"nlvr2 public, {load}: first cards drawn, ms"] = round(page.run(
                "performance.getEntriesByName('explorer-first-cards')[0].startTime"))

        # a search typed into the box: the rows whose texts hold both words
        words = "two dogs"
        page.run(f"(() => {{ const q = document.getElementById('q'); q.focus(); q.value = {json.dumps(words)};"
                 "q.dispatchEvent(new Event('input')); })()")
        took = page.run("""new Promise(done => {
            const start = performance.now();
            document.getElementById('search').requestSubmit();
            const check = () => document.body.dataset.ready === '1' && location.hash.includes('q=')
              ? requestAnimationFrame(() => done(performance.now() - start)) : requestAnimationFrame(check);
            requestAnimationFrame(check); })""")
        TIMINGS["nlvr2 public: a search's result (its index columns loaded on the way), ms"] = round(took)
        page.wait(route(view="examples", q=words))
        expected = _searched(explorer, view, words)
        assert page.text("status").startswith(f"{len(expected):,} of 13,949")
        assert page.keys() == expected[:PAGE_SIZE] and len(expected) > PAGE_SIZE
        page.screenshot("nlvr2-search.png")

        # whole words by default ("dog" is not in "dogs"); inside words when ticked
        page.show(route(view="examples", q="dog"))
        whole = _searched(explorer, view, "dog")
        assert page.text("status").startswith(f"{len(whole):,} of 13,949")
        page.run("document.getElementById('sub').click()")
        page.wait(route(view="examples", q="dog", sub="1"))
        inside = _searched(explorer, view, "dog", inside=True)
        assert page.text("status").startswith(f"{len(inside):,} of 13,949") and len(inside) > len(whole)
        assert page.keys() == inside[:PAGE_SIZE]
        marks = page.run("[...document.querySelectorAll('article.card mark')].map(m => m.textContent.toLowerCase())")
        assert marks and set(marks) == {"dog"}
        page.show(route(view="examples", q='"two dogs" left'))   # a phrase, then a word
        phrase = _searched(explorer, view, '"two dogs" left')
        assert page.text("status").startswith(f"{len(phrase):,} of 13,949") and 0 < len(phrase) < len(expected)
        took = page.run("""new Promise(done => {
            const start = performance.now(), q = document.getElementById('q');
            q.value = 'red'; document.getElementById('search').requestSubmit();
            const check = () => document.body.dataset.ready === '1' && location.hash.includes('q=red')
              ? requestAnimationFrame(() => done(performance.now() - start)) : requestAnimationFrame(check);
            requestAnimationFrame(check); })""")
        TIMINGS["nlvr2 public: another search's result (the columns in memory), ms"] = round(took)

        # filters chosen in the menus, then a range and a sort: as the Parquet files say
        page.show(route(view="examples"))
        for column, value, expect in (("split", "test1", {"f.split": "test1"}),
                                      ("label", "1", {"f.label": "1", "f.split": "test1"})):
            page.run(f"(() => {{ const s = document.querySelector('select[data-facet={column}]');"
                     f"s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()")
            page.wait(route(view="examples", **dict(sorted(expect.items()))))
        chosen = examples.filter(pc.and_(pc.equal(examples["split"], "test1"), pc.equal(examples["label"], 1)))
        assert page.text("status").startswith(f"{chosen.num_rows:,} of 13,949")
        assert set(page.keys()) <= set(chosen["identifier"].to_pylist())
        page.screenshot("nlvr2-filter.png")
        ranged = route(view="examples", **{"f.label": "1", "f.split": "test1", "max.extra_agreeing": "3"},
                       sort="-extra_agreeing")
        page.show(ranged)
        kept = chosen.filter(pc.less_equal(chosen["extra_agreeing"], 3))
        assert page.text("status").startswith(f"{kept.num_rows:,} of 13,949")
        shown = page.run("[...document.querySelectorAll('article.card')].map(c => [...c.querySelectorAll('dl div')]"
                         ".filter(d => d.firstChild.textContent === 'extra_agreeing')[0].lastChild.textContent)")
        assert [int(v) for v in shown] == sorted(kept["extra_agreeing"].to_pylist(), reverse=True)[:PAGE_SIZE]

        # a link to one row opens its card and the row whole, and from it the row in its place
        row = examples.slice(10000, 1).to_pylist()[0]
        page.show(route(view="examples", row=row["identifier"]), screenshot="nlvr2-row.png")
        assert page.keys() == [row["identifier"]]
        assert row["sentence"] in page.text("results")
        _row_is_whole(page, folder, examples, row)
        page.run("document.getElementById('place').click()")
        page.browser.wait("document.body.dataset.ready === '1' && location.hash.includes('mark=')")
        assert page.run("document.querySelector('article.card.marked').dataset.key") == row["identifier"]

        page.show(route(view="examples", tab="stats"), screenshot="nlvr2-stats.png")
        assert page.run("document.querySelectorAll('table.stats tr').length") == examples.num_columns + 1
        page.no_foreign_images()


def _row_is_whole(page, folder, examples, row) -> None:
    """The row view shows every column of the row as its Parquet file holds it, links
    the file and row it is in (read back here) and its compat/ lines (read back too),
    and the label with its ClassLabel name."""
    cells = page.run("Object.fromEntries([...document.querySelectorAll('#row tr')].map("
                     "r => [r.dataset.column, r.lastChild.textContent]))")
    assert list(cells) == examples.column_names
    for column in ("validator", "set_id", "pair", "sentence", "left_path"):
        assert cells[column] == ("no value" if row[column] is None else str(row[column])), column
    assert cells["extra_workers"] == json.dumps(row["extra_workers"])
    assert cells["label"] == f"{row['label']} ({['False', 'True'][row['label']]})"
    link = page.run("document.querySelector('#parquet a').getAttribute('href')")
    number = int(page.text("parquet").split(", row ")[1].split()[0].replace(",", ""))
    assert link.startswith("../parquet/examples/")
    located = pq.read_table(os.path.join(folder, "explorer", link)).slice(number, 1)
    assert located["identifier"].to_pylist() == [row["identifier"]]
    entries = page.run("[...document.querySelectorAll('#compat a')].map(a => [a.getAttribute('href'), "
                       "a.nextSibling.textContent.trim()])")
    assert f"../compat/{row['split']}.json" in [e[0] for e in entries]
    for href, where in entries:
        line = int(where.split()[1])
        with open(os.path.join(folder, "explorer", href)) as f:
            assert json.loads(f.readlines()[line - 1])["identifier"] == row["identifier"]
    label = page.run("[...document.querySelectorAll('article.card dl div')].filter("
                     "d => d.firstChild.textContent === 'label')[0].lastChild.textContent")
    assert label == cells["label"]


def _searched(explorer, view, words, inside=False) -> list:
    """The keys of the rows whose searched texts (the index's text columns) hold every
    word or "quoted phrase", as the page searches: case folded, whole words (not inside a
    longer word), or anywhere in the text when `inside` or for a pasted id or hash (a
    word of six characters or more holding a digit)."""
    texts = [index_column(explorer, view, c["name"]) for c in view["index"]["columns"] if c["kind"] == "text"]
    keys = index_column(explorer, view, view["key"])
    phrases = [(r"\s+".join(map(re.escape, (quoted or word).split())),   # "a phrase", or a word
                bool(word) and len(word) >= 6 and any(ch.isdigit() for ch in word))
               for quoted, word in re.findall(r'"([^"]+)"|(\S+)', words)]
    terms = [re.compile(p if inside or pasted else rf"(?<!\w){p}(?!\w)", re.IGNORECASE) for p, pasted in phrases]
    return [keys[i] for i in range(view["rows"])
            if all(t.search("\n".join(str(c[i]) for c in texts if c[i] is not None)) for t in terms)]


@pytest.mark.parametrize("name, setting", [("vsr", "seed"), ("imagecode", "mining.distance_threshold")])
def test_the_changes_since_the_previous_version_render(releases, name, setting, tmp_path):
    """VSR with another seed (rows removed, added, moved), ImageCoDe with another
    distance threshold (sets that kept their name, not their frames: now and before)."""
    folder = releases[f"{name} 1.1.0"]
    with Explorer(folder, tmp_path) as page:
        diff = page.index["diff"]
        assert diff["from"] == "1.0.0" and {c["key"] for c in diff["config"]} == {setting}
        page.show("changes", screenshot=f"{name}-changes.png")
        assert "Config change 1.0.0 → 1.1.0" in page.text("main") and setting in page.text("main")
        assert page.text("compared").startswith(f"Compared with {name} 1.0.0, the previous version in this folder "
                                                "(built from the generated sample; this one from the generated sample)")
        shown = [(t, kind, count) for t in diff["tables"] for kind, count in t["counts"].items() if count]
        assert shown, "the other setting changes the release"
        for table, kind, count in shown:
            page.show(route(view=table["table"], diff=kind), screenshot=f"{name}-diff-{table['table']}-{kind}.png")
            assert page.cards == min(PAGE_SIZE, count), (table["table"], kind)
            if kind == "changed" and name == "imagecode":   # every changed set shows its frames before
                assert page.run("document.querySelectorAll('.images.before').length") == page.cards
            if kind == "changed":   # and which fields changed, each before and now
                fields = page.run("[...document.querySelectorAll('article.card')].map(c => [...c.querySelectorAll("
                                  "'table.changes tr[data-field]')].map(r => r.dataset.field))")
                assert len(fields) == page.cards and all(fields), fields
                assert "image_paths" in fields[0] if name == "imagecode" else True
            page.no_foreign_images()


def test_a_release_of_real_data_is_not_compared_with_a_sample(releases, tmp_path):
    """The public NLVR2 re-release, built beside the sample's 1.0.0: the changes view
    names that version and refuses to compare them; no table offers its changes."""
    with Explorer(releases["nlvr2 public"], tmp_path) as page:
        diff = page.index["diff"]
        assert (diff["from"], diff["to"], diff["tables"]) == ("1.0.0", "2.0.0", [])
        page.show("changes", screenshot="nlvr2-public-changes.png")
        assert page.text("compared").startswith("Compared with nlvr2 1.0.0, the previous version in this folder "
                                                "(built from the generated sample; this one from real inputs)")
        assert "compares none of them" in page.text("refused")
        assert "(not compared)" in page.text("nav")
        page.show(route(view="examples"))
        assert page.run("document.querySelectorAll('.tabs .change').length") == 0
