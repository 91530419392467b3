"""The reference server over stdio under 2026-07-28: stateless requests, each with its ``_meta`` envelope."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .conftest import REPO

MODERN = "2026-07-28"
ACCOUNT = {"account_id": "ACC-4471", "balance_minor": 4071877, "currency": "USD", "as_of": "2026-01-15T09:30:00Z"}
SERVER_INFO = {"name": "mcp-client-matrix-reference", "version": "0.1.0"}
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
META = {VERSION_KEY: MODERN, "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}, CAPABILITIES_KEY: {}}


def request(msg_id: int, method: str, params: dict[str, Any] | None = None, meta: Any = META) -> dict[str, Any]:
    body: dict[str, Any] = dict(params or {})
    if meta is not None:
        body["_meta"] = meta
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": body}


def serve(tmp_path: Path, frames: list[dict[str, Any]]) -> tuple[dict[Any, dict[str, Any]], list[dict[str, Any]]]:
    """``frames`` piped to ``servers/reference --protocol 2026-07-28``: its answers by id, and its journal."""
    journal = tmp_path / "journal.jsonl"
    done = subprocess.run(
        [sys.executable, str(REPO / "servers" / "reference"), "--protocol", MODERN, "--journal", str(journal)],
        input="".join(json.dumps(frame) + "\n" for frame in frames).encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines())}
    return answers, [json.loads(line) for line in journal.read_text().splitlines()]


def test_discover_list_and_call_are_complete_results(tmp_path: Path) -> None:
    call = {"name": "get_account_balance", "arguments": {"account_id": "ACC-4471"}}
    answers, journal = serve(
        tmp_path,
        [request(1, "server/discover"), request(2, "tools/list"), request(3, "tools/call", call)],
    )
    discover = answers[1]["result"]
    assert discover["resultType"] == "complete" and discover["supportedVersions"] == [MODERN]
    assert "tools" in discover["capabilities"]
    assert discover["_meta"]["io.modelcontextprotocol/serverInfo"] == SERVER_INFO

    listed = answers[2]["result"]
    assert listed["resultType"] == "complete"
    assert isinstance(listed["ttlMs"], int) and listed["ttlMs"] >= 0 and listed["cacheScope"] in ("public", "private")
    assert listed["_meta"]["io.modelcontextprotocol/serverInfo"] == SERVER_INFO
    assert [tool["name"] for tool in listed["tools"]] == ["get_account_balance", "echo"]

    called = answers[3]["result"]
    assert called["resultType"] == "complete" and called["structuredContent"] == ACCOUNT
    assert called["content"] == [{"type": "text", "text": json.dumps(ACCOUNT, separators=(", ", ": "))}]
    assert called["_meta"]["io.modelcontextprotocol/serverInfo"] == SERVER_INFO

    assert journal[0]["event"] == "start" and journal[0]["protocol"] == MODERN
    recv = [event for event in journal if event["event"] == "recv"]
    assert [(event["method"], event["protocol"]) for event in recv] == [
        ("server/discover", MODERN),
        ("tools/list", MODERN),
        ("tools/call", MODERN),
    ]
    assert journal[-1]["event"] == "exit" and journal[-1]["reason"] == "stdin-eof"


def test_refusals_name_what_is_wrong(tmp_path: Path) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    answers, journal = serve(
        tmp_path,
        [
            initialize,
            request(2, "tools/list", meta={**META, VERSION_KEY: "1999-01-01"}),
            request(3, "tools/list", meta={CAPABILITIES_KEY: {}}),
            request(4, "tools/list", meta={VERSION_KEY: MODERN}),
            request(5, "tools/list", meta=None),
            request(6, "ping"),
        ],
    )
    legacy = answers[1]["error"]
    assert legacy["code"] == -32022 and legacy["data"]["supported"] == [MODERN]
    assert legacy["data"]["requested"] == "2025-11-25" and MODERN in legacy["message"]

    unsupported = answers[2]["error"]
    assert unsupported["code"] == -32022
    assert unsupported["data"] == {"supported": [MODERN], "requested": "1999-01-01"}

    for msg_id, key in ((3, VERSION_KEY), (4, CAPABILITIES_KEY), (5, VERSION_KEY)):
        error = answers[msg_id]["error"]
        assert error["code"] == -32602 and key in error["message"], (msg_id, error)
    assert answers[6]["error"]["code"] == -32601  # ping is gone in 2026-07-28
    assert all(answers[msg_id]["id"] == msg_id for msg_id in range(1, 7))

    recv = {event["id"]: event for event in journal if event["event"] == "recv"}
    assert [recv[msg_id]["protocol"] for msg_id in range(1, 7)] == [
        "2025-11-25",  # what the initialize asked for
        "1999-01-01",
        None,
        MODERN,
        None,
        MODERN,
    ]
