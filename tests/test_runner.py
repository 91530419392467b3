"""Failure containment: a hanging, a crashing and a garbage-writing adapter, beside a real one; and on HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Checkout


def test_bad_adapters_are_contained(checkout):
    scratch = checkout("raw-jsonrpc", "hang", "crash", "garbage")
    scratch.harness(
        "run",
        "--run-id",
        "faults",
        "--case",
        "ok",
        "--case",
        "type-swap",
        "--budget-scale",
        "0.1",
        "--jobs",
        "2",
        "--transport",
        "stdio",
        "--protocol",
        "2025-11-25",
    )
    rows = scratch.rows("faults")
    assert len(rows) == 4 * 2 * 2
    for case in ("ok", "type-swap"):
        for schema in ("advertised", "hidden"):
            hang = rows[("hang", case, schema)]
            assert hang["outcome"] == "timeout" and hang["timeout_by"] == "harness"
            assert rows[("crash", case, schema)]["outcome"] == "crash"
            assert "exited with code 1" in rows[("crash", case, schema)]["error_message"]
            garbage = rows[("garbage", case, schema)]
            assert garbage["outcome"] == "harness-error"
            assert "invalid observation" in garbage["error_message"]
            assert "observation.raw.json: not valid JSON" in garbage["error_message"]
            assert rows[("raw-jsonrpc", case, schema)]["outcome"] == "pass"
    for record in scratch.records("faults"):
        if record["adapter"] == "hang":  # killed at its budget, not after the hang
            assert record["process"]["wall_ms"] < record["budget_ms"] + 10_000, record["key"]
    assert scratch.processes_left() == [], "the hanging adapter and the server it started are gone"


def test_timeout_kills_a_server_that_left_the_process_group(checkout):
    scratch = checkout("hang")
    scratch.harness("run", "--run-id", "hang", "--case", "ok", "--budget-scale", "0.05")
    [record, *_] = scratch.records("hang")
    assert record["process"]["timed_out"] is True
    assert record["process"]["stragglers_killed"] >= 1, "the server ran in its own session and was found"
    journal_events = [event["event"] for event in record["journal"]]
    assert journal_events[0] == "start"
    assert scratch.processes_left() == []


def test_a_selected_adapter_without_cells_needs_no_environment(checkout):
    scratch = checkout("raw-jsonrpc", "schema-only")
    scratch.harness("run", "--run-id", "protocol", "--case", "version-mismatch")
    records = scratch.records("protocol")
    assert records and {r["adapter"] for r in records} == {"raw-jsonrpc"}
    meta = json.loads((scratch.root / "results" / "protocol" / "meta.json").read_text())
    assert meta["adapters"]["schema-only"]["package_version"] is None


@pytest.fixture(scope="module")
def http_faults(tmp_path_factory):
    """One run of the HTTP test doubles: an adapter that hangs after initialize, one that crashes."""
    scratch = Checkout(tmp_path_factory.mktemp("http") / "checkout", ["hang-http", "crash-http"])
    selection = ("--case", "ok", "--protocol", "2025-11-25", "--budget-scale", "0.05")
    scratch.harness("run", "--run-id", "http", *selection, "--jobs", "2")
    records = {(r["adapter"], r["schema"]): r for r in scratch.records("http")}
    return scratch, records, scratch.rows("http", transport="http-json")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def test_an_http_cell_that_hangs_is_killed_with_its_server(http_faults):
    scratch, records, rows = http_faults
    assert set(records) == {(a, s) for a in ("hang-http", "crash-http") for s in ("advertised", "hidden")}
    assert {r["transport"] for r in records.values()} == {"http-json"}
    for schema in ("advertised", "hidden"):
        hang = rows[("hang-http", "ok", schema)]
        assert hang["outcome"] == "timeout" and hang["timeout_by"] == "harness", schema
        assert records[("hang-http", schema)]["process"]["timed_out"] is True
        assert records[("hang-http", schema)]["process"]["wall_ms"] < 10_000, "killed at its 1.5 s budget"
        crash = rows[("crash-http", "ok", schema)]
        assert crash["outcome"] == "crash" and "exited with code 1" in crash["error_message"], schema
    for (adapter, schema), record in records.items():
        start = record["journal"][0]
        assert start["event"] == "start" and start["transport"] == "http-json", (adapter, schema)
        assert not _alive(start["pid"]), (adapter, schema, "the harness's HTTP server is stopped")
        if adapter == "hang-http":
            methods = [e.get("method") for e in record["journal"] if e["event"] == "recv"]
            assert methods == ["initialize"], (schema, "the adapter reached the harness's server, then hung")
    assert scratch.processes_left() == [], "the hanging adapter, its child and the HTTP server are gone"


def test_the_harness_stops_its_http_server_gracefully(http_faults):
    """The server gets SIGTERM and journals its exit (architecture.md); it is not swept as a straggler."""
    _, records, _ = http_faults
    for key, record in records.items():
        assert record["journal"][-1]["event"] == "exit", key
        if key[0] == "crash-http":  # started nothing: nothing for the sweep to find
            assert record["process"]["stragglers_killed"] == 0, key
