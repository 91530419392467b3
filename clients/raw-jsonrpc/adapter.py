"""The reference column: JSON-RPC by hand, no SDK, no validation.

It shows exactly what came over the wire: every inbound frame's size and whether it parsed
(``wire.frames``), and each call's ``result`` member verbatim. A JSON-RPC error response is
recorded as a raised call with type ``JSONRPCError``. Standard library only.

Transports:

- ``stdio``: the server is a child process; newline-delimited JSON on its stdin/stdout. A frame is
  one inbound line: ``bytes``, ``parse_error``, ``kind``, ``id``.
- ``http-json`` / ``http-sse`` (Streamable HTTP): every message is a ``urllib`` POST to
  ``server.url`` with ``Accept: application/json, text/event-stream`` and ``Content-Type:
  application/json``; the ``Mcp-Session-Id`` of the initialize response and the negotiated
  ``MCP-Protocol-Version`` are sent on every later request. The response body is parsed as JSON
  or as an SSE stream (``data:`` lines of each event; read until the request's response arrived).
  A frame is one HTTP response body: ``http`` (POST / DELETE), ``request`` (the method posted),
  ``status``, ``content_type``, ``bytes``, ``parse_error``, ``messages`` (kind and id of each message
  it carried). Closing sends ``DELETE`` with the session id, as the specification recommends.

Protocol revisions (the cell's ``protocol``): under ``2025-11-25`` the session opens with
``initialize`` / ``notifications/initialized`` and HTTP carries the session id and negotiated version
as above; under ``2026-07-28`` there is no handshake: the ``initialize`` step is a
``server/discover`` request (its result must list 2026-07-28), every request carries
``io.modelcontextprotocol/protocolVersion``, ``clientInfo`` and ``clientCapabilities`` (empty) in its
``_meta``, and every HTTP POST the ``MCP-Protocol-Version``, ``Mcp-Method`` and (for ``tools/call``)
``Mcp-Name`` headers; there is no session to DELETE.

A call with ``cancel_after_ms`` is cancelled the way the specification describes: after that many
milliseconds without a response the adapter sends ``notifications/cancelled`` (``requestId``,
``reason``) and stops waiting for that id (a late response is still recorded in ``wire.frames``).
The call is recorded as raised with the reserved type ``Cancelled`` and ``cancelled_after_ms``.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from observe import Budget, Observation, Stopwatch, check_options, fail, read_cell, step

PROTOCOL_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
CLIENT_INFO = {"name": "mcp-client-matrix-raw", "version": "0.1.0"}
MODERN_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    "io.modelcontextprotocol/clientCapabilities": {},
}
TRANSPORTS = ("stdio", "http-json", "http-sse")
HTTP_ACCEPT = "application/json, text/event-stream"
# What the transports raise for a request that got no response (recorded as the call's error).
FAILURES = (TimeoutError, EOFError, OSError, http.client.HTTPException, ValueError)


class Failure:
    """What a request's waiter receives when the transport failed before a response arrived."""

    def __init__(self, msg_id: int, error: BaseException) -> None:
        self.id = msg_id
        self.error = error


class Expired(Exception):
    """The waiter's own deadline passed (a timeout or the moment to cancel)."""


class BaseWire:
    """Request/response matching over a queue of inbound responses (filled by the transport)."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.responses: queue.Queue[dict[str, Any] | Failure | None] = queue.Queue()
        self._next_id = 0
        self.modern = False
        """2026-07-28: every request carries :data:`MODERN_ENVELOPE` in its ``_meta``."""

    def send(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    def start(self, method: str, params: dict[str, Any]) -> int:
        """Send a request; its id."""
        self._next_id += 1
        msg_id = self._next_id
        if self.modern:
            params = {**params, "_meta": {**params.get("_meta", {}), **MODERN_ENVELOPE}}
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def wait(self, msg_id: int, method: str, deadline: float) -> dict[str, Any]:
        """The response with ``msg_id``; :class:`Expired` at ``deadline`` (monotonic), raises on EOF
        or a transport failure. Responses to other ids (late answers to cancelled calls) are skipped."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Expired()
            try:
                message = self.responses.get(timeout=remaining)
            except queue.Empty:
                continue
            if message is None:
                self.responses.put(None)
                raise EOFError(f"server closed stdout before answering {method} (id {msg_id})")
            if isinstance(message, Failure):
                if message.id == msg_id:
                    raise message.error
                continue
            if message.get("id") == msg_id:
                return message

    def request(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send a request and wait for the response with its id; raises on EOF or timeout."""
        msg_id = self.start(method, params)
        try:
            return self.wait(msg_id, method, time.monotonic() + timeout_s)
        except Expired:
            raise TimeoutError(f"no response to {method} (id {msg_id}) within {timeout_s:.1f} s") from None

    def initialized(self, answer: dict[str, Any]) -> None:
        """The initialize response arrived (HTTP keeps its session id and protocol version)."""

    def snapshot(self) -> list[dict[str, Any]]:
        """The frames to write into the observation."""
        return self.frames

    def close(self) -> None:
        raise NotImplementedError


class Wire(BaseWire):
    """The server process and a reader thread that parses every inbound line."""

    def __init__(self, server: dict[str, Any]) -> None:
        env = {**os.environ, **(server.get("env") or {})}
        self.process = subprocess.Popen(
            [server["command"], *server["args"]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        super().__init__()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            frame: dict[str, Any] = {"bytes": len(line), "parse_error": None, "kind": None, "id": None}
            try:
                message = json.loads(line)
            except ValueError as exc:
                frame["parse_error"] = str(exc)
                self.frames.append(frame)
                continue
            if isinstance(message, dict):
                frame["id"] = message.get("id")
                frame["kind"] = (
                    "response"
                    if ("result" in message or "error" in message)
                    else ("request" if "id" in message else "notification")
                )
                if frame["kind"] == "response":
                    self.responses.put(message)
            self.frames.append(frame)
        self.responses.put(None)  # end of stream

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _kind(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    if "result" in message or "error" in message:
        return "response"
    return "request" if "id" in message else "notification"


class HttpWire(BaseWire):
    """Streamable HTTP by hand: one ``urllib`` POST per message, each in a thread of its own so that
    a slow answer can be timed out or cancelled; responses go to the same queue as on stdio."""

    def __init__(self, url: str, timeout_s: float) -> None:
        super().__init__()
        self.url = url
        self.timeout_s = max(0.1, timeout_s)
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._lock = threading.Lock()

    def _headers(self, message: dict[str, Any] | None = None) -> dict[str, str]:
        headers = {"Accept": HTTP_ACCEPT, "Content-Type": "application/json"}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.modern:
            headers["MCP-Protocol-Version"] = MODERN_VERSION
            if message is not None and "method" in message:
                headers["Mcp-Method"] = message["method"]
                name = (message.get("params") or {}).get("name")
                if message["method"] == "tools/call" and isinstance(name, str):
                    headers["Mcp-Name"] = name
        elif self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _record(self, frame: dict[str, Any]) -> None:
        with self._lock:
            self.frames.append(frame)

    def _deliver(self, frame: dict[str, Any], text: bytes) -> Any:
        """Parse one JSON text of a body, note it in ``frame`` and queue it if it is a response."""
        try:
            message = json.loads(text)
        except ValueError as exc:
            frame["parse_error"] = frame["parse_error"] or str(exc)
            return None
        frame["messages"].append(
            {"kind": _kind(message), "id": message.get("id") if isinstance(message, dict) else None}
        )
        if _kind(message) == "response":
            self.responses.put(message)
        return message

    def _exchange(self, message: dict[str, Any]) -> None:
        """POST ``message`` and read the whole answer (JSON body or SSE stream) into the queue."""
        msg_id = message.get("id") if "method" in message else None
        frame: dict[str, Any] = {
            "http": "POST",
            "request": message.get("method"),
            "id": msg_id,
            "status": None,
            "content_type": None,
            "bytes": 0,
            "parse_error": None,
            "messages": [],
            "error": None,
        }
        request = urllib.request.Request(
            self.url, data=json.dumps(message).encode(), headers=self._headers(message), method="POST"
        )
        self._record(frame)  # filled in below; the list order is the order of the POSTs
        try:
            try:
                response = urllib.request.urlopen(request, timeout=self.timeout_s)
            except urllib.error.HTTPError as exc:
                response = exc  # an HTTP error status still has headers and a body
            with response:
                frame["status"] = response.status
                frame["content_type"] = response.headers.get("Content-Type")
                if message.get("method") == "initialize" and response.headers.get("Mcp-Session-Id"):
                    self.session_id = response.headers["Mcp-Session-Id"]
                if (frame["content_type"] or "").split(";")[0].strip().lower() == "text/event-stream":
                    answered = self._read_sse(response, frame, msg_id)
                else:
                    body = response.read()
                    frame["bytes"] = len(body)
                    answered = False
                    if body.strip():
                        parsed = self._deliver(frame, body)
                        answered = (
                            isinstance(parsed, dict) and _kind(parsed) == "response" and parsed.get("id") == msg_id
                        )
            if msg_id is not None and not answered:
                problem = f"; parse error: {frame['parse_error']}" if frame["parse_error"] else ""
                self.responses.put(
                    Failure(
                        msg_id,
                        ConnectionError(
                            f"HTTP {frame['status']} ({frame['content_type']}) to {message.get('method')} "
                            f"(id {msg_id}) carried no response to it{problem}"
                        ),
                    )
                )
            elif msg_id is None and frame["status"] is not None and frame["status"] >= 400:
                raise ConnectionError(f"HTTP {frame['status']} to {message.get('method')}")
        except Exception as exc:  # the transport failed: the waiter of this id hears of it
            frame["error"] = f"{type(exc).__name__}: {exc}"
            if msg_id is not None:
                self.responses.put(Failure(msg_id, exc))
            else:
                raise

    def _read_sse(self, response: Any, frame: dict[str, Any], msg_id: Any) -> bool:
        """Read SSE events (``data:`` lines joined by newlines) until this request's response."""
        data: list[bytes] = []
        for line in response:
            frame["bytes"] += len(line)
            line = line.rstrip(b"\r\n")
            if line:
                if line.startswith(b"data:"):
                    value = line[5:]
                    data.append(value[1:] if value.startswith(b" ") else value)
                continue  # event:, id:, retry:, comments
            if not data:
                continue
            parsed = self._deliver(frame, b"\n".join(data))
            data = []
            if isinstance(parsed, dict) and _kind(parsed) == "response" and parsed.get("id") == msg_id:
                return True
        if data:  # a last event without its blank line
            parsed = self._deliver(frame, b"\n".join(data))
            return isinstance(parsed, dict) and _kind(parsed) == "response" and parsed.get("id") == msg_id
        return False

    def send(self, message: dict[str, Any]) -> None:
        if "id" in message and "method" in message:  # a request: answered on the queue
            threading.Thread(target=self._exchange, args=(message,), daemon=True).start()
            return
        # A notification: POSTed before anything else is sent (the server answers 202 at once).
        errors: list[BaseException] = []

        def post() -> None:
            try:
                self._exchange(message)
            except Exception as exc:
                errors.append(exc)

        thread = threading.Thread(target=post, daemon=True)
        thread.start()
        thread.join(self.timeout_s)
        if thread.is_alive():
            raise TimeoutError(f"POST of {message.get('method')} not answered within {self.timeout_s:.1f} s")
        if errors:
            raise errors[0]

    def snapshot(self) -> list[dict[str, Any]]:
        """The frames so far, copied (a late answer may still be filling one in)."""
        with self._lock:
            return [{**frame, "messages": list(frame["messages"])} for frame in self.frames]

    def initialized(self, answer: dict[str, Any]) -> None:
        version = (answer.get("result") or {}).get("protocolVersion")
        self.protocol_version = version if isinstance(version, str) else None

    def close(self) -> None:
        """``DELETE`` the session (when the server gave one); 405 means the server does not allow it."""
        if self.session_id is None:
            return
        frame: dict[str, Any] = {
            "http": "DELETE",
            "request": None,
            "id": None,
            "status": None,
            "content_type": None,
            "bytes": 0,
            "parse_error": None,
            "messages": [],
            "error": None,
        }
        request = urllib.request.Request(self.url, headers=self._headers(), method="DELETE")
        try:
            try:
                response = urllib.request.urlopen(request, timeout=2.0)
            except urllib.error.HTTPError as exc:
                response = exc
            with response:
                frame["status"] = response.status
                frame["content_type"] = response.headers.get("Content-Type")
                frame["bytes"] = len(response.read())
        finally:
            self._record(frame)
        if frame["status"] is not None and frame["status"] >= 400 and frame["status"] != 405:
            raise ConnectionError(f"HTTP {frame['status']} to DELETE (session termination)")


def _error(exc: BaseException) -> dict[str, Any]:
    return {"type": type(exc).__name__, "code": None, "message": str(exc)}


def _call(wire: BaseWire, call: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    watch = Stopwatch()
    method, params = "tools/call", {"name": call["name"], "arguments": call["arguments"]}
    after_ms = call.get("cancel_after_ms")
    deadline = time.monotonic() + timeout_s
    try:
        msg_id = wire.start(method, params)
        if after_ms is None or after_ms / 1000.0 >= timeout_s:
            try:
                response = wire.wait(msg_id, method, deadline)
            except Expired:
                raise TimeoutError(f"no response to {method} (id {msg_id}) within {timeout_s:.1f} s") from None
        else:
            try:
                response = wire.wait(msg_id, method, watch.started + after_ms / 1000.0)
            except Expired:
                issued = watch.ms()
                reason = f"cancelled by the raw-jsonrpc adapter after {after_ms} ms"
                message = (
                    f"the adapter cancelled the call after {after_ms} ms: sent notifications/cancelled "
                    f"for id {msg_id} and stopped waiting for its response"
                )
                try:
                    wire.send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/cancelled",
                            "params": {"requestId": msg_id, "reason": reason},
                        }
                    )
                except FAILURES as exc:
                    message += f" (sending notifications/cancelled failed: {type(exc).__name__}: {exc})"
                entry = Observation.call_entry(
                    call["name"], watch.ms(), error={"type": "Cancelled", "code": None, "message": message}
                )
                entry["cancelled_after_ms"] = issued
                return entry
    except FAILURES as exc:
        entry = Observation.call_entry(call["name"], watch.ms(), error=_error(exc))
        if after_ms is not None:
            entry["cancelled_after_ms"] = None
        return entry
    entry = _result_entry(call, watch, response)
    if after_ms is not None:
        entry["cancelled_after_ms"] = None
    return entry


def _result_entry(call: dict[str, Any], watch: Stopwatch, response: dict[str, Any]) -> dict[str, Any]:
    if "error" in response:
        error = response["error"] if isinstance(response["error"], dict) else {}
        return Observation.call_entry(
            call["name"],
            watch.ms(),
            error={
                "type": "JSONRPCError",
                "code": error.get("code"),
                "message": str(error.get("message")),
                "data": error.get("data"),
            },
        )
    return Observation.call_entry(call["name"], watch.ms(), result=response.get("result"))


def _initialize(wire: BaseWire, timeout_s: float) -> Any:
    """The handshake-era opening: ``initialize``, then ``notifications/initialized``; the version it negotiated."""
    answer = wire.request(
        "initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}, timeout_s
    )
    if "error" in answer:
        raise RuntimeError(f"initialize answered with an error: {answer['error']}")
    wire.initialized(answer)
    wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return (answer.get("result") or {}).get("protocolVersion")


def _discover(wire: BaseWire, timeout_s: float) -> str:
    """The 2026-07-28 opening: ``server/discover``, whose result must offer 2026-07-28."""
    answer = wire.request("server/discover", {}, timeout_s)
    if "error" in answer:
        raise RuntimeError(f"server/discover answered with an error: {answer['error']}")
    supported = (answer.get("result") or {}).get("supportedVersions")
    if not isinstance(supported, list) or MODERN_VERSION not in supported:
        raise RuntimeError(f"server/discover does not offer {MODERN_VERSION}: supportedVersions={supported!r}")
    return MODERN_VERSION


def main() -> int:
    cell = read_cell(sys.argv[1])
    check_options(cell["options"], {})
    transport = cell.get("transport", "stdio")
    if transport not in TRANSPORTS:
        fail(f"transport {transport!r} is not supported by this adapter ({', '.join(TRANSPORTS)})")
    if transport != "stdio" and not isinstance(cell["server"].get("url"), str):
        fail(f"transport {transport!r} needs server.url")
    for call in cell["calls"]:
        after = call.get("cancel_after_ms")
        if after is not None and (type(after) is not int or after < 0):
            fail(f"cancel_after_ms: expected a non-negative integer, got {after!r}")
    observation = Observation(cell, package="")
    budget = Budget.of(cell, time.monotonic(), close_reserve_s=2.0)
    timeout_s = min(cell["call_timeout_ms"] / 1000.0, budget.steps - time.monotonic())
    wire: BaseWire = Wire(cell["server"]) if transport == "stdio" else HttpWire(cell["server"]["url"], timeout_s)
    wire.modern = cell.get("protocol") == MODERN_VERSION
    watch = observation.begin("initialize")
    try:
        version = _discover(wire, timeout_s) if wire.modern else _initialize(wire, timeout_s)
        observation.end("initialize", step(watch, protocol_version=version))
    except (*FAILURES, RuntimeError) as exc:
        observation.end("initialize", step(watch, exc, protocol_version=None))
    if observation.data["initialize"]["status"] == "ok":
        for call in cell["calls"]:
            observation.begin("call", call["name"])
            observation.end("call", _call(wire, call, timeout_s))
        observation.begin("followup", cell["followup"]["name"])
        observation.end("followup", _call(wire, cell["followup"], timeout_s))
    watch = observation.begin("close")
    try:
        wire.close()
    except FAILURES as exc:
        observation.end("close", step(watch, exc))
    else:
        observation.end("close", step(watch))
    observation.data["wire"] = {"frames": wire.snapshot()}
    observation.save(sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
