"""The journaled writes that answer one HTTP request of the Streamable HTTP transport.

- :class:`Responder`: the status line and headers, bodies without a message (202, 200 on DELETE,
  refusals: a JSON-RPC error with ``id: null``, or the unknown path's plain text; a 2026-07-28
  refusal is the JSON-RPC error response to the request, written as a message), one JSON-RPC
  message as an ``application/json`` body (200, or the status of a 2026-07-28 error), and
  :meth:`Responder.write_journaled`, which writes a message's bytes and its ``send`` journal line
  in wire order.
- :class:`SseStream`: the ``text/event-stream`` answering one POSTed request: status and headers
  when it starts (right away under 2025-11-25; at its first message under 2026-07-28, so that an
  error answered before anything was streamed can still get its own status), one
  ``event: message`` per message (one chunk of chunked transfer encoding, no event ids, no priming
  event), then the end of the stream; a session may also send notifications, and under
  2025-11-25 requests, to the client on it (the conformance tools do). Under 2026-07-28 the stream
  carries no ``Mcp-Session-Id`` and has ``X-Accel-Buffering: no`` (the spec's SHOULD).

A ``send`` line: ``bytes`` (the JSON body, or the whole SSE event without chunk framing), ``id``,
``sha256`` of those bytes, ``write_ms``, ``error``, ``message`` (elided) and ``http``: ``method``,
``path``, ``status``, ``content_type`` (the response's), ``session`` (None under 2026-07-28). A
write to a client that went away is journaled, then raises :class:`StreamClosed`.
"""

from __future__ import annotations

import hashlib
import select
import socket
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import wire
from http_checks import Refusal
from http_sessions import HttpSession, LockedJournal

SERVER_REQUEST_TIMEOUT_S = 30.0


def encode(message: Any) -> bytes:
    """Compact UTF-8 JSON, as on stdio (without the newline)."""
    return wire.encode(message, newline=b"")


def sse_event(message: Any) -> bytes:
    """One SSE event carrying ``message``; compact JSON has no raw newline, so one ``data`` line."""
    return b"event: message\ndata: " + encode(message) + b"\n\n"


class StreamClosed(Exception):
    """The client went away (or the answer cannot be streamed)."""


class Responder:
    """Writes the answer to one HTTP request on the handler's connection, journaled."""

    def __init__(self, handler: BaseHTTPRequestHandler, journal: LockedJournal, stopping: threading.Event) -> None:
        self._handler = handler
        self.journal = journal
        self._stopping = stopping

    @property
    def path(self) -> str:
        return urlsplit(self._handler.path).path

    def http_info(self, status: int | None, **extra: Any) -> dict[str, Any]:
        """The ``http`` object of a journal line: ``method``, ``path``, ``status``, then ``extra``."""
        return {"method": self._handler.command, "path": self.path, "status": status, **extra}

    def close_connection(self) -> None:
        """Close the connection once this request is done (the client went away or cannot be read)."""
        self._handler.close_connection = True

    def head(self, status: int, headers: Mapping[str, str]) -> None:
        """The status line and headers (``Server`` and ``Date`` first)."""
        self._handler.send_response(status)
        for name, value in headers.items():
            self._handler.send_header(name, value)
        self._handler.end_headers()

    def write(self, data: bytes | memoryview) -> None:
        self._handler.wfile.write(data)

    def plain(
        self, status: int, body: bytes, content_type: str | None, headers: Mapping[str, str] | None = None
    ) -> None:
        """A body that is not a JSON-RPC message (none for HEAD), with its ``Content-Length``."""
        self.head(
            status,
            {
                **({"Content-Type": content_type} if content_type else {}),
                **(headers or {}),
                "Content-Length": str(len(body)),
            },
        )
        if body and self._handler.command != "HEAD":
            self.write(body)

    def error(self, status: int, code: int, text: str, headers: Mapping[str, str] | None = None) -> None:
        """An HTTP error whose body is a JSON-RPC error response without an id (``id: null``)."""
        body = encode({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}})
        self.plain(status, body, "application/json", headers)

    def refuse(self, refusal: Refusal) -> None:
        if refusal.plain:
            self.plain(refusal.status, b"Not Found\n", "text/plain; charset=utf-8")
        elif refusal.response is not None:
            self.json_answer(dict(refusal.response), None, refusal.status)
        else:
            self.error(refusal.status, refusal.code, refusal.text, refusal.headers)

    def json_answer(self, message: dict[str, Any], session_id: str | None, status: int = 200) -> bool:
        """``message`` as an ``application/json`` body (``Mcp-Session-Id`` when ``session_id`` is
        not None); False when the client went away."""
        body = encode(message)
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        try:
            self.head(status, headers)
        except OSError:
            self.close_connection()
            return False
        try:
            self.write_journaled(message, body, "application/json", session_id, status=status)
        except StreamClosed:
            return False
        return True

    def write_journaled(
        self,
        message: dict[str, Any],
        payload: bytes,
        content_type: str,
        session: str | None,
        prefix: bytes = b"",
        suffix: bytes = b"",
        status: int = 200,
    ) -> None:
        """Write ``prefix + payload + suffix`` and journal ``payload`` as one ``send`` line (its
        ``http.status`` is ``status``, the status of the response that carries it).

        Everything but the payload's last byte (and the suffix) is written outside the journal's
        lock, so a client that stops reading blocks only this thread; the last bytes, without
        which no client can have the message, and the ``send`` line are written together under
        the lock, so no later ``recv`` line can precede this ``send`` line.
        """
        started = time.monotonic()
        head = memoryview(payload)[:-1]
        tail = payload[-1:] + suffix
        journaled = False
        try:
            if prefix:
                self.write(prefix)
            if head:
                self.write(head)
            self._wait_writable()
            with self.journal.sending():
                error = None
                try:
                    self.write(tail)
                except OSError as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    raise
                finally:
                    journaled = True
                    self._journal_send(message, payload, content_type, session, status, started, error)
        except OSError as exc:  # the client closed the connection: journaled, then this request ends
            self.close_connection()
            if not journaled:
                failure = f"{type(exc).__name__}: {exc}"
                self._journal_send(message, payload, content_type, session, status, started, failure)
            raise StreamClosed(f"{type(exc).__name__}: {exc}") from exc

    def _journal_send(
        self,
        message: dict[str, Any],
        payload: bytes,
        content_type: str,
        session: str | None,
        status: int,
        started: float,
        error: str | None,
    ) -> None:
        self.journal.write(
            "send",
            bytes=len(payload),
            id=message.get("id"),
            sha256=hashlib.sha256(payload).hexdigest(),
            write_ms=round((time.monotonic() - started) * 1000, 3),
            error=error,
            message=message,
            http=self.http_info(status, content_type=content_type, session=session),
        )

    def _wait_writable(self) -> None:
        """Block (outside any lock) until the socket can take the last bytes without blocking."""
        connection = self._handler.connection
        while not self._stopping.is_set():
            _, writable, broken = select.select([], [connection], [connection], 0.5)
            if broken:
                raise ConnectionError("socket error while waiting to write")
            if writable:
                return

    def wait_for_client_close(self) -> None:
        """Hold a request that gets no answer until the client closes its connection."""
        connection = self._handler.connection
        while not self._stopping.is_set():
            readable, _, _ = select.select([connection], [], [], 0.5)
            if readable:
                try:
                    if not connection.recv(1, socket.MSG_PEEK):
                        break
                except OSError:
                    break
                time.sleep(0.05)  # data we do not read (a pipelined request): keep holding
        self.close_connection()


class SseStream:
    """The ``text/event-stream`` answering one POSTed request, open until :meth:`finish`."""

    def __init__(self, responder: Responder, http_session: HttpSession) -> None:
        self._responder = responder
        self._http_session = http_session
        self._lock = threading.Lock()
        self.started = False
        self.finished = False

    def start(self) -> None:
        """Send the status line and headers (once; the first :meth:`send` starts the stream too)."""
        with self._lock:
            if self.started:
                return
            self.started = True
            headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "Transfer-Encoding": "chunked"}
            if self._http_session.stateless:
                headers["X-Accel-Buffering"] = "no"  # 2026-07-28: SHOULD, so proxies do not buffer
            self._responder.head(200, {**headers, **self._http_session.session_headers()})

    def send(self, message: dict[str, Any]) -> None:
        """Write one ``event: message`` (one chunk), journaled; raises :class:`StreamClosed`."""
        self.start()
        event = sse_event(message)
        with self._lock:
            if self.finished:
                raise StreamClosed("the stream has ended")
            self._responder.write_journaled(
                message,
                event,
                "text/event-stream",
                self._http_session.id,
                prefix=b"%x\r\n" % len(event),
                suffix=b"\r\n",
            )

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def request(
        self, method: str, params: dict[str, Any] | None = None, timeout_s: float = SERVER_REQUEST_TIMEOUT_S
    ) -> dict[str, Any]:
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
            self._responder.write(b"0\r\n\r\n")
