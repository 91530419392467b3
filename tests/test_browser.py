"""The published site in a real browser: Debian's chromium, driven headless by Playwright.

Two real runs (the ``latency`` case with a budget too short for it, then with the default one;
beside it the ``garbage`` fixture adapter, whose errors carry ``<script>`` tags) are published and
opened from disk. Every filter is used and checked against ``data/cells.json``, the filter state
survives a reload from the URL, a cell link is followed and back, the changes page links to both
runs' evidence, a hostile error string stays text, the page fits a phone's width, and no page logs a
console error. Screenshots are kept in ``$MCPCM_ARTIFACTS`` (default ``.artifacts/browser/``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from .conftest import REPO, Checkout

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("MCPCM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("MCPCM_ARTIFACTS") or REPO / ".artifacts" / "browser")
SELECTION = ["--adapter", "raw-jsonrpc", "--adapter", "garbage", "--case", "latency", "--case", "ok",
             "--case", "type-swap", "--transport", "stdio", "--protocol", "2025-11-25", "--jobs", "2"]  # fmt: skip
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    scratch = Checkout(tmp_path_factory.mktemp("browser") / "checkout", ["raw-jsonrpc", "garbage"])
    # latency answers after 2 s: at a tenth of the budget its cells time out however loaded the machine
    # is (the other cases are left out of the short run: at that budget they could time out too)
    short = ["--adapter", "raw-jsonrpc", "--adapter", "garbage", "--case", "latency", "--transport", "stdio"]
    scratch.harness("run", *short, "--protocol", "2025-11-25", "--budget-scale", "0.1", "--run-id", "a-short")
    scratch.harness("run", *SELECTION, "--run-id", "b-default")
    scratch.harness("publish", "--out", str(scratch.root / "site"))
    return scratch.root / "site"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).is_file(), f"no chromium at {CHROMIUM}: apt-get install chromium (or set MCPCM_CHROMIUM)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    problems: list[str] = []
    opened.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    opened.on("pageerror", lambda error: problems.append(str(error)))
    opened.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    opened.on("request", lambda request: None if request.url.startswith("file://") else problems.append(request.url))
    yield opened
    context.close()
    assert problems == [], "console errors, dialogs or network requests"


def _count(page) -> str:
    return page.locator("#f-count").inner_text()


def test_the_index_lists_both_runs_and_the_changes_page_links_both_runs_evidence(site, page):
    page.goto((site / "index.html").as_uri())
    assert page.locator("table.runs tbody tr").count() == 2
    page.screenshot(path=str(ARTIFACTS / "site-index.png"), full_page=True)
    page.click("text=since a-short")
    assert "timeout → pass" in page.inner_text("main")
    page.screenshot(path=str(ARTIFACTS / "changes.png"), full_page=True)
    page.click("a:text('after') >> nth=0")
    assert "/runs/b-default/cells/" in page.url and "latency" in page.url
    page.go_back()
    assert page.url.endswith("changes/a-short..b-default.html")


def test_every_filter_of_the_matrix_agrees_with_cells_json(site, page):
    report = site / "runs" / "b-default"
    cells = [c for c in json.loads((report / "data" / "cells.json").read_text()) if c["kind"] != "framework"]
    page.goto((report / "index.html").as_uri())
    cases = sorted({c["case"] for c in cells})
    assert page.locator("#overview a.m").count() == len(cells), "one mark per cell"
    for outcome in {c["outcome"] for c in cells}:
        assert page.locator(f"#overview a.m.o-{outcome}").count() == sum(c["outcome"] == outcome for c in cells)
    assert _count(page).startswith(f"{len(cases)} of {len(cases)} cases")
    page.screenshot(path=str(ARTIFACTS / "matrix.png"), full_page=True)

    page.select_option("#f-outcome", "reject")
    rejected = sorted({c["case"] for c in cells if c["outcome"] == "reject"})
    shown = page.locator("#overview tbody tr:not(.hidden) th").all_inner_texts()
    assert sorted(shown) == rejected and "outcome=reject" in page.url
    page.select_option("#f-outcome", "")

    page.fill("#f-search", "latency")
    assert page.locator("#overview tbody tr:not(.hidden) th").all_inner_texts() == ["latency"]
    assert _count(page).startswith(f"1 of {len(cases)} cases") and "q=latency" in page.url
    page.fill("#f-search", "")

    page.check("#f-disagree")
    disagreeing = {
        c["case"]
        for c in cells
        if len({d["outcome"] for d in cells if (d["case"], d["schema"]) == (c["case"], c["schema"])}) > 1
    }
    assert set(page.locator("#overview tbody tr:not(.hidden) th").all_inner_texts()) == disagreeing
    page.check("#f-group")
    page.select_option("#f-family", "schema")
    assert "disagree=1" in page.url and "group=1" in page.url and "family=schema" in page.url

    page.reload()  # the state comes back from the URL
    assert page.is_checked("#f-disagree") and page.is_checked("#f-group")
    assert page.input_value("#f-family") == "schema"
    assert set(page.locator("#overview tbody tr:not(.hidden) th").all_inner_texts()) == disagreeing
    page.screenshot(path=str(ARTIFACTS / "matrix-filtered.png"), full_page=True)

    filtered = page.url
    page.click("#overview tbody tr:not(.hidden) a.m >> nth=0")
    assert "/cells/" in page.url and page.locator("h1").count() == 1
    page.go_back()
    assert page.url == filtered and page.is_checked("#f-disagree")


def test_a_hostile_error_string_stays_text(site, page):
    page.goto((site / "runs" / "b-default" / "index.html").as_uri())
    page.click("#detail-rows summary")
    assert page.locator("script").count() == 1, "only the page's own matrix.js"
    page.click("details.errors summary >> nth=0")
    assert "<script>alert(" in page.inner_text("main"), "shown as text"
    evidence = next((site / "runs" / "b-default" / "cells").glob("garbage--default--ok--advertised*.html"))
    page.goto(evidence.as_uri())
    assert page.locator("script").count() == 0 and "<script>alert(" in page.inner_text("main")


def test_the_matrix_fits_a_phone(site, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    phone = context.new_page()
    phone.goto((site / "runs" / "b-default" / "index.html").as_uri())
    width = phone.evaluate("document.documentElement.scrollWidth")
    phone.screenshot(path=str(ARTIFACTS / "matrix-phone.png"), full_page=False)
    context.close()
    assert width <= 390, "the tables scroll inside their boxes, not the page"
