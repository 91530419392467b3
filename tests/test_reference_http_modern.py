"""The reference server over Streamable HTTP under 2026-07-28: real server processes on loopback,
stdlib ``http.client``; each check looks at the status, the JSON-RPC body and the journal."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_http_transport import CONTENT_TYPE, MODES, Reply, Server

MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
META = {VERSION_KEY: MODERN, "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}, CAPABILITIES_KEY: {}}
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def request(msg_id: Any, method: str, params: dict[str, Any] | None = None, meta: Any = META) -> dict[str, Any]:
    body: dict[str, Any] = dict(params or {})
    if meta is not None:
        body["_meta"] = meta
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": body}


def standard_headers(message: dict[str, Any]) -> dict[str, str]:
    """The headers a conforming 2026-07-28 client sends with ``message``."""
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": message["method"]}
    source = NAMED.get(message["method"])
    if source is not None:
        headers["Mcp-Name"] = message["params"][source]
    return headers


class ModernServer(Server):
    """The reference server over HTTP under ``protocol`` (2026-07-28 by default), posting with the
    standard headers of each message unless ``standard`` is False."""

    def post(self, message: Any, headers: dict[str, str] | None = None, *, standard: bool = True) -> Reply:
        extra = {**(standard_headers(message) if standard else {}), **(headers or {})}
        return super().post(message, session=False, headers=extra)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Any]:
    started: list[ModernServer] = []

    def start(mode: str, case: str = "ok", protocol: str = MODERN) -> ModernServer:
        server = ModernServer(tmp_path, mode, case, protocol=protocol)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


def recv_lines(journal: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {event["id"]: event for event in journal if event["event"] == "recv"}


def send_lines(journal: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {event["id"]: event for event in journal if event["event"] == "send"}


@pytest.mark.parametrize("mode", MODES)
def test_requests_are_served_statelessly(servers: Any, mode: str) -> None:
    server = servers(mode)
    discover = server.post(request(1, "server/discover"))
    assert discover.status == 200 and discover.content_type == CONTENT_TYPE[mode]
    assert "Mcp-Session-Id" not in discover.headers
    assert discover.message()["result"]["supportedVersions"] == [MODERN]

    listed = server.post(request(2, "tools/list"))
    result = listed.message()["result"]
    assert listed.status == 200 and result["resultType"] == "complete" and "ttlMs" in result
    assert [tool["name"] for tool in result["tools"]] == ["get_account_balance", "echo"]

    call = request(3, "tools/call", {"name": "get_account_balance", "arguments": {"account_id": "ACC-4471"}})
    called = server.post(call, {"Mcp-Session-Id": "left-over-from-2025"})  # served anyway, statelessly
    assert called.status == 200 and "Mcp-Session-Id" not in called.headers
    assert called.message()["result"]["structuredContent"]["account_id"] == "ACC-4471"
    if mode == "http-sse":
        assert called.headers.get("X-Accel-Buffering") == "no"

    echo = request(4, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    encoded = "=?base64?" + base64.b64encode(b"echo").decode() + "?="
    sentinel = server.post(echo, {"Mcp-Name": encoded})
    assert sentinel.status == 200 and sentinel.message()["result"]["content"] == [{"type": "text", "text": "hi"}]

    notification = server.post({"jsonrpc": "2.0", "method": "notifications/anything"}, standard=False)
    assert notification.status == 202 and notification.body == b"" and "Mcp-Session-Id" not in notification.headers

    journal = server.stop()
    assert journal[0]["event"] == "start" and journal[0]["protocol"] == MODERN
    recv, sent = recv_lines(journal), send_lines(journal)
    assert [recv[msg_id]["protocol"] for msg_id in (1, 2, 3, 4)] == [MODERN] * 4
    assert all(recv[msg_id]["http"]["status"] is None for msg_id in (1, 2, 3, 4))  # decided by the answer
    assert recv[3]["http"]["session"] == "left-over-from-2025"
    assert (recv[3]["http"]["mcp_method"], recv[3]["http"]["mcp_name"]) == ("tools/call", "get_account_balance")
    assert recv[4]["http"]["mcp_name"] == encoded  # journaled as it came
    assert recv[None]["kind"] == "notification" and recv[None]["http"]["status"] == 202
    assert all(sent[msg_id]["http"]["status"] == 200 for msg_id in (1, 2, 3, 4))
    assert all(sent[msg_id]["http"]["session"] is None for msg_id in (1, 2, 3, 4))
    assert sent[3]["http"]["content_type"] == CONTENT_TYPE[mode]


def _refused(reply: Reply, status: int, code: int, msg_id: Any) -> dict[str, Any]:
    assert reply.status == status, (reply.status, reply.body[:300])
    assert reply.content_type == "application/json"  # a refusal is one JSON body, in either mode
    body = reply.message()
    assert body["id"] == msg_id and body["error"]["code"] == code, body
    error: dict[str, Any] = body["error"]
    return error


@pytest.mark.parametrize("mode", MODES)
def test_header_validation(servers: Any, mode: str) -> None:
    server = servers(mode)
    listing = request(10, "tools/list")
    call = request(20, "tools/call", {"name": "echo", "arguments": {"text": "x"}})

    missing_version = server.post(listing, {"Mcp-Method": "tools/list"}, standard=False)
    assert "MCP-Protocol-Version" in _refused(missing_version, 400, -32020, 10)["message"]
    missing_method = server.post({**listing, "id": 11}, {"MCP-Protocol-Version": MODERN}, standard=False)
    assert "Mcp-Method" in _refused(missing_method, 400, -32020, 11)["message"]
    _refused(server.post({**listing, "id": 12}, {"Mcp-Method": "prompts/list"}), 400, -32020, 12)
    _refused(server.post({**listing, "id": 13}, {"Mcp-Method": "TOOLS/LIST"}), 400, -32020, 13)  # values: exact
    assert server.post({**listing, "id": 14}, {"mcp-method": "tools/list"}).status == 200  # names: any case

    no_name = server.post(
        {**call, "id": 21}, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"}, standard=False
    )
    assert "Mcp-Name" in _refused(no_name, 400, -32020, 21)["message"]
    _refused(server.post({**call, "id": 22}, {"Mcp-Name": "other"}), 400, -32020, 22)
    assert server.post({**call, "id": 23}, {"Mcp-Name": "  echo\t"}).status == 200  # OWS is not the value
    _refused(server.post({**call, "id": 24}, {"Mcp-Name": "=?base64?ZWNobw?="}), 400, -32020, 24)  # bad padding
    _refused(server.post({**call, "id": 25}, {"Mcp-Name": "=?base64?ZW!!obw==?="}), 400, -32020, 25)
    _refused(server.post({**call, "id": 26}, {"Mcp-Name": "ZWNobw=="}), 400, -32020, 26)  # no sentinel: literal

    other_version = server.post(request(30, "tools/list", meta={**META, VERSION_KEY: "2025-11-25"}))
    assert "_meta" in _refused(other_version, 400, -32020, 30)["message"]  # header and body disagree

    journal = server.stop()
    recv, sent = recv_lines(journal), send_lines(journal)
    assert recv[22]["http"]["status"] == 400 and "does not match" in recv[22]["http"]["reason"]
    assert recv[22]["http"]["mcp_name"] == "other" and recv[22]["protocol"] == MODERN
    assert sent[22]["http"]["status"] == 400 and sent[22]["message"]["error"]["code"] == -32020
    assert sent[22]["http"]["content_type"] == "application/json"
    assert recv[14]["http"]["status"] is None and sent[14]["http"]["status"] == 200


@pytest.mark.parametrize("mode", MODES)
def test_versions_envelope_and_methods(servers: Any, mode: str) -> None:
    server = servers(mode)
    disagree = server.post(request(1, "tools/list", meta={**META, VERSION_KEY: "1999-01-01"}))
    _refused(disagree, 400, -32020, 1)  # the header (2026-07-28) and _meta must agree before versions count
    both = server.post(
        request(2, "tools/list", meta={**META, VERSION_KEY: "1999-01-01"}), {"MCP-Protocol-Version": "1999-01-01"}
    )
    assert _refused(both, 400, -32022, 2)["data"] == {"supported": [MODERN], "requested": "1999-01-01"}
    no_version = server.post(request(3, "tools/list", meta={CAPABILITIES_KEY: {}}))
    assert VERSION_KEY in _refused(no_version, 400, -32602, 3)["message"]
    no_capabilities = server.post(request(4, "tools/list", meta={VERSION_KEY: MODERN}))
    assert CAPABILITIES_KEY in _refused(no_capabilities, 400, -32602, 4)["message"]
    _refused(server.post(request(5, "tools/list", meta=None)), 400, -32602, 5)

    legacy_initialize = {
        "jsonrpc": "2.0",
        "id": 6,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}},
    }
    legacy = _refused(server.post(legacy_initialize, standard=False), 400, -32022, 6)  # a 2025 client's only clue
    assert legacy["data"]["supported"] == [MODERN] and MODERN in legacy["message"]
    modern_initialize = _refused(server.post(request(7, "initialize")), 404, -32601, 7)
    assert MODERN in modern_initialize["message"]
    _refused(server.post(request(8, "ping")), 404, -32601, 8)  # removed in 2026-07-28: dispatched, then 404
    _refused(server.post(request(9, "logging/setLevel", {"level": "info"})), 404, -32601, 9)

    journal = server.stop()
    recv, sent = recv_lines(journal), send_lines(journal)
    assert recv[2]["protocol"] == "1999-01-01" and recv[6]["protocol"] == "2025-11-25" and recv[3]["protocol"] is None
    assert recv[6]["http"]["status"] == 400 and recv[6]["http"]["protocol_version"] is None
    assert recv[7]["http"]["status"] == 404 and sent[7]["http"]["status"] == 404
    assert recv[8]["http"]["status"] is None and sent[8]["http"]["status"] == 404
    assert all(sent[msg_id]["message"]["id"] == msg_id for msg_id in range(2, 10))


@pytest.mark.parametrize("mode", MODES)
def test_no_get_stream_no_sessions_no_client_responses(servers: Any, mode: str) -> None:
    server = servers(mode)
    get = server.request("GET", headers={"Accept": "text/event-stream"})
    assert get.status == 405 and get.headers.get("Allow") == "POST"
    delete = server.request("DELETE", headers={"Mcp-Session-Id": "abc"})
    assert delete.status == 405 and delete.headers.get("Allow") == "POST"
    assert server.request("PUT", b"{}", {"Content-Type": "application/json"}).status == 405
    response = server.post({"jsonrpc": "2.0", "id": "srv-1", "result": {}}, standard=False)
    _refused(response, 400, -32600, None)
    assert server.post(request(1, "tools/list"), {"Origin": "http://evil.example"}).status == 403
    assert server.post(request(2, "tools/list"), {"Accept": "application/json"}).status == 406

    journal = server.stop()
    assert [(e["http"]["method"], e["http"]["status"]) for e in journal if e["event"] == "http"] == [
        ("GET", 405),
        ("DELETE", 405),
        ("PUT", 405),
    ]
    responses = [e for e in journal if e["event"] == "recv" and e["kind"] == "response"]
    assert responses[0]["http"]["status"] == 400 and responses[0]["protocol"] is None
    assert journal[-1]["event"] == "exit" and journal[-1]["detail"] == "SIGTERM"


def test_conformance_tools_stream_without_asking_the_client(servers: Any) -> None:
    """``--case conformance`` under 2026-07-28 over http-sse: progress on the call's stream, logs only
    when the request sets a level, -32021 (400) for a missing client capability, no asking tools."""
    server = servers("http-sse", "conformance")
    discover = server.post(request(1, "server/discover")).message()["result"]
    assert "logging" in discover["capabilities"]
    names = [tool["name"] for tool in server.post(request(2, "tools/list")).message()["result"]["tools"]]
    assert "test_sampling" not in names and "test_elicitation" not in names and "test_missing_capability" in names

    progress = server.post(
        request(3, "tools/call", {"name": "test_tool_with_progress", "arguments": {}}, {**META, "progressToken": "p"})
    )
    messages = progress.messages()
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 3 + [None]
    assert messages[-1]["id"] == 3 and messages[-1]["result"]["resultType"] == "complete"

    quiet = server.post(request(4, "tools/call", {"name": "test_logging_tool", "arguments": {}})).messages()
    assert [m.get("method") for m in quiet] == [None]  # no logLevel in _meta: no notifications/message
    loud_meta = {**META, "io.modelcontextprotocol/logLevel": "info"}
    loud = server.post(request(5, "tools/call", {"name": "test_logging_tool", "arguments": {}}, loud_meta)).messages()
    assert [m.get("method") for m in loud] == ["notifications/message"] * 3 + [None]

    missing = server.post(request(6, "tools/call", {"name": "test_missing_capability", "arguments": {}}))
    assert _refused(missing, 400, -32021, 6)["data"] == {"requiredCapabilities": {"sampling": {}}}
    sampling_meta = {**META, CAPABILITIES_KEY: {"sampling": {}}}
    allowed = server.post(request(7, "tools/call", {"name": "test_missing_capability", "arguments": {}}, sampling_meta))
    assert allowed.status == 200 and allowed.message()["result"]["resultType"] == "complete"

    journal = server.stop()
    sent = [e for e in journal if e["event"] == "send"]
    assert not [e for e in sent if "method" in e["message"] and "id" in e["message"]]  # no request to the client
    assert [e["http"]["status"] for e in sent if e["id"] == 6] == [400]


def test_legacy_recv_lines_gain_protocol_and_header_fields(servers: Any) -> None:
    """Under 2025-11-25 only the journal's new fields differ: recv's ``protocol`` and two headers."""
    server = servers("http-json", protocol="2025-11-25")
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    init = server.post(initialize, standard=False)
    session = init.headers["Mcp-Session-Id"]
    listed = server.post(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"},
        standard=False,
    )
    assert listed.status == 200 and listed.headers["Mcp-Session-Id"] == session
    journal = server.stop()
    recv = recv_lines(journal)
    assert (recv[1]["protocol"], recv[2]["protocol"]) == ("2025-06-18", "2025-06-18")
    assert recv[2]["http"]["status"] == 200 and recv[2]["http"]["session"] == session
    assert recv[2]["http"]["mcp_method"] is None and recv[2]["http"]["mcp_name"] is None
    assert send_lines(journal)[2]["http"]["session"] == session
