"""One HTTP request on the Streamable HTTP endpoint: each method is a short sequence of named steps.

- POST: read the body (a body that cannot be read is journaled; too large: 413), parse it, apply
  the checks of :mod:`http_checks` (a refusal is journaled as ``recv`` with its ``reason``, then
  written), open a session on ``initialize`` (2025-11-25; under 2026-07-28 every message goes to
  the server's one stateless holder), journal the ``recv`` line with the status decided on receipt
  and the revision the message was sent under, then route the message (:mod:`http_routing`): 202
  for a notification or a response, the answer for a request.
- GET: 405 (no server-initiated stream); DELETE: ends the session (200, empty body; 405 under
  2026-07-28: no sessions); any other method: 405. These carry no message: their body is drained,
  the path and host are checked, and each is journaled as one ``http`` event (``method``, ``path``,
  ``status``, ``session``, ``reason``).

Every journal line about a request is written before its answer, so the journal is in wire order.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

import http_routing
from http_checks import (
    METHOD_NOT_ALLOWED,
    MODERN_METHOD_NOT_ALLOWED,
    MODERN_NO_GET_STREAM,
    MODERN_NO_SESSIONS,
    NO_GET_STREAM,
    TRANSPORT_ERROR,
    Refusal,
    endpoint_refusal,
    message_refusal,
    modern_refusal,
    session_refusal,
)
from http_request import Posted, header_info, read_body
from http_sessions import HttpSession, LockedJournal
from http_writers import Responder
from protocol import request_revision

if TYPE_CHECKING:
    from http_transport import McpServer


class McpHandler(BaseHTTPRequestHandler):
    """One HTTP connection to the MCP endpoint (keep-alive: one request after another)."""

    protocol_version = "HTTP/1.1"  # keep-alive; SSE answers use chunked transfer encoding
    server_version = "mcp-client-matrix-reference"
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server: McpServer
    respond: Responder

    def setup(self) -> None:
        super().setup()
        self.respond = Responder(self, self.server.journal, self.server.stopping)

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # the journal records all
        pass

    @property
    def journal(self) -> LockedJournal:
        return self.server.journal

    # -- POST: one JSON-RPC message -------------------------------------------------------------

    def do_POST(self) -> None:
        info = header_info(self.headers)
        body = self._read_post_body(info)
        if body is None:
            return
        posted = Posted.parse(body)
        protocol = self._revision(posted)
        target = self._target_session(posted)
        if isinstance(target, Refusal):
            self._journal_recv(posted, protocol, target.status, reason=target.reason, **info)
            self.respond.refuse(target)
        elif posted.kind != "request":
            self._journal_recv(posted, protocol, 202, **info)
            http_routing.accept(target, posted.message, posted.kind)
            self.respond.plain(202, b"", None, target.session_headers())
        else:
            self._journal_recv(posted, protocol, None if target.stateless else 200, **info)
            http_routing.answer(self.respond, target, posted.message, self.server.mode)

    def _target_session(self, posted: Posted) -> Refusal | HttpSession:
        """Why the message is refused, else the session it goes to (a new one for ``initialize``;
        the stateless holder under 2026-07-28)."""
        refusal = endpoint_refusal(self.respond.path, self.headers) or message_refusal(self.headers, posted)
        if refusal is not None:
            return refusal
        stateless = self.server.stateless
        if stateless is not None:
            return modern_refusal(self.headers, posted, stateless.session.envelope_error) or stateless
        named = self._named_session()
        refusal = session_refusal(self.headers, named, opening=posted.is_initialize)
        if refusal is not None:
            return refusal
        if posted.is_initialize:
            return self.server.new_session()
        assert named is not None  # session_refusal refuses any other message without a live session
        return named

    def _read_post_body(self, info: dict[str, Any]) -> bytes | None:
        """The body; None when it cannot be read (journaled, and answered 413 when it is too large)."""
        try:
            return read_body(self.headers, self.rfile)
        except OSError as exc:  # the client went away in the middle of its request
            self.respond.close_connection()
            self.journal.write(
                "recv",
                bytes=None,
                kind="invalid",
                protocol=None,
                error=f"{type(exc).__name__}: {exc}",
                http=self.respond.http_info(None, reason="connection lost while reading the body", **info),
            )
        except ValueError as exc:
            self.respond.close_connection()
            self.journal.write(
                "recv",
                bytes=None,
                kind="invalid",
                protocol=None,
                error=str(exc),
                http=self.respond.http_info(413, reason=str(exc), **info),
            )
            self.respond.error(413, TRANSPORT_ERROR, f"Payload Too Large: {exc}")
        return None

    def _journal_recv(self, posted: Posted, protocol: str | None, status: int | None, **http: Any) -> None:
        self.journal.write("recv", **posted.recv_fields(protocol), http=self.respond.http_info(status, **http))

    def _revision(self, posted: Posted) -> str | None:
        """The revision the message was sent under: ``revision`` of the protocol session that serves
        it (the stateless holder's, or the one its ``Mcp-Session-Id`` names), else as it says."""
        if not isinstance(posted.message, dict):
            return None
        holder = self.server.stateless or self._named_session()
        if holder is None:
            return request_revision(posted.message, None)
        revision: str | None = holder.session.revision(posted.message)
        return revision

    def _named_session(self) -> HttpSession | None:
        """The live session the ``Mcp-Session-Id`` header names, if any."""
        sid = self.headers.get("Mcp-Session-Id")
        return self.server.sessions.get(sid) if sid is not None else None

    # -- requests without a message -------------------------------------------------------------

    def do_GET(self) -> None:
        if self._preflight():  # no server-initiated SSE stream (spec: 405)
            self._refuse_without_message(NO_GET_STREAM if self.server.stateless is None else MODERN_NO_GET_STREAM)

    def do_DELETE(self) -> None:
        if not self._preflight():
            return
        if self.server.stateless is not None:
            self._refuse_without_message(MODERN_NO_SESSIONS)
            return
        refusal = session_refusal(self.headers, self._named_session(), opening=False)
        if refusal is not None:
            self._refuse_without_message(refusal)
            return
        self.server.end_session(self.headers["Mcp-Session-Id"])
        self._log_http(200, "session ended")
        self.respond.plain(200, b"", None)

    def _method_not_allowed(self) -> None:
        if self._preflight():
            self._refuse_without_message(
                METHOD_NOT_ALLOWED if self.server.stateless is None else MODERN_METHOD_NOT_ALLOWED
            )

    do_PUT = do_PATCH = do_HEAD = do_OPTIONS = _method_not_allowed

    def _preflight(self) -> bool:
        """Drain any body, check path and host; False when the request was refused."""
        try:
            read_body(self.headers, self.rfile)
        except (ValueError, OSError):
            self.respond.close_connection()
        refusal = endpoint_refusal(self.respond.path, self.headers)
        if refusal is not None:
            self._refuse_without_message(refusal)
        return refusal is None

    def _refuse_without_message(self, refusal: Refusal) -> None:
        self._log_http(refusal.status, refusal.reason)
        self.respond.refuse(refusal)

    def _log_http(self, status: int, reason: str) -> None:
        self.journal.write(
            "http", http=self.respond.http_info(status, session=self.headers.get("Mcp-Session-Id"), reason=reason)
        )
