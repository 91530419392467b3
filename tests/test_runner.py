"""Failure containment: a hanging, a crashing and a garbage-writing adapter, beside a real one."""

from __future__ import annotations

import json
import time


def test_bad_adapters_are_contained(checkout):
    scratch = checkout("raw-jsonrpc", "hang", "crash", "garbage")
    started = time.monotonic()
    scratch.harness("run", "--run-id", "faults", "--case", "ok", "--case", "type-swap",
                    "--budget-scale", "0.1", "--jobs", "2", "--transport", "stdio")
    elapsed = time.monotonic() - started
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
    assert elapsed < 60, "four 3-second timeouts on two workers must not take long"
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
