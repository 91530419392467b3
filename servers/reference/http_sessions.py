"""What the Streamable HTTP transport keeps per MCP session and per SSE answer.

- :class:`LockedJournal`: the journal written from many request threads, in wire order.
- :class:`HttpSession`: one MCP session (its protocol session object, negotiated version, and the
  server-to-client requests waiting for the client's answer).
- :class:`SseStream`: the ``text/event-stream`` answering one POSTed request, on which a session may
  also send notifications and requests (the conformance tools do).
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, Iterator

import wire
from journal import Journal

if TYPE_CHECKING:
    from http_transport import McpHandler

SERVER_REQUEST_TIMEOUT_S = 30.0


def encode(message: Any) -> bytes:
    """Compact UTF-8 JSON, as on stdio (without the newline)."""
    return wire.encode(message, newline=b"")


def sse_event(message: Any) -> bytes:
    """One SSE event carrying ``message``; compact JSON has no raw newline, so one ``data`` line."""
    return b"event: message\ndata: " + encode(message) + b"\n\n"


class LockedJournal:
    """A :class:`Journal` written from many threads, one whole line at a time, in wire order.

    The last bytes of a message and its ``send`` line are written under the journal's lock
    (:meth:`sending`), and every ``recv`` line is written before the server answers, so the order
    of the lines is the order of events on the wire (a client cannot act on a response whose
    ``send`` line is not written yet). The ``exit`` line (SIGTERM) waits up to ``EXIT_GRACE_S``
    for the lock, then is written regardless.
    """

    EXIT_GRACE_S = 1.0

    def __init__(self, journal: Journal) -> None:
        self._journal = journal
        self._lock = threading.RLock()  # re-entrant: a send's line is written while it is held

    def write(self, event: str, **fields: Any) -> None:
        if event == "exit":  # from a signal handler: never wait for a stuck write for long
            locked = self._lock.acquire(timeout=self.EXIT_GRACE_S)
            try:
                self._journal.write(event, **fields)
            finally:
                if locked:
                    self._lock.release()
            return
        with self._lock:
            self._journal.write(event, **fields)

    @contextlib.contextmanager
    def sending(self) -> Iterator[None]:
        """Hold the journal for the last bytes of a message and its ``send`` line."""
        with self._lock:
            yield

    def close(self) -> None:
        locked = self._lock.acquire(timeout=self.EXIT_GRACE_S)
        try:
            self._journal.close()
        finally:
            if locked:
                self._lock.release()


class HttpSession:
    """One MCP session: the protocol session object and what the transport keeps for it."""

    def __init__(self, sid: str, session: Any) -> None:
        self.id = sid
        self.session = session
        self.lock = threading.Lock()  # Session.handle is called one message at a time, as on stdio
        self.version: str | None = None
        self._pending: dict[Any, dict[str, Any]] = {}
        self._pending_lock = threading.Lock()
        self._counter = 0

    def next_request_id(self) -> str:
        with self._pending_lock:
            self._counter += 1
            return f"srv-{self._counter}"

    def expect(self, request_id: Any) -> threading.Event:
        event = threading.Event()
        with self._pending_lock:
            self._pending[request_id] = {"event": event, "response": None}
        return event

    def deliver(self, response: dict[str, Any]) -> bool:
        """Hand a client's response to the thread waiting for it; False when nobody waits."""
        with self._pending_lock:
            slot = self._pending.get(response.get("id"))
        if slot is None:
            return False
        slot["response"] = response
        slot["event"].set()
        return True

    def collect(self, request_id: Any) -> dict[str, Any] | None:
        with self._pending_lock:
            slot = self._pending.pop(request_id, None)
        return None if slot is None else slot["response"]


class StreamClosed(Exception):
    """The client went away (or the answer cannot be streamed)."""


class SseStream:
    """The ``text/event-stream`` answering one POSTed request, open until :meth:`finish`."""

    def __init__(self, handler: "McpHandler", http_session: HttpSession) -> None:
        self._handler = handler
        self._http_session = http_session
        self._lock = threading.Lock()
        self.started = False
        self.finished = False

    def start(self) -> None:
        """Send the status line and headers (right away, as SDK servers do for SSE)."""
        with self._lock:
            if self.started:
                return
            self.started = True
            h = self._handler
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.send_header("Cache-Control", "no-cache")
            h.send_header("Transfer-Encoding", "chunked")
            h.send_header("Mcp-Session-Id", self._http_session.id)
            h.end_headers()

    def send(self, message: dict[str, Any]) -> None:
        """Write one ``event: message`` (one chunk), journaled; raises :class:`StreamClosed`."""
        self.start()
        event = sse_event(message)
        with self._lock:
            if self.finished:
                raise StreamClosed("the stream has ended")
            self._handler.write_journaled(message, event, "text/event-stream", self._http_session.id,
                                          prefix=b"%x\r\n" % len(event), suffix=b"\r\n")

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def request(self, method: str, params: dict[str, Any] | None = None,
                timeout_s: float = SERVER_REQUEST_TIMEOUT_S) -> dict[str, Any]:
        """Send a request to the client on this stream; returns its JSON-RPC response message."""
        request_id = self._http_session.next_request_id()
        arrived = self._http_session.expect(request_id)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self.send(message)
        except BaseException:
            self._http_session.collect(request_id)
            raise
        arrived.wait(timeout_s)
        response = self._http_session.collect(request_id)
        if response is None:
            raise TimeoutError(f"no response to {method} within {timeout_s} s")
        return response

    def finish(self) -> None:
        """End the stream (the terminating chunk); the connection stays open for the next request."""
        self.start()
        with self._lock:
            if self.finished:
                return
            self.finished = True
            self._handler.wfile.write(b"0\r\n\r\n")
