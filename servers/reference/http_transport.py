"""MCP Streamable HTTP (spec 2025-11-25, basic/transports) for the reference server, journaled.

One endpoint, ``/mcp`` on 127.0.0.1, serving the same transport-independent
:class:`protocol.Session` as stdio: every POST carries one JSON-RPC message and
``Session.handle(message)`` says what to answer. Two modes:

- ``http-json``: a request is answered with one ``application/json`` body;
- ``http-sse``: a request is answered with a ``text/event-stream``: one ``event: message`` event
  per message ``handle`` returned, then the stream ends (chunked transfer encoding, no event ids,
  no priming event, no resumption).

Notifications and responses get ``202 Accepted`` with no body. Behaviour where the spec leaves room
(each choice is named in the code where it is made):

- Security: an ``Origin`` header that is present and not ``http(s)://localhost|127.0.0.1|[::1]``
  (any port) gets 403; so does a ``Host`` header naming any other host (DNS-rebinding protection).
- ``Accept`` must admit both ``application/json`` and ``text/event-stream`` (media ranges such as
  ``*/*`` count, ``q=0`` excludes) in both modes, else 406. ``Content-Type`` must be
  ``application/json``, else 415. A body that is not JSON gets 400 (-32700); a JSON array (a
  batch, not allowed since 2025-06-18) or a non-object gets 400 (-32600).
- Sessions: every ``initialize`` request opens a new session, whose id (32 hex characters) is sent
  in ``Mcp-Session-Id`` on the initialize response and on every later response of that session.
  Any other POST, and DELETE, without the header gets 400 (the server requires the id: the spec's
  SHOULD); a header naming no live session gets 404, on any method and on ``initialize`` too.
  DELETE with a live session ends it (200, empty body).
- ``MCP-Protocol-Version`` (on every request but ``initialize``): absent is accepted (the spec's
  2025-03-26 fallback); a value that is neither a version this server supports nor the version
  its initialize answer negotiated for the session gets 400.
- GET gets 405 (no server-initiated stream); other methods get 405; paths other than ``/mcp`` 404.
- A request for which ``handle`` returns nothing is left unanswered until the client closes the
  connection (the HTTP form of "never answered"); in ``http-json`` only the first message of a
  multi-message answer can be sent, the rest is journaled as ``unsent``.
- A session object with a ``handle_streaming(message, stream)`` method (the ``--case
  conformance`` session, :mod:`conformance_tools`) gets, in ``http-sse`` mode, an
  :class:`SseStream` on which it can send notifications and requests to the client (whose
  responses arrive as POSTs and are routed back) before its answer; in ``http-json`` it gets None.

Journal (see :mod:`journal`; one line per event, written under a lock):

- ``recv``: one per POST body: ``bytes`` (the body), ``kind``, ``method``, ``id``, ``params``
  (elided), ``error`` (why it is not JSON), and ``http``: ``method``, ``path``, ``status`` (what
  the server answered), ``content_type`` (the request's), ``accept``, ``session``,
  ``protocol_version`` (the request headers) and ``reason`` (why it was refused, when it was).
- ``send``: one per JSON-RPC message written: ``bytes`` (the JSON body, or the whole SSE event
  ``event: message\\ndata: ...\\n\\n``, without chunk framing), ``id``, ``sha256`` of those bytes,
  ``write_ms``, ``error``, ``message`` (elided), and ``http``: ``method``, ``path``, ``status``,
  ``content_type`` (the response's), ``session``.
- ``http``: a request that carried no message (GET, DELETE, another method or path):
  ``method``, ``path``, ``status``, ``session``, ``reason``.
- ``unsent`` / ``unanswered``: see above.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import urlsplit

from http_sessions import HttpSession, LockedJournal, SseStream, StreamClosed, encode
from journal import Journal
from protocol import SUPPORTED_VERSIONS, message_kind

HOST = "127.0.0.1"
PATH = "/mcp"
MODES = ("http-json", "http-sse")
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")
MAX_BODY = 64 * 1024 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
TRANSPORT_ERROR = -32000
SESSION_NOT_FOUND = -32001


class McpHandler(BaseHTTPRequestHandler):
    """One HTTP request on the MCP endpoint."""

    protocol_version = "HTTP/1.1"  # keep-alive; SSE answers use chunked transfer encoding
    server_version = "mcp-client-matrix-reference"
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server: "McpServer"

    # -- plumbing -------------------------------------------------------------------------------

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the journal records all
        pass

    @property
    def journal(self) -> LockedJournal:
        return self.server.journal

    def _path(self) -> str:
        return urlsplit(self.path).path

    def _http_info(self, status: int, **extra: Any) -> dict[str, Any]:
        return {"method": self.command, "path": self._path(), "status": status, **extra}

    def _send_plain(self, status: int, body: bytes, content_type: str | None,
                    headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _refuse(self, status: int, code: int, text: str, headers: dict[str, str] | None = None) -> None:
        """An HTTP error whose body is a JSON-RPC error response without an id (``id: null``)."""
        body = encode({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}})
        self._send_plain(status, body, "application/json", headers)

    def _log_http(self, status: int, reason: str | None, session: str | None = None) -> None:
        self.journal.write("http", http=self._http_info(status, session=session, reason=reason))

    def write_journaled(self, message: dict[str, Any], payload: bytes, content_type: str, session: str,
                        prefix: bytes = b"", suffix: bytes = b"") -> None:
        """Write ``prefix + payload + suffix`` and journal ``payload`` as one ``send`` line.

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
                self.wfile.write(prefix)
            if head:
                self.wfile.write(head)
            self._wait_writable()
            with self.journal.sending():
                error = None
                try:
                    self.wfile.write(tail)
                except OSError as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    raise
                finally:
                    journaled = True
                    self._journal_send(message, payload, content_type, session, started, error)
        except OSError as exc:  # the client closed the connection: journaled, then this request ends
            self.close_connection = True
            if not journaled:
                self._journal_send(message, payload, content_type, session, started,
                                   f"{type(exc).__name__}: {exc}")
            raise StreamClosed(f"{type(exc).__name__}: {exc}") from exc

    def _journal_send(self, message: dict[str, Any], payload: bytes, content_type: str, session: str,
                      started: float, error: str | None) -> None:
        self.journal.write(
            "send", bytes=len(payload), id=message.get("id"), sha256=hashlib.sha256(payload).hexdigest(),
            write_ms=round((time.monotonic() - started) * 1000, 3), error=error, message=message,
            http=self._http_info(200, content_type=content_type, session=session))

    def _wait_writable(self) -> None:
        """Block (outside any lock) until the socket can take the last bytes without blocking."""
        while not self.server.stopping.is_set():
            _, writable, broken = select.select([], [self.connection], [self.connection], 0.5)
            if broken:
                raise ConnectionError("socket error while waiting to write")
            if writable:
                return

    def _host_allowed(self) -> str | None:
        """Why the request is refused as a possible DNS-rebinding attack, or None."""
        origin = self.headers.get("Origin")
        if origin is not None:
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or (parts.hostname or "") not in LOCAL_HOSTS:
                return f"Origin {origin!r} is not a local origin"
        host = self.headers.get("Host")
        if host is not None:
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name.lower() not in LOCAL_HOSTS:
                return f"Host {host!r} is not a local host"
        return None

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks, total = [], 0
            while True:
                size = int(self.rfile.readline(1024).split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY:
                    raise ValueError("body too large")
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(length) if length > 0 else b""

    def _wait_for_client_close(self) -> None:
        """Hold a request that gets no answer until the client closes its connection."""
        conn = self.connection
        while not self.server.stopping.is_set():
            readable, _, _ = select.select([conn], [], [], 0.5)
            if readable:
                try:
                    if not conn.recv(1, socket.MSG_PEEK):
                        break
                except OSError:
                    break
                time.sleep(0.05)  # data we do not read (a pipelined request): keep holding
        self.close_connection = True

    # -- methods --------------------------------------------------------------------------------

    def _refused_early(self) -> tuple[int, str, str] | None:
        """(status, JSON-RPC-less text, reason) when the path or the host is refused, else None."""
        if self._path() != PATH:
            return 404, "Not Found", "unknown path"
        refused = self._host_allowed()
        if refused:
            return 403, f"Forbidden: {refused}", refused
        return None

    def _preflight(self) -> bool:
        """For methods without a message: drain any body, check path and host; False when answered."""
        try:
            self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
        early = self._refused_early()
        if early is None:
            return True
        status, text, reason = early
        self._log_http(status, reason, self.headers.get("Mcp-Session-Id"))
        if status == 404:
            self._send_plain(404, b"Not Found\n", "text/plain; charset=utf-8")
        else:
            self._refuse(status, TRANSPORT_ERROR, text)
        return False

    def do_GET(self) -> None:  # noqa: N802
        if not self._preflight():
            return
        # The server offers no server-initiated SSE stream (spec: 405 Method Not Allowed).
        self._log_http(405, "no GET stream", self.headers.get("Mcp-Session-Id"))
        self._refuse(405, TRANSPORT_ERROR, "Method Not Allowed: this server offers no GET stream",
                     {"Allow": "POST, DELETE"})

    def do_DELETE(self) -> None:  # noqa: N802
        if not self._preflight():
            return
        sid = self.headers.get("Mcp-Session-Id")
        if sid is None:
            self._log_http(400, "no session id", None)
            self._refuse(400, TRANSPORT_ERROR, "Bad Request: Mcp-Session-Id header is required")
            return
        http_session = self.server.sessions.get(sid)
        if http_session is None:
            self._log_http(404, "unknown session", sid)
            self._refuse(404, SESSION_NOT_FOUND, "Session not found")
            return
        bad_version = self._bad_version(http_session)
        if bad_version:
            self._log_http(400, bad_version, sid)
            self._refuse(400, TRANSPORT_ERROR, f"Bad Request: {bad_version}")
            return
        self.server.end_session(sid)
        self._log_http(200, "session ended", sid)
        self._send_plain(200, b"", None)

    def _method_not_allowed(self) -> None:
        if not self._preflight():
            return
        self._log_http(405, "method not allowed", self.headers.get("Mcp-Session-Id"))
        self._refuse(405, TRANSPORT_ERROR, "Method Not Allowed", {"Allow": "POST, DELETE"})

    do_PUT = do_PATCH = do_HEAD = do_OPTIONS = _method_not_allowed  # noqa: N815

    def _bad_version(self, http_session: HttpSession) -> str | None:
        version = self.headers.get("MCP-Protocol-Version")
        if version is None:
            return None  # the spec's fallback: assume 2025-03-26
        if version in SUPPORTED_VERSIONS or version == http_session.version:
            return None
        return f"unsupported MCP-Protocol-Version {version!r}"

    def do_POST(self) -> None:  # noqa: N802
        headers = self.headers
        sid_header = headers.get("Mcp-Session-Id")
        info = {"content_type": headers.get("Content-Type"), "accept": headers.get("Accept"),
                "session": sid_header, "protocol_version": headers.get("MCP-Protocol-Version")}
        try:
            body = self._read_body()
        except OSError as exc:  # the client went away in the middle of its request
            self.close_connection = True
            self.journal.write("recv", bytes=None, kind="invalid", error=f"{type(exc).__name__}: {exc}",
                               http=self._http_info(None, reason="connection lost while reading the body", **info))
            return
        except ValueError as exc:
            self.close_connection = True
            self.journal.write("recv", bytes=None, kind="invalid", error=str(exc),
                               http=self._http_info(413, reason=str(exc), **info))
            self._refuse(413, TRANSPORT_ERROR, f"Payload Too Large: {exc}")
            return

        message: Any = None
        parse_error = None
        try:
            message = json.loads(body)
        except ValueError as exc:
            parse_error = str(exc)
        kind = "invalid" if parse_error else message_kind(message)
        is_dict = isinstance(message, dict)
        fields = {"bytes": len(body), "kind": kind,
                  "method": message.get("method") if is_dict else None,
                  "id": message.get("id") if is_dict else None,
                  "params": message.get("params") if is_dict else None}
        if parse_error:
            fields["error"] = parse_error

        def refuse(status: int, code: int, text: str, reason: str) -> None:
            self.journal.write("recv", **fields, http=self._http_info(status, reason=reason, **info))
            self._refuse(status, code, text)

        early = self._refused_early()
        if early is not None:
            status, text, reason = early
            if status == 404:
                self.journal.write("recv", **fields, http=self._http_info(404, reason=reason, **info))
                self._send_plain(404, b"Not Found\n", "text/plain; charset=utf-8")
                return None
            return refuse(status, TRANSPORT_ERROR, text, reason)
        # Then the order of the checks follows the TypeScript SDK's server transport.
        if not accepts_both(headers.get("Accept")):
            return refuse(406, TRANSPORT_ERROR,
                          "Not Acceptable: Client must accept both application/json and text/event-stream",
                          "Accept lacks application/json or text/event-stream")
        media_type = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if media_type != "application/json":
            return refuse(415, TRANSPORT_ERROR, "Unsupported Media Type: Content-Type must be application/json",
                          "Content-Type is not application/json")
        if parse_error:
            return refuse(400, PARSE_ERROR, f"Parse error: {parse_error}", "body is not JSON")
        if kind == "invalid":
            what = "a JSON-RPC batch (not allowed)" if isinstance(message, list) else "not a JSON-RPC message"
            return refuse(400, INVALID_REQUEST, f"Invalid Request: {what}", what)

        is_initialize = kind == "request" and message.get("method") == "initialize"
        named = self.server.sessions.get(sid_header) if sid_header is not None else None
        if sid_header is not None and named is None:
            return refuse(404, SESSION_NOT_FOUND, "Session not found", "unknown session")
        if is_initialize:
            http_session = self.server.new_session()
        else:
            if named is None:
                return refuse(400, TRANSPORT_ERROR, "Bad Request: Mcp-Session-Id header is required",
                              "no session id")
            http_session = named
            bad_version = self._bad_version(http_session)
            if bad_version:
                return refuse(400, TRANSPORT_ERROR, f"Bad Request: {bad_version}", bad_version)

        if kind != "request":
            self.journal.write("recv", **fields, http=self._http_info(202, **info))
            if kind == "response":
                http_session.deliver(message)
            else:
                self._handle(http_session, message, None)
            self._send_plain(202, b"", None, {"Mcp-Session-Id": http_session.id})
            return

        self.journal.write("recv", **fields, http=self._http_info(200, **info))
        if self.server.mode == "http-sse":
            self._answer_sse(http_session, message)
        else:
            self._answer_json(http_session, message)

    # -- answering a request --------------------------------------------------------------------

    def _handle(self, http_session: HttpSession, message: dict[str, Any], stream: SseStream | None) -> list:
        streaming = getattr(http_session.session, "handle_streaming", None)
        if streaming is not None:
            return streaming(message, stream)
        with http_session.lock:
            return http_session.session.handle(message)

    def _note_version(self, http_session: HttpSession, message: dict[str, Any], responses: list) -> None:
        if message.get("method") != "initialize":
            return
        for response in responses:
            result = response.get("result") if isinstance(response, dict) else None
            if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                http_session.version = result["protocolVersion"]

    def _failed(self, message: dict[str, Any], exc: Exception) -> None:
        self.journal.write("error", id=message.get("id"), detail=f"{type(exc).__name__}: {exc}",
                           http=self._http_info(500))

    def _answer_json(self, http_session: HttpSession, message: dict[str, Any]) -> None:
        try:
            responses = self._handle(http_session, message, None)
        except Exception as exc:  # a bug of ours: journaled, and the client gets a 500
            self._failed(message, exc)
            self._refuse(500, -32603, f"Internal error: {type(exc).__name__}")
            return
        self._note_version(http_session, message, responses)
        if not responses:
            self.journal.write("unanswered", id=message.get("id"), http=self._http_info(None))
            self._wait_for_client_close()
            return
        first, rest = responses[0], responses[1:]
        body = encode(first)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Mcp-Session-Id", http_session.id)
        try:
            self.end_headers()
        except OSError:
            self.close_connection = True
            return
        try:
            self.write_journaled(first, body, "application/json", http_session.id)
        except StreamClosed:
            return
        for extra in rest:
            self.journal.write("unsent", id=extra.get("id"), message=extra,
                               reason="http-json carries one message per HTTP response")

    def _answer_sse(self, http_session: HttpSession, message: dict[str, Any]) -> None:
        stream = SseStream(self, http_session)
        try:
            stream.start()
            try:
                responses = self._handle(http_session, message, stream)
            except (StreamClosed, OSError):
                raise
            except Exception as exc:  # a bug of ours: journaled, and the stream ends without an answer
                self._failed(message, exc)
                stream.finish()
                return
            self._note_version(http_session, message, responses)
            if not responses:
                self.journal.write("unanswered", id=message.get("id"), http=self._http_info(200))
                self._wait_for_client_close()
                return
            for response in responses:
                stream.send(response)
            stream.finish()
        except (StreamClosed, OSError):
            self.close_connection = True


def accepts_both(accept: str | None) -> bool:
    """Whether an ``Accept`` header admits ``application/json`` and ``text/event-stream``."""
    if not accept:
        return False
    json_ok = sse_ok = False
    for item in accept.split(","):
        parts = [part.strip() for part in item.split(";")]
        media = parts[0].lower()
        quality = 1.0
        for param in parts[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality <= 0:
            continue
        json_ok = json_ok or media in ("application/json", "application/*", "*/*")
        sse_ok = sse_ok or media in ("text/event-stream", "text/*", "*/*")
    return json_ok and sse_ok


class McpServer(ThreadingHTTPServer):
    """The HTTP server: its mode, the journal and the live sessions."""

    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, port: int, mode: str, session_factory: Callable[[], Any], journal: LockedJournal) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown HTTP mode {mode!r}")
        self.mode = mode
        self.session_factory = session_factory
        self.journal = journal
        self.sessions: dict[str, HttpSession] = {}
        self.stopping = threading.Event()
        self._sessions_lock = threading.Lock()
        super().__init__((HOST, port), McpHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that resets an idle keep-alive connection is no error; anything else is printed."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}{PATH}"

    def new_session(self) -> HttpSession:
        http_session = HttpSession(secrets.token_hex(16), self.session_factory())
        with self._sessions_lock:
            self.sessions[http_session.id] = http_session
        return http_session

    def end_session(self, sid: str) -> None:
        with self._sessions_lock:
            self.sessions.pop(sid, None)


def serve(session_factory: Callable[[], Any], journal: Journal | LockedJournal, mode: str, port: int = 0,
          start: dict[str, Any] | None = None) -> str:
    """Bind 127.0.0.1:``port``, journal ``start``, print ``{"url": ...}`` on stdout, serve forever.

    Returns the exit reason when serving stops other than by a signal handler's ``os._exit``.
    """
    locked = journal if isinstance(journal, LockedJournal) else LockedJournal(journal)
    server = McpServer(port, mode, session_factory, locked)
    try:
        locked.write("start", **(start or {}), transport=mode, url=server.url)
        print(json.dumps({"url": server.url}), flush=True)
        server.serve_forever(poll_interval=0.2)
        return "shutdown"
    except KeyboardInterrupt:
        return "signal"
    finally:
        server.stopping.set()
        server.server_close()
