"""Raw JSON-RPC over stdio or Streamable HTTP, by hand: no SDK in between, nothing validated or
altered. Standard library only.

Used by the ``raw-jsonrpc`` adapter (the matrix's reference column) and by ``record_session.py``
(``python -m harness record``: one tool's listing and result, recorded from a user's server).

- :class:`Wire`: a server child process; newline-delimited JSON on its stdin/stdout. Every inbound
  line is a frame in :attr:`BaseWire.frames`: ``bytes``, ``parse_error``, ``kind``, ``id``
  (and ``excerpt``, the start of a line that is not JSON).
- :class:`HttpWire`: every message a ``urllib`` POST to the server's URL with ``Accept:
  application/json, text/event-stream``; the ``Mcp-Session-Id`` of the initialize response and the
  negotiated ``MCP-Protocol-Version`` on every later request (2026-07-28: the request's own
  ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers instead). The response body is
  parsed as JSON or as an SSE stream. A frame is one HTTP response body: ``http``, ``request``,
  ``status``, ``content_type``, ``bytes``, ``parse_error``, ``messages``. Closing sends ``DELETE``
  with the session id.
- ``modern``: under 2026-07-28 every request carries :data:`MODERN_ENVELOPE` in its ``_meta``.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import subprocess
import threading
import time
import urllib.error
import urllib.request
from typing import Any

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
        """``server``: ``command``, ``args``, ``env`` (added to this process's environment) and an
        optional ``cwd``, as in a cell file."""
        env = {**os.environ, **(server.get("env") or {})}
        self.process = subprocess.Popen(
            [server["command"], *server["args"]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=server.get("cwd"),
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
                frame["excerpt"] = line[:120].decode("utf-8", "replace").rstrip("\r\n")
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


def message_kind(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    if "result" in message or "error" in message:
        return "response"
    return "request" if "id" in message else "notification"


def _http_frame(http: str, request: Any, msg_id: Any) -> dict[str, Any]:
    """A frame of one HTTP exchange, before its answer fills it in."""
    return {
        "http": http,
        "request": request,
        "id": msg_id,
        "status": None,
        "content_type": None,
        "bytes": 0,
        "parse_error": None,
        "messages": [],
        "error": None,
    }


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
            {"kind": message_kind(message), "id": message.get("id") if isinstance(message, dict) else None}
        )
        if message_kind(message) == "response":
            self.responses.put(message)
        return message

    def _exchange(self, message: dict[str, Any]) -> None:
        """POST ``message`` and read the whole answer (JSON body or SSE stream) into the queue."""
        msg_id = message.get("id") if "method" in message else None
        frame = _http_frame("POST", message.get("method"), msg_id)
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
                            isinstance(parsed, dict)
                            and message_kind(parsed) == "response"
                            and parsed.get("id") == msg_id
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
            if isinstance(parsed, dict) and message_kind(parsed) == "response" and parsed.get("id") == msg_id:
                return True
        if data:  # a last event without its blank line
            parsed = self._deliver(frame, b"\n".join(data))
            return isinstance(parsed, dict) and message_kind(parsed) == "response" and parsed.get("id") == msg_id
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
        frame = _http_frame("DELETE", None, None)
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
