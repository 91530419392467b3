"""``python -m harness publish``: a static site of real runs, with history, changes and badges.

Two real runs of the same cells whose outcomes differ (the ``latency`` case with a budget too short
for its 2 s delay, then with the default one) make a site that lists both, links the second to its
changes (``timeout → pass``, with each cell's evidence before and after), names the client version
that changed, and has a Shields badge per column; every link is relative and resolves inside the
site, so it works from ``file://``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import Checkout

SELECTION = ["--adapter", "raw-jsonrpc", "--case", "latency", "--transport", "stdio", "--protocol", "2025-11-25"]
"""The case answers after 2 s: at a tenth of the budget (a 1.8 s client timeout) its cells time out
however loaded the machine is, at the whole budget they pass."""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    scratch = Checkout(tmp_path_factory.mktemp("publish") / "checkout", ["raw-jsonrpc"])
    scratch.harness("run", *SELECTION, "--budget-scale", "0.1", "--run-id", "a-short")
    scratch.harness("run", *SELECTION, "--run-id", "b-default")
    # the second run as if its client had been upgraded: the version is what the page must name
    meta_path = scratch.root / "results" / "b-default" / "meta.json"
    meta = json.loads(meta_path.read_text())
    assert meta["adapters"]["raw-jsonrpc"]["runtime_version"] != "3.99.0"
    meta["adapters"]["raw-jsonrpc"]["runtime_version"] = "3.99.0"
    meta_path.write_text(json.dumps(meta))
    done = scratch.harness("publish", "--out", str(scratch.root / "site"))
    assert "(2 runs, latest b-default)" in done.stderr
    return scratch, scratch.root / "site"


def test_the_index_lists_every_run_newest_first_with_versions_counts_and_changes(site):
    _, out = site
    index = json.loads((out / "index.json").read_text())
    assert index["latest"] == "b-default" and [r["run_id"] for r in index["runs"]] == ["b-default", "a-short"]
    newest, oldest = index["runs"]
    assert newest["predecessor"] == "a-short" and newest["changes"] == "changes/a-short..b-default.html"
    assert oldest["predecessor"] is None and oldest["changes"] is None
    assert newest["outcomes"] == {"pass": 2} and oldest["outcomes"] == {"timeout": 2}
    assert newest["clients"]["raw-jsonrpc"]["runtime_version"] == "3.99.0"
    assert (out / "runs" / "a-short" / "index.html").is_file() and (out / "latest" / "index.html").is_file()
    assert "b-default" in (out / "latest" / "index.html").read_text()
    page = (out / "index.html").read_text()
    assert 'href="runs/b-default/index.html"' in page and 'href="changes/a-short..b-default.html"' in page


def test_the_changes_page_groups_cells_by_transition_and_names_the_version_that_changed(site):
    scratch, out = site
    page = (out / "changes" / "a-short..b-default.html").read_text()
    assert "2 cells in both runs; 2 changed" in page
    before = json.loads((scratch.root / "results" / "a-short" / "meta.json").read_text())
    runtime = before["adapters"]["raw-jsonrpc"]["runtime_version"]
    assert f"raw-jsonrpc runtime {runtime} → 3.99.0: 2 cells timeout → pass" in page
    assert page.count("timeout → pass") == 2, "the headline and the one transition row"
    keys = re.findall(r'href="\.\./runs/b-default/cells/([^"]+)\.html"', page)
    assert sorted(keys) == [
        f"raw-jsonrpc--default--latency--{mode}--stdio--2025-11-25" for mode in ("advertised", "hidden")
    ]


def test_badges_are_shields_endpoint_json_per_column(site):
    _, out = site
    badge = json.loads((out / "badges" / "raw-jsonrpc.json").read_text())
    assert badge == {"schemaVersion": 1, "label": "raw-jsonrpc", "message": "2/2 pass", "color": "informational"}


def test_every_link_is_relative_and_resolves_inside_the_site(site):
    _, out = site
    pages = [p for p in out.rglob("*.html")]
    assert len(pages) > 10
    for page in pages:
        text = page.read_text()
        assert not re.search(r'(?:src|href)="(?:https?:)?//[^"]*\.(?:css|js)', text), (
            f"{page}: a resource from the network"
        )
        for target in re.findall(r'(?:src|href)="([^"#?]+)"', text):
            if target.startswith(("http://", "https://")):
                continue
            assert (page.parent / target).resolve().is_file(), f"{page.relative_to(out)}: {target} is not in the site"


def test_keep_publishes_the_newest_runs_and_replaces_the_site_whole(site):
    scratch, _ = site
    other = scratch.root / "site-one"
    scratch.harness("publish", "--out", str(other))
    assert (other / "runs" / "a-short").is_dir()
    scratch.harness("publish", "--out", str(other), "--keep", "1")
    assert [r["run_id"] for r in json.loads((other / "index.json").read_text())["runs"]] == ["b-default"]
    assert not (other / "runs" / "a-short").exists(), "the old site is replaced, not added to"
    assert not list((other / "changes").iterdir())
    assert not [p.name for p in other.parent.iterdir() if p.name.startswith(".site-one")], "no staging left"


def test_no_finished_run_is_one_line_and_nothing_is_written(tmp_path: Path):
    scratch = Checkout(tmp_path / "checkout", ["raw-jsonrpc"])
    done = scratch.harness("publish", "--out", str(tmp_path / "site"), check=False)
    assert done.returncode == 2 and done.stderr.startswith("error: publish: no finished run"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "site").exists()
