"""The reference server over Streamable HTTP: real server processes, urllib clients, loopback only."""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO

SERVER = REPO / "servers" / "reference"
ACCOUNT = {"account_id": "ACC-4471", "balance_minor": 4071877, "currency": "USD", "as_of": "2026-01-15T09:30:00Z"}
ACCEPT = "application/json, text/event-stream"
MIB = 1024 * 1024
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "urllib-test", "version": "0"},
    },
}
CALL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "get_account_balance", "arguments": {"account_id": "ACC-4471"}},
}


class Reply:
    def __init__(self, status: int, headers: Any, body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type") or ""

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages of the body: one JSON object, or one per SSE ``message`` event."""
        if self.content_type.startswith("application/json"):
            return [json.loads(self.body)]
        assert self.content_type == "text/event-stream", self.content_type
        return [json.loads(data) for data in sse_data(self.body)]

    def message(self) -> dict[str, Any]:
        """The body's only JSON-RPC message."""
        [only] = self.messages()
        return only


def sse_data(body: bytes) -> list[str]:
    out = []
    for event in body.decode("utf-8").split("\n\n"):
        if not event:
            continue
        lines = event.split("\n")
        assert lines[0] == "event: message", event[:200]
        assert len(lines) == 2 and lines[1].startswith("data: "), event[:200]
        out.append(lines[1][len("data: ") :])
    return out


class Server:
    """``python servers/reference --transport MODE --protocol REV`` on a free port, with its journal."""

    def __init__(
        self, tmp_path: Path, mode: str, case: str = "ok", schema: str = "advertised", protocol: str = "2025-11-25"
    ) -> None:
        self.journal_path = tmp_path / f"journal-{mode}-{case}-{protocol}.jsonl"
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(SERVER),
                "--case",
                case,
                "--schema",
                schema,
                "--protocol",
                protocol,
                "--transport",
                mode,
                "--port",
                "0",
                "--journal",
                str(self.journal_path),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # the one line the harness reads
        assert line, self.process.stderr.read().decode() if self.process.stderr else "no URL line"
        self.url = json.loads(line)["url"]
        assert line == (json.dumps({"url": self.url}) + "\n").encode()
        self.session: str | None = None

    def post(
        self,
        message: Any,
        *,
        session: str | bool | None = True,
        accept: str = ACCEPT,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        path: str | None = None,
    ) -> Reply:
        all_headers = {"Content-Type": "application/json", "Accept": accept, **(headers or {})}
        sid = self.session if session is True else (session or None)
        if sid:
            all_headers["Mcp-Session-Id"] = sid
        return self.request("POST", raw if raw is not None else json.dumps(message).encode(), all_headers, path)

    def request(
        self, method: str, body: bytes | None = None, headers: dict[str, str] | None = None, path: str | None = None
    ) -> Reply:
        url = self.url if path is None else self.url.rsplit("/", 1)[0] + path
        request = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return Reply(response.status, response.headers, response.read())
        except urllib.error.HTTPError as error:
            return Reply(error.code, error.headers, error.read())

    def initialize(self) -> Reply:
        reply = self.post(INITIALIZE, session=False)
        self.session = reply.headers.get("Mcp-Session-Id")
        assert reply.status == 200 and self.session
        assert (
            self.post(
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={"MCP-Protocol-Version": "2025-11-25"},
            ).status
            == 202
        )
        return reply

    def stop(self) -> list[dict[str, Any]]:
        """SIGTERM, then the journal."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=10)
        return self.journal()

    def journal(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.journal_path.read_text().splitlines()]

    def wait_for_recv(self, message_id: int, timeout_s: float = 30) -> None:
        """Until the server has journaled the request ``message_id`` as received (a failure after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.journal_path.exists() and any(
                e["event"] == "recv" and e.get("id") == message_id
                for e in (json.loads(line) for line in self.journal_path.read_text().splitlines() if line.endswith("}"))
            ):
                return
            time.sleep(0.02)
        raise AssertionError(f"the server journaled no request {message_id} in {timeout_s:.0f} s")


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Any]:
    started: list[Server] = []

    def start(mode: str, case: str = "ok", schema: str = "advertised") -> Server:
        server = Server(tmp_path, mode, case, schema)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


MODES = ("http-json", "http-sse")
CONTENT_TYPE = {"http-json": "application/json", "http-sse": "text/event-stream"}


@pytest.mark.parametrize("mode", MODES)
def test_initialize_list_call_ok(servers: Any, mode: str) -> None:
    server = servers(mode)
    init = server.initialize()
    assert init.content_type == CONTENT_TYPE[mode]
    assert len(server.session or "") == 32 and all(0x21 <= ord(c) <= 0x7E for c in server.session or "")
    [answer] = init.messages()
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == "2025-11-25"
    assert answer["result"]["serverInfo"]["name"] == "mcp-client-matrix-reference"

    listed = server.post(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers={"MCP-Protocol-Version": "2025-11-25"}
    )
    assert listed.status == 200 and listed.headers.get("Mcp-Session-Id") == server.session
    [tools] = listed.messages()
    assert [tool["name"] for tool in tools["result"]["tools"]] == ["get_account_balance", "echo"]
    assert "outputSchema" in tools["result"]["tools"][0]

    called = server.post(CALL, headers={"MCP-Protocol-Version": "2025-11-25"})
    assert called.status == 200 and called.content_type == CONTENT_TYPE[mode]
    [result] = called.messages()
    assert result == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {
            "content": [{"type": "text", "text": json.dumps(ACCOUNT, separators=(", ", ": "))}],
            "structuredContent": ACCOUNT,
        },
    }
    echo = server.post(
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "follow-up"}},
        }
    )
    assert echo.messages()[0]["result"]["content"] == [{"type": "text", "text": "follow-up"}]

    journal = server.stop()
    start = journal[0]
    assert start["event"] == "start" and start["transport"] == mode and start["url"] == server.url
    assert start["case"] == "ok"
    recv = [e for e in journal if e["event"] == "recv"]
    assert [(e["method"], e["kind"], e["http"]["status"]) for e in recv] == [
        ("initialize", "request", 200),
        ("notifications/initialized", "notification", 202),
        ("tools/list", "request", 200),
        ("tools/call", "request", 200),
        ("tools/call", "request", 200),
    ]
    assert recv[0]["http"]["session"] is None and recv[2]["http"]["session"] == server.session
    assert recv[0]["bytes"] == len(json.dumps(INITIALIZE).encode())
    sends = [e for e in journal if e["event"] == "send"]
    assert [e["id"] for e in sends] == [1, 2, 3, 4]
    call_send = sends[2]
    assert call_send["message"] == result and call_send["error"] is None
    assert call_send["bytes"] == len(called.body)  # the JSON body, or the whole (only) SSE event
    assert call_send["sha256"] == hashlib.sha256(called.body).hexdigest()
    assert call_send["http"] == {
        "method": "POST",
        "path": "/mcp",
        "status": 200,
        "content_type": CONTENT_TYPE[mode],
        "session": server.session,
    }
    assert journal[-1]["event"] == "exit" and journal[-1]["reason"] == "signal"
    assert journal[-1]["detail"] == "SIGTERM"
    assert server.process.returncode == 128 + signal.SIGTERM


@pytest.mark.parametrize("mode", MODES)
def test_type_swap_result_goes_out_unchanged(servers: Any, mode: str) -> None:
    server = servers(mode, "type-swap")
    server.initialize()
    [result] = server.post(CALL).messages()
    swapped = {**ACCOUNT, "balance_minor": "4071877"}
    assert result["result"]["structuredContent"] == swapped
    assert result["result"]["content"][0]["text"] == json.dumps(swapped, separators=(", ", ": "))
    sends = [e for e in server.stop() if e["event"] == "send"]
    assert sends[-1]["message"]["result"]["structuredContent"] == swapped


@pytest.mark.parametrize("mode", MODES)
def test_text_10mib(servers: Any, mode: str) -> None:
    server = servers(mode, "text-10mib", "none")
    server.initialize()
    called = server.post(CALL)
    assert called.status == 200
    [result] = called.messages()
    text = result["result"]["content"][0]["text"]
    assert len(text) == 10 * MIB and text.startswith("ACC-4471 balance_minor=4071877")
    if mode == "http-json":
        assert int(called.headers["Content-Length"]) == len(called.body)
    else:
        assert called.headers.get("Transfer-Encoding") == "chunked"
    send = [e for e in server.stop() if e["event"] == "send"][-1]
    assert send["bytes"] == len(called.body) > 10 * MIB
    assert send["sha256"] == hashlib.sha256(called.body).hexdigest()
    elided = send["message"]["result"]["content"][0]["text"]
    assert elided["$elided"] == "string" and elided["length"] == 10 * MIB


@pytest.mark.parametrize("mode", MODES)
def test_sessions_headers_and_refusals(servers: Any, mode: str) -> None:
    server = servers(mode)
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    assert server.post(ping, session=False).status == 400  # before any initialize
    server.initialize()
    assert server.post(ping).messages()[0] == {"jsonrpc": "2.0", "id": 9, "result": {}}

    missing = server.post(ping, session=False)
    assert missing.status == 400 and json.loads(missing.body)["id"] is None
    assert server.post(ping, session="not-a-session").status == 404
    assert server.post(ping, headers={"MCP-Protocol-Version": "1999-01-01"}).status == 400
    assert server.post(ping, headers={"MCP-Protocol-Version": "2025-03-26"}).status == 200
    assert server.post(ping, accept="application/json").status == 406
    assert server.post(ping, accept="text/event-stream").status == 406
    assert server.post(ping, accept="*/*").status == 200
    assert server.post(ping, headers={"Content-Type": "text/plain"}).status == 415
    assert server.post(None, raw=b"{not json").status == 400
    batch = server.post([ping, ping])
    assert batch.status == 400 and json.loads(batch.body)["error"]["code"] == -32600
    assert server.post(ping, headers={"Origin": "http://evil.example"}).status == 403
    assert server.post(ping, headers={"Origin": f"http://localhost:{server.url.split(':')[2]}"}).status == 200
    assert server.post(ping, path="/other").status == 404

    # responses and notifications: 202, no body
    for message in (
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "id": "x", "result": {}},
    ):
        accepted = server.post(message)
        assert accepted.status == 202 and accepted.body == b"" and "Content-Type" not in accepted.headers

    get = server.request("GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": server.session or ""})
    assert get.status == 405 and "POST" in get.headers.get("Allow", "")

    assert server.request("DELETE").status == 400
    assert server.request("DELETE", headers={"Mcp-Session-Id": server.session or ""}).status == 200
    assert server.post(ping).status == 404  # the session ended
    assert server.request("DELETE", headers={"Mcp-Session-Id": server.session or ""}).status == 404

    journal = server.stop()
    refused = [
        (e["http"]["status"], e["http"].get("reason"))
        for e in journal
        if e["event"] == "recv" and e["http"]["status"] >= 400
    ]
    assert (406, "Accept lacks application/json or text/event-stream") in refused
    assert (403, "Origin 'http://evil.example' is not a local origin") in refused
    invalid = [e for e in journal if e["event"] == "recv" and e["kind"] == "invalid"]
    assert invalid[0]["error"] and invalid[0]["bytes"] == len(b"{not json")
    http = [(e["http"]["method"], e["http"]["status"]) for e in journal if e["event"] == "http"]
    assert http == [("GET", 405), ("DELETE", 400), ("DELETE", 200), ("DELETE", 404)]
    assert (404, "unknown path") in refused
    assert journal[-1]["event"] == "exit"


def test_conformance_session_streams_and_asks_the_client(servers: Any) -> None:
    """``--case conformance`` over http-sse: notifications and a server request on the call's stream."""
    server = servers("http-sse", "conformance")
    init = server.post(
        {**INITIALIZE, "params": {**INITIALIZE["params"], "capabilities": {"sampling": {}}}}, session=False
    )
    server.session = init.headers["Mcp-Session-Id"]
    assert init.messages()[0]["result"]["capabilities"]["logging"] == {}

    progress = server.post(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p"}},
        }
    )
    messages = progress.messages()
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 3 + [None]
    assert [m["params"]["progress"] for m in messages[:3]] == [0, 50, 100] and messages[3]["id"] == 2

    # The sampling request arrives on the call's stream; the client answers with a POST.
    request = urllib.request.Request(
        server.url,
        method="POST",
        data=json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "test_sampling", "arguments": {"prompt": "hi"}},
            }
        ).encode(),
        headers={"Content-Type": "application/json", "Accept": ACCEPT, "Mcp-Session-Id": server.session},
    )
    events: list[dict[str, Any]] = []
    with urllib.request.urlopen(request, timeout=30) as stream:
        for line in stream:
            if not line.startswith(b"data: "):
                continue
            event = json.loads(line[len(b"data: ") :])
            events.append(event)
            if event.get("method") == "sampling/createMessage":
                answered = server.post(
                    {
                        "jsonrpc": "2.0",
                        "id": event["id"],
                        "result": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"},
                    }
                )
                assert answered.status == 202
    assert events[-1] == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {"content": [{"type": "text", "text": "LLM response: hello"}]},
    }
    journal = server.stop()
    assert [e["kind"] for e in journal if e["event"] == "recv"][-1] == "response"


def test_exit_on_sigterm_while_a_request_is_open(servers: Any) -> None:
    server = servers("http-sse", "latency")
    server.initialize()

    def call() -> None:  # answered after 2 s, unless the server is gone by then
        try:
            server.post(CALL)
        except Exception:
            pass

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    server.wait_for_recv(CALL["id"])
    journal = server.stop()
    assert journal[-1]["event"] == "exit" and journal[-1]["detail"] == "SIGTERM"
    assert server.process.returncode == 128 + signal.SIGTERM
    assert not [e for e in journal if e["event"] == "send" and e.get("id") == CALL["id"]], "the request was open"


def test_a_client_that_stops_reading_blocks_nobody_else(servers: Any) -> None:
    """A 10 MiB answer nobody reads holds only its own thread: other sessions go on, SIGTERM works."""
    server = servers("http-json", "text-10mib", "none")
    server.initialize()
    host, port = server.url.split("/")[2].split(":")
    body = json.dumps(CALL).encode()
    stalled = socket.create_connection((host, int(port)))
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.sendall(
        b"POST /mcp HTTP/1.1\r\nHost: "
        + f"{host}:{port}".encode()
        + b"\r\nContent-Type: application/json\r\nAccept: "
        + ACCEPT.encode()
        + b"\r\nMcp-Session-Id: "
        + (server.session or "").encode()
        + b"\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )
    try:
        server.wait_for_recv(CALL["id"])  # the request is open: its 10 MiB answer fills the unread socket
        server.session = None
        server.initialize()  # a second session of the same server
        assert server.post({"jsonrpc": "2.0", "id": 7, "method": "ping"}).status == 200
        journal = server.stop()
        assert journal[-1]["event"] == "exit" and journal[-1]["detail"] == "SIGTERM"
        assert not [e for e in journal if e["event"] == "send" and e["id"] == 3]  # never completed
    finally:
        stalled.close()
