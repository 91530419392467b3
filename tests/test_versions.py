"""Versions as data: ``run --with ADAPTER@VERSION`` runs the adapter at another release of its
package, as a column of its own, with its dependencies as the registry had them at that release.

The sweep is real: the TypeScript SDK at 1.29.0 and 1.30.0 (from the npm registry), the same
cells; 1.30.0 is the release that brought its 10 MiB stdio buffer limit (docs/publishing.md), and the
report's "behaviour changed in" page lists that change.
"""

from __future__ import annotations

import json

import pytest

from .conftest import Checkout

OLD, NEW = "1.29.0", "1.30.0"


@pytest.mark.slow
def test_a_sweep_runs_each_release_as_its_own_column_and_reports_what_changed(tmp_path):
    scratch = Checkout(tmp_path / "checkout", ["ts-sdk"])
    scratch.harness("run", "--with", f"ts-sdk@{OLD},{NEW}", "--case", "ok", "--case", "text-12mib",
                    "--transport", "stdio", "--protocol", "2025-11-25", "--run-id", "sweep", timeout=900)  # fmt: skip
    records = scratch.records("sweep")
    assert {r["adapter"] for r in records} == {f"ts-sdk@{OLD}", f"ts-sdk@{NEW}"}, "only the swept columns"
    meta = json.loads((scratch.root / "results" / "sweep" / "meta.json").read_text())
    assert {name: info["package_version"] for name, info in meta["adapters"].items()} == {
        f"ts-sdk@{OLD}": OLD,
        f"ts-sdk@{NEW}": NEW,
    }, "the version installed, read from the environment"
    release = json.loads((scratch.root / ".envs" / "versions" / f"ts-sdk@{OLD}" / "release.json").read_text())
    assert release["released"].startswith("2026-03-30") and release["resolved_before"] > release["released"]
    outcomes = {(r["adapter"], r["variant"], r["case"], r["schema"]): r for r in records}
    for version in (OLD, NEW):
        assert (
            outcomes[(f"ts-sdk@{version}", "call-only", "ok", "advertised")]["observation"]["calls"][0]["status"]
            == "returned"
        )
    scratch.cli("report", "--run", "sweep")
    page = (scratch.root / "reports" / "versions.html").read_text()
    assert f"ts-sdk/call-only <small>@modelcontextprotocol/sdk: {OLD}, {NEW}</small>" in page
    assert "1.30.0: pass → disconnect" in page.split("ts-sdk/call-only")[1].split("<h2>")[0], "12 MiB, from 1.30.0 on"
    assert "ts-sdk/maxbuf-32mib" in page and "No cell's outcome changed" in page.split("ts-sdk/maxbuf-32mib")[1]
    assert 'href="versions.html"' in (scratch.root / "reports" / "index.html").read_text()
    assert scratch.processes_left() == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--with", "ts-sdk"], "expected ADAPTER@VERSION"),
        (["--with", "nope@1.0.0"], "unknown adapter 'nope'"),
        (["--with", "raw-jsonrpc@1.0.0"], "raw-jsonrpc installs no package to pin"),
        (["--with", "ts-sdk@0.0.999"], "cannot find @modelcontextprotocol/sdk 0.0.999"),
        (["--with", f"ts-sdk@{NEW}", "--backend", "docker"], "local backend only"),
    ],
    ids=["no-version", "unknown", "no-package", "no-such-release", "docker"],
)
def test_bad_versions_are_one_line_and_nothing_is_written(tmp_path, args, needle):
    scratch = Checkout(tmp_path / "checkout", ["ts-sdk", "raw-jsonrpc"])
    done = scratch.harness("run", *args, "--case", "ok", "--run-id", "bad", check=False, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], done.stderr
    assert not (scratch.root / "results" / "bad").exists()


@pytest.mark.slow
def test_a_run_of_an_older_release_then_the_pinned_one_publish_their_transitions(tmp_path):
    scratch = Checkout(tmp_path / "checkout", ["ts-sdk"])
    selection = ["--case", "ok", "--case", "text-12mib", "--transport", "stdio", "--protocol", "2025-11-25"]
    scratch.harness("run", "--with", f"ts-sdk@{OLD}", *selection, "--run-id", "older", timeout=900)
    scratch.harness("run", "--adapter", "ts-sdk", *selection, "--run-id", "pinned", timeout=900)
    scratch.harness("publish", "--out", str(scratch.root / "site"))
    index = json.loads((scratch.root / "site" / "index.json").read_text())
    assert [run["run_id"] for run in index["runs"]] == ["pinned", "older"]
    pinned = index["runs"][0]["clients"]["ts-sdk"]["version"]
    page = (scratch.root / "site" / "changes" / "older..pinned.html").read_text()
    assert f"ts-sdk @modelcontextprotocol/sdk {OLD} → {pinned}: 3 cells pass → disconnect" in page, "matched by name"
    assert f'href="../runs/older/cells/ts-sdk@{OLD}--call-only--text-12mib--none--stdio--2025-11-25.html"' in page
    assert 'href="../runs/pinned/cells/ts-sdk--call-only--text-12mib--none--stdio--2025-11-25.html"' in page
