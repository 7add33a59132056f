"""The Neo4j Browser as a person sees it: the real Browser that the Neo4j server serves,
driven in headless Chromium (Debian's ``chromium``) by Playwright. It logs in, loads
``cypher/browse/hippo.grass``, pastes each saved query file whole, runs it, and reads what
the page shows: predicate captions on fact edges, scores on synonym edges, one caption per
label, tables without float arrays, the counts the overview promises.

``HIPPO_BROWSER_SCREENSHOT=docs/browser.png`` also saves the styled graph there (the README's
picture). Needs ``NEO4J_BROWSER_URL`` (printed by ``scripts/neo4j start``); under ``CI`` a
missing piece fails the test instead of skipping it.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from hippo import Memory
from hippo.store.neo4j import Neo4jStore, cypher_dir

pytestmark = [pytest.mark.neo4j, pytest.mark.browser]

CHROMIUM = os.environ.get("HIPPO_CHROMIUM", "/usr/bin/chromium")
# Chromium on a closed network: no background fetches, no first-run work (see the machine notes).
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
BROWSE = cypher_dir() / "browse"
# Eight or more decimals in a row inside brackets: an embedding leaking into a view.
FLOAT_ARRAY = re.compile(r"\[\s*-?\d+\.\d+(?:e-?\d+)?(?:\s*,\s*-?\d+\.\d+(?:e-?\d+)?){7,}")
TIMEOUT_MS = 90_000


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser_url(neo4j_server) -> str:
    url = os.environ.get("NEO4J_BROWSER_URL")
    if not url:
        _missing("no NEO4J_BROWSER_URL: start Neo4j with scripts/neo4j (it prints the Browser URL)")
    if not shutil.which(CHROMIUM):
        _missing(f"no Chromium at {CHROMIUM}: apt-get install chromium")
    return url


@pytest.fixture(scope="module")
def sample_graph(neo4j_server, neo4j_wipe, embedder, sample_corpus) -> Iterator[Neo4jStore]:
    """The sample documents the saved queries' examples are about (the tide-clock and its makers)."""
    neo4j_wipe()
    store = Neo4jStore(neo4j_server["uri"], neo4j_server["user"], neo4j_server["password"])
    about = [d for d in sample_corpus if re.search("südhof|tide-clock", d["title"] + d["text"], re.IGNORECASE)]
    with Memory(store, embedder=embedder) as memory:
        memory.index(about)
        yield store


@pytest.fixture(scope="module")
def page(browser_url, neo4j_server, sample_graph) -> Iterator[object]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install -e '.[dev]')")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(browser_url)
            # The URL carries the connect URL and the user; the password is the one scripts/neo4j printed.
            assert page.input_value('[data-testid="username"]') == neo4j_server["user"]
            page.fill('[data-testid="password"]', neo4j_server["password"])
            page.click('[data-testid="connect"]')
            page.wait_for_selector("text=You are connected as user")
            yield page
        finally:
            browser.close()


def _run_pasted(page, text: str):
    """Paste ``text`` into the editor the way a person pastes a file, run it, and return its frame."""
    frames = page.locator('[data-testid="frame"]')
    before = frames.count()
    page.locator('[data-testid="activeEditor"] textarea').focus()
    page.evaluate("""(text) => {
        const area = document.querySelector('[data-testid="activeEditor"] textarea');
        const data = new DataTransfer();
        data.setData('text/plain', text);
        area.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true, cancelable: true}));
    }""", text)
    page.keyboard.press("Control+Enter")
    page.wait_for_function("n => document.querySelectorAll('[data-testid=\"frame\"]').length > n", arg=before)
    return frames.first  # the newest frame is on top


def _loaded(frame) -> str:
    contents = frame.locator('[data-testid="frame-loaded-contents"]')
    contents.wait_for()
    assert frame.locator('[data-testid="cypherFrameErrorMessage"]').count() == 0, frame.inner_text()
    return contents.inner_text()


def _views(frame) -> dict[str, str]:
    """What the table and the text view of a result frame show."""
    shown = {}
    for view, testid in (("table", "cypherFrameSidebarTable"), ("text", "cypherFrameSidebarAscii")):
        frame.locator(f'[data-testid="{testid}"]').click()
        shown[view] = _loaded(frame)
    return shown


def _captions(frame, kind: str) -> list[str]:
    frame.locator('[data-testid="cypherFrameSidebarVisualization"]').click()  # new frames open in the last view
    frame.locator(f"svg g.{kind} text").first.wait_for()  # the layout draws after the frame loads
    return [" ".join(t.split()) for t in frame.locator(f"svg g.{kind} text").all_text_contents() if t.strip()]


def test_the_saved_queries_read_well_in_the_browser(page, sample_graph):
    style = _run_pasted(page, ":style " + (BROWSE / "hippo.grass").read_text(encoding="utf-8"))
    shown = style.locator("pre")  # the Browser shows the style it now uses
    shown.wait_for()
    assert "relationship.RELATES" in shown.inner_text() and "{predicate}" in shown.inner_text()

    files = sorted(BROWSE.glob("*.cypher"))
    assert {f.stem for f in files} == {"overview", "hubs", "entity_neighbourhood", "passages_mentioning",
                                       "passage_facts", "why_recalled"}
    counts = sample_graph.counts()
    for path in files:
        frame = _run_pasted(page, path.read_text(encoding="utf-8"))
        _loaded(frame)
        # One statement per file: a pasted file shows its result, not a multi-statement summary.
        assert "SUCCESS" not in frame.inner_text(), f"{path.name} ran as a script"
        if path.stem in ("entity_neighbourhood", "why_recalled"):
            relationships, nodes = _captions(frame, "relationship"), _captions(frame, "node")
            assert relationships and "RELATES" not in relationships, (path.name, relationships)
        if path.stem == "entity_neighbourhood":
            assert any(re.fullmatch(r"≈ 0\.\d+", c) for c in relationships), relationships  # SYNONYM by score
            assert any(c not in ("mentions", "has") and not c.startswith("≈") for c in relationships)  # predicates
            # One name, three kinds of node, three captions.
            assert {"Tide-clock", "¶ Tide-clock", "doc Tide-clock"} <= set(nodes), nodes
            target = os.environ.get("HIPPO_BROWSER_SCREENSHOT")
            if target:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
                frame.screenshot(path=target)
        views = _views(frame)
        for view, text in views.items():
            assert not FLOAT_ARRAY.search(text), f"{path.name}: floats in the {view} view"
        table = views["table"]
        if path.stem == "overview":
            for kind, key in (("Entity", "entities"), ("RELATES", "facts"), ("MENTIONS", "mentions"),
                              ("SYNONYM", "synonyms")):
                assert re.search(rf'"{kind}"\s+{counts[key]}\b', table), (kind, counts[key], table)
        if path.stem == "passage_facts":
            assert re.search(r"subject\s+predicate\s+object", table) and "Tobiah Südhof" in table, table[:300]
