"""``run --case-file``: a recorded result replayed by the reference server to real clients.

A tool recorded from the example server (the official Python SDK's ``MCPServer``) reaches every
column exactly as recorded; a recording of one of the reference server's own fault cases gets the
same outcome in every column as that case does; bad case files are one line with nothing written.
Live mode runs the case against the example servers themselves, over stdio (a recording pipe) and
Streamable HTTP (a recording reverse proxy; SSE and JSON framing), and agrees with the replay.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import REPO, Checkout

SERVER = REPO / "servers" / "reference"
COLUMNS = ("raw-jsonrpc", "python-mcp", "ts-sdk")
ADAPTER_ARGS = [arg for name in COLUMNS for arg in ("--adapter", name)]


def _record(scratch: Checkout, server: list[str], tool: str, arguments: str, name: str, *extra: str) -> Path:
    scratch.harness("record", "--server-cmd", shlex.join(server), "--tool", tool, "--arguments", arguments,
                    "--name", name, *extra, timeout=120)  # fmt: skip
    return scratch.root / "case-files" / f"{name}.json"


@pytest.mark.slow
def test_a_recorded_tool_reaches_every_column_as_it_was_sent(tmp_path, examples):
    scratch = Checkout(tmp_path / "checkout", list(COLUMNS))
    path = _record(scratch, examples["python-inventory"], "stock_level", '{"sku": "A-100"}', "stock")
    _record(scratch, examples["ts-inventory"], "stock_level", '{"sku": "B-200"}', "ts-stock")
    recorded = json.loads(path.read_text())
    directory = str(path.parent)  # both case files
    scratch.harness("run", *ADAPTER_ARGS, "--case-file", directory, "--run-id", "replay", "--jobs", "2")

    rows = scratch.rows("replay")
    for case in ("rec-stock", "rec-ts-stock"):
        for column in ("raw-jsonrpc", "python-mcp/call-only", "python-mcp/list-first", "ts-sdk/list-first"):
            for schema in ("advertised", "hidden"):
                assert rows[(column, case, schema)]["outcome"] == "pass", (column, case, schema)
    records = {r["key"]: r for r in scratch.records("replay")}
    assert len(records) == 2 * (3 * 2 * (1 + 2 + 2) + 2 * 2), "every transport; maxbuf-* columns on stdio only"
    cell = records["python-mcp--list-first--rec-stock--advertised--http-json--2025-11-25"]
    call = next(e for e in cell["journal"] if e.get("event") == "recv" and e.get("method") == "tools/call")
    assert call["params"]["name"] == "stock_level" and call["params"]["arguments"] == {"sku": "A-100"}
    sent = [e["message"]["result"] for e in cell["journal"] if e.get("event") == "send" and e.get("id") == call["id"]]
    assert sent == [recorded["result"]], "the recorded result, unchanged"
    listed = next(
        e["message"]["result"]["tools"][0]
        for e in records["python-mcp--list-first--rec-stock--hidden--stdio--2025-11-25"]["journal"]
        if e.get("event") == "send" and "tools" in (e.get("message", {}).get("result") or {})
    )
    assert "outputSchema" not in listed and listed["inputSchema"] == recorded["tool"]["inputSchema"]

    meta = json.loads((scratch.root / "results" / "replay" / "meta.json").read_text())
    assert meta["settings"]["case_files"] == ["stock", "ts-stock"]
    kept = scratch.root / "results" / "replay" / "case-files" / "stock.json"
    assert kept.read_text() == path.read_text(), "the run keeps the case file it replayed"
    index = (scratch.root / "reports" / "index.html").read_text()
    assert "rec-stock" in index and "stock_level of inventory-example" in index

    path.unlink()  # a resumed run replays its own copy
    again = scratch.harness("run", "--resume", "replay")
    assert "0 to run" in again.stderr
    assert scratch.processes_left() == []


@pytest.mark.slow
def test_a_recording_of_a_fault_case_gets_that_case_s_outcome_in_every_column(tmp_path):
    """The recorded type-swap result, replayed, against the same clients as the catalog's type-swap."""
    scratch = Checkout(tmp_path / "checkout", list(COLUMNS))
    server = [sys.executable, str(SERVER), "--case", "type-swap"]
    path = _record(scratch, server, "get_account_balance", '{"account_id": "ACC-4471"}', "swap")
    common = [*ADAPTER_ARGS, "--transport", "stdio", "--protocol", "2025-11-25", "--jobs", "2"]
    scratch.harness("run", *common, "--case", "type-swap", "--run-id", "catalog")
    scratch.harness("run", *common, "--case-file", str(path), "--run-id", "replay")
    catalog = {(c, s): r["outcome"] for (c, case, s), r in scratch.rows("catalog").items()}
    rows = scratch.rows("replay")  # renders the replay's report
    replay = {(c, s): r["outcome"] for (c, case, s), r in rows.items()}
    assert replay == catalog
    assert set(catalog.values()) - {"pass"}, "the case is one some column does not pass"

    page = (scratch.root / "reports" / "rec-swap.html").read_text()
    assert "structuredContent does not conform (Draft202012): $.balance_minor:" in html.unescape(page)
    rejected = next(r for r in rows.values() if r["outcome"] != "pass" and r["error_message"])
    quoted = f"{rejected['schema']}, {rejected['transport']}: {rejected['error_type']}"
    assert html.escape(quoted, quote=False) in page, "the reading quotes the client's own error"
    assert 'href="rec-swap.html"' in (scratch.root / "reports" / "index.html").read_text()


def test_the_server_replays_a_2026_07_28_result_unchanged(tmp_path):
    case_file = tmp_path / "modern.json"
    result = {"resultType": "complete", "content": [{"type": "text", "text": "7"}], "structuredContent": 7}
    case_file.write_text(json.dumps(_case(name="modern", protocol="2026-07-28", result=result)))
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    call = {"name": "count", "arguments": {"n": 1}, "_meta": meta}
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}]
    done = subprocess.run(
        [sys.executable, str(SERVER), "--case-file", str(case_file), "--protocol", "2026-07-28"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert json.loads(done.stdout.splitlines()[0])["result"] == result


def _case(**changes: object) -> dict:
    case = {
        "case_file": 1,
        "name": "count",
        "recorded_at": "2026-12-01T00:00:00+00:00",
        "server": {"name": "counter", "version": "1.0.0"},
        "protocol": "2025-11-25",
        "tool": {"name": "count", "inputSchema": {"type": "object"}},
        "arguments": {"n": 1},
        "result": {"content": [{"type": "text", "text": "1"}]},
    }
    case.update(changes)
    return case


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        ({"a.json": "{not json"}, "a.json: not a case file: not JSON"),
        ({"a.json": json.dumps({"tools": []})}, "a.json: not a case file (no 'case_file' version"),
        ({"a.json": json.dumps(_case(case_file=2))}, "a.json: case_file version 2: this harness reads version 1"),
        ({"a.json": json.dumps(_case(tool={"inputSchema": {}}))}, "a.json: tool: field 'name' is missing"),
        ({"a.json": json.dumps(_case(result=[]))}, "a.json: field 'result': expected an object"),
        ({"a.json": json.dumps(_case(tool={"name": "echo", "inputSchema": {}}))}, "tool 'echo' cannot be replayed"),
        ({"a.json": json.dumps(_case()), "b.json": json.dumps(_case())}, "are both named 'count'"),
        ({}, "a directory with no *.json case files"),
        (None, "no such file or directory"),
    ],
    ids=[
        "not-json",
        "not-a-case-file",
        "other-version",
        "no-tool-name",
        "result-not-object",
        "echo",
        "twice",
        "empty-directory",
        "missing",
    ],
)
def test_a_bad_case_file_is_one_line_and_nothing_is_written(tmp_path, files, needle):
    scratch = Checkout(tmp_path / "checkout", ["raw-jsonrpc"])
    given = tmp_path / "given"
    if files is not None:
        given.mkdir()
        for name, text in files.items():
            (given / name).write_text(text)
    done = scratch.harness("run", "--case-file", str(given), "--run-id", "bad", check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], done.stderr
    assert not (scratch.root / "results" / "bad").exists(), "nothing written"


def test_a_case_selection_names_the_recorded_cases(tmp_path):
    scratch = Checkout(tmp_path / "checkout", ["raw-jsonrpc"])
    (tmp_path / "count.json").write_text(json.dumps(_case()))
    listed = scratch.cli("list", "--case-file", str(tmp_path / "count.json"))
    assert listed.stdout.strip().endswith("3 cells"), "schema mode none, three transports"
    done = scratch.cli("list", "--case-file", str(tmp_path / "count.json"), "--case", "ok", check=False)
    assert done.returncode == 2 and "unknown case 'ok'" in done.stderr and "rec-count" in done.stderr


@pytest.mark.slow
def test_live_mode_runs_the_case_against_the_user_s_server_and_agrees_with_the_replay(tmp_path, examples):
    scratch = Checkout(tmp_path / "checkout", list(COLUMNS))
    server = examples["python-inventory"]
    path = _record(scratch, server, "stock_level", '{"sku": "A-100"}', "stock")
    common = [*ADAPTER_ARGS, "--case-file", str(path), "--transport", "stdio", "--jobs", "2"]
    scratch.harness("run", *common, "--run-id", "replay")
    scratch.harness("run", *common, "--run-id", "live", "--server-cmd", shlex.join(server),
                    "--env", "INVENTORY_TOKEN=not-in-the-results")  # fmt: skip

    compared = scratch.cli("diff", "replay", "live", check=False)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "0 differ" in compared.stdout + compared.stderr
    records = {r["key"]: r for r in scratch.records("live")}
    assert len(records) == 1 + 2 + 4, "advertised, stdio only: one cell per column"
    journal = records["python-mcp--list-first--rec-stock--advertised--stdio--2025-11-25"]["journal"]
    assert journal[0]["event"] == "start" and journal[0]["live"] is True
    listed = next(e for e in journal if e.get("event") == "send" and e.get("added"))
    assert [t["name"] for t in listed["message"]["result"]["tools"]] == ["stock_level", "echo"]
    call = next(e for e in journal if e.get("event") == "recv" and e.get("method") == "tools/call")
    answer = next(e for e in journal if e.get("event") == "send" and e.get("id") == call["id"])
    assert answer["message"]["result"]["structuredContent"] == {"sku": "A-100", "on_hand": 42, "warehouse": "Basel-2"}
    assert journal[-1]["event"] == "exit" and "exited with code" in journal[-1]["detail"]

    run_dir = scratch.root / "results" / "live"
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["settings"]["live"]["env_keys"] == ["INVENTORY_TOKEN"]
    assert not list(run_dir.rglob("live.json")), "the server's environment is removed with each cell"
    assert not [p for p in run_dir.rglob("*") if p.is_file() and b"not-in-the-results" in p.read_bytes()]
    scratch.cli("report", "--run", "live")
    reports = scratch.root / "reports"
    evidence = (reports / "cells" / "python-mcp--list-first--rec-stock--advertised--stdio--2025-11-25.html").read_text()
    assert "Live: the user&#39;s own server answered" in evidence
    assert (
        "In this run (live mode) every column talked to the server itself" in (reports / "rec-stock.html").read_text()
    )
    assert scratch.processes_left() == []


@contextlib.contextmanager
def _serving_http(command: list[str], port: int) -> Iterator[str]:
    """The example server serving Streamable HTTP on ``port`` (its own process group, killed after)."""
    server = subprocess.Popen(
        [*command, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "the example server did not listen"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("example", "transport"),
    [("python-inventory", "http-sse"), ("ts-inventory", "http-json")],
    ids=["sse", "json"],
)
def test_live_mode_over_http_goes_through_the_recording_proxy_and_agrees_with_the_replay(
    tmp_path, examples, example, transport
):
    scratch = Checkout(tmp_path / "checkout", list(COLUMNS))
    with _serving_http(examples[example], _free_port()) as url:
        path = scratch.root / "case-files" / "stock.json"
        scratch.harness("record", "--server-url", url, "--tool", "stock_level", "--arguments", '{"sku": "A-100"}',
                        "--name", "stock", timeout=120)  # fmt: skip
        common = [*ADAPTER_ARGS, "--case-file", str(path), "--jobs", "2"]
        scratch.harness("run", *common, "--transport", transport, "--run-id", "replay")
        scratch.harness("run", *common, "--run-id", "live", "--server-url", url)

    compared = scratch.cli("diff", "replay", "live", check=False)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert compared.stdout.startswith("5 cells in both runs; 0 differ"), "the replay also has the schema hidden"
    records = {r["key"]: r for r in scratch.records("live")}
    assert {r["transport"] for r in records.values()} == {transport}, "the framing the server answered with"
    assert len(records) == 1 + 2 + 2, "advertised, the server's transport: one cell per column that speaks HTTP"
    assert {r["observation"]["calls"][0]["status"] for r in records.values()} == {"returned"}
    journal = records[f"ts-sdk--list-first--rec-stock--advertised--{transport}--2025-11-25"]["journal"]
    assert journal[0]["event"] == "start" and journal[0]["live"] is True and journal[0]["upstream"] == url
    listed = next(e for e in journal if e.get("event") == "send" and e.get("added"))
    assert [t["name"] for t in listed["message"]["result"]["tools"]] == ["stock_level", "echo"]
    call = next(e for e in journal if e.get("event") == "recv" and e.get("method") == "tools/call")
    answer = next(e for e in journal if e.get("event") == "send" and e.get("id") == call["id"])
    assert answer["message"]["result"]["structuredContent"] == {"sku": "A-100", "on_hand": 42, "warehouse": "Basel-2"}
    framing = "text/event-stream" if transport == "http-sse" else "application/json"
    assert answer["http"]["content_type"].startswith(framing) and answer["http"]["status"] == 200
    meta = json.loads((scratch.root / "results" / "live" / "meta.json").read_text())
    assert meta["settings"]["live"]["url"] == url and meta["settings"]["live"]["transport"] == transport
    scratch.cli("report", "--run", "live")
    evidence = (scratch.root / "reports" / "cells" / f"{next(iter(records))}.html").read_text()
    assert "through the harness&#39;s recording reverse proxy" in evidence
    assert scratch.processes_left() == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--server-cmd", "python3 -c pass"], "--server-cmd (live mode) needs --case-file"),
        (["--server-cmd", "/nonexistent/server", "--case-file", "CASE"], "cannot find '/nonexistent/server'"),
        (["--env", "A=1", "--case-file", "CASE"], "--env and --cwd apply to --server-cmd (live mode) only"),
        (["--server-cmd", "python3 -c pass", "--case-file", "CASE", "--backend", "docker"], "local backend only"),
        (["--server-url", "http://127.0.0.1:9/mcp"], "--server-url (live mode) needs --case-file"),
        (["--server-url", "ftp://127.0.0.1/mcp", "--case-file", "CASE"], "expected an http:// or https:// URL"),
        (["--server-url", "http://127.0.0.1:9/mcp", "--case-file", "CASE"], "http://127.0.0.1:9/mcp: no session under"),
        (["--server-url", "http://x/", "--server-cmd", "python3", "--case-file", "CASE"], "not both"),
    ],
    ids=[
        "no-case-file",
        "no-such-command",
        "env-without-live",
        "docker",
        "url-no-case-file",
        "not-http",
        "unreachable",
        "both",
    ],
)
def test_bad_live_input_is_one_line_and_nothing_is_written(tmp_path, args, needle):
    scratch = Checkout(tmp_path / "checkout", ["raw-jsonrpc"])
    (tmp_path / "count.json").write_text(json.dumps(_case()))
    args = [str(tmp_path / "count.json") if arg == "CASE" else arg for arg in args]
    done = scratch.harness("run", *args, "--run-id", "bad", check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], done.stderr
    assert not (scratch.root / "results" / "bad").exists()
