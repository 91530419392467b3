"""``python -m harness record``: a real server's tool recorded into a case file, over stdio and
Streamable HTTP, from the example servers (the official Python and TypeScript SDKs, built from the
registries) and the reference server; and every bad input as one line with nothing written."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REPO, Checkout

ACCOUNT_CALL = '{"account_id": "ACC-4471"}'


@pytest.fixture
def scratch(tmp_path: Path) -> Checkout:
    return Checkout(tmp_path / "checkout", [])


def _record(scratch: Checkout, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return scratch.harness("record", *args, check=check, timeout=120)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_python_sdk_tool_is_recorded_exactly_over_stdio(scratch, examples):
    command = shlex.join(examples["python-inventory"])
    done = _record(scratch, "--server-cmd", command, "--tool", "stock_level", "--arguments", '{"sku": "A-100"}',
                   "--env", "INVENTORY_TOKEN=do-not-write-me")  # fmt: skip
    path = scratch.root / "case-files" / "stock_level.json"
    assert f"recorded {path}" in done.stderr
    text = path.read_text()
    assert "do-not-write-me" not in text, "environment values are never written"
    case = json.loads(text)
    assert case["case_file"] == 1 and case["name"] == "stock_level" and case["protocol"] == "2025-11-25"
    assert case["server"]["name"] == "inventory-example" and case["server"]["transport"] == "stdio"
    assert case["server"]["env_keys"] == ["INVENTORY_TOKEN"]
    assert case["tool"]["name"] == "stock_level"
    assert case["tool"]["outputSchema"]["required"] == ["sku", "on_hand", "warehouse"]
    assert case["arguments"] == {"sku": "A-100"}
    stock = {"sku": "A-100", "on_hand": 42, "warehouse": "Basel-2"}
    assert case["result"]["structuredContent"] == stock
    assert json.loads(case["result"]["content"][0]["text"]) == stock
    assert case["frame_bytes"] > len(json.dumps(case["result"]))
    assert scratch.processes_left() == []


def test_a_typescript_sdk_tool_is_recorded_over_streamable_http(scratch, examples, tmp_path):
    port = _free_port()
    server = subprocess.Popen([*examples["ts-inventory"], "--http", str(port)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        out = tmp_path / "ts.json"
        url = f"http://127.0.0.1:{port}/mcp"
        _record(
            scratch, "--server-url", url, "--tool", "stock_level", "--arguments", '{"sku": "B-200"}', "--out", str(out)
        )
        case = json.loads(out.read_text())
        assert case["server"] == {
            "name": "inventory-example-ts",
            "version": "0.1.0",
            "transport": "streamable-http",
            "url": url,
        }
        assert case["tool"]["outputSchema"]["properties"]["on_hand"]["type"] == "integer"
        assert case["result"]["structuredContent"] == {"sku": "B-200", "on_hand": 0, "warehouse": "Lyon-1"}
        wrong = _record(scratch, "--server-url", url, "--tool", "stock_level", "--arguments", '{"sku": 7}',
                        "--out", str(tmp_path / "rejected.json"))  # fmt: skip
        assert "an isError result" in wrong.stderr, "the SDK's own validation error is a result, recorded as such"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_2026_07_28_server_is_recorded_under_that_revision(scratch):
    reference = shlex.join([sys.executable, str(REPO / "servers" / "reference"), "--protocol", "2026-07-28"])
    _record(scratch, "--server-cmd", reference, "--tool", "get_account_balance", "--arguments", ACCOUNT_CALL,
            "--protocol", "2026-07-28", "--name", "modern")  # fmt: skip
    case = json.loads((scratch.root / "case-files" / "modern.json").read_text())
    assert case["protocol"] == "2026-07-28"
    assert case["result"]["resultType"] == "complete"
    assert case["server"]["name"] == "mcp-client-matrix-reference"


def _python(code: str) -> str:
    """A stdio "server" running ``code``; ``ROOT`` in its command line becomes the scratch checkout's
    path, so that :meth:`Checkout.processes_left` finds it if it outlived the recording."""
    return shlex.join([sys.executable, "-c", code + "  # ROOT"])


REFERENCE = shlex.join([sys.executable, str(REPO / "servers" / "reference")])


@pytest.mark.parametrize(
    ("server", "args", "needle"),
    [
        (["--server-cmd", "/nonexistent/mcp-server"], [], "cannot start '/nonexistent/mcp-server'"),
        (["--server-cmd", _python("import sys; sys.exit(3)")], [], "the server exited with code 3"),
        (
            ["--server-cmd", _python("print('listening on stdio'); import time; time.sleep(60)")],
            [],
            "not JSON, the first: 'listening on stdio'",
        ),
        (["--server-url", "http://127.0.0.1:9/mcp"], [], "Connection refused"),
        (["--server-cmd", _python("import time; time.sleep(60)")], [], "did not answer initialize within 2 s"),
        (["--server-cmd", REFERENCE], ["--tool", "get_balance"], "the server lists: get_account_balance, echo"),
        (
            ["--server-cmd", REFERENCE],
            ["--tool", "get_account_balance", "--arguments", '{"account_id": "ACC-0000"}'],
            "tools/call answered with error -32602: Unknown account: ACC-0000",
        ),
        (["--server-cmd", REFERENCE], ["--arguments", "{not json"], "--arguments: not JSON"),
        (["--server-cmd", REFERENCE], ["--arguments", "[1, 2]"], "expected a JSON object"),
        (["--server-cmd", REFERENCE], ["--arguments", "@/nonexistent/args.json"], "cannot read /nonexistent/args.json"),
        (["--server-url", "ftp://127.0.0.1/mcp"], [], "expected an http:// or https:// URL"),
        (["--server-cmd", REFERENCE], ["--name", "../escape"], "--name '../escape'"),
    ],
    ids=[
        "does-not-start",
        "exits",
        "non-json-stdout",
        "unreachable-url",
        "never-answers",
        "not-listed",
        "arguments-rejected",
        "arguments-not-json",
        "arguments-not-object",
        "arguments-file-missing",
        "not-http",
        "bad-name",
    ],
)
def test_bad_input_is_one_line_and_nothing_is_written(scratch, server, args, needle):
    tool = [] if "--tool" in args else ["--tool", "get_account_balance"]
    server = [part.replace("ROOT", str(scratch.root)) for part in server]
    done = _record(scratch, *server, *tool, *args, "--timeout", "2", check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], done.stderr
    assert not (scratch.root / "case-files").exists(), "nothing written"
    assert scratch.processes_left() == []
