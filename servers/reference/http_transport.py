"""MCP Streamable HTTP (specs 2025-11-25 and 2026-07-28, basic/transports) for the reference server, journaled.

One endpoint, ``/mcp`` on 127.0.0.1, serving the same transport-independent
:class:`protocol.Session` as stdio: every POST carries one JSON-RPC message and
``Session.handle(message)`` says what to answer. Two modes:

- ``http-json``: a request is answered with one ``application/json`` body;
- ``http-sse``: a request is answered with a ``text/event-stream``: one ``event: message`` event
  per message ``handle`` returned, then the stream ends (chunked transfer encoding, no event ids,
  no priming event, no resumption).

The revision the server speaks (``protocol``, ``--protocol``) picks the transport's era:

- 2025-11-25 (the default): notifications and responses get ``202 Accepted`` with no body. Every
  ``initialize`` request opens a new session, whose id (32 hex characters) is sent in
  ``Mcp-Session-Id`` on the initialize response and on every later response of that session;
  DELETE with a live session ends it (200, empty body).
- 2026-07-28: stateless. No session id is minted, required or sent (one that comes is journaled
  and ignored), and one protocol session serves every request (it keeps nothing between them;
  its ``handle`` is called under its lock). Every request must carry ``MCP-Protocol-Version``,
  ``Mcp-Method`` and, for a named method, ``Mcp-Name`` matching its body, then its ``_meta``
  envelope; a refusal is a JSON-RPC error with the request's id (400, or 404 for ``initialize``),
  and an answer's status follows its error code (404 for ``-32601``). Notifications get 202, a
  client's response 400; GET and DELETE get 405 (no GET stream, no sessions).

Behaviour where the spec leaves room is chosen, and documented, where it is made:

- :mod:`http_checks`: which requests are refused, with which status and in which order (Host and
  Origin 403, Accept 406, Content-Type 415, a body that is not one JSON-RPC message 400, session
  id 400/404, ``MCP-Protocol-Version`` 400, GET and other methods 405, other paths 404; under
  2026-07-28 the header and envelope checks instead of the session ones), and the status of a
  2026-07-28 answer;
- :mod:`http_request`: reading a body (at most 64 MiB, else 413) and the ``recv`` journal fields;
- :mod:`http_handler`: the steps of each HTTP method, and the journal lines of requests;
- :mod:`http_routing`: a message to its session, and the answer back (unanswered requests are
  held until the client closes; ``http-json`` sends only the first of several messages);
- :mod:`http_writers`: the bytes of every answer and their ``send`` journal lines, the SSE stream;
- :mod:`http_sessions`: the sessions and the journal shared by the request threads, in wire order.

Journal (see :mod:`journal`; one line per event, written under a lock):

- ``recv``: one per POST body: ``bytes`` (the body), ``kind``, ``method``, ``id``, ``params``
  (elided), ``protocol`` (the revision it was sent under: :meth:`protocol.Session.revision`),
  ``error`` (why it is not JSON), and ``http``: ``method``, ``path``, ``status`` (what the server
  answered, as decided on receipt: a refusal's status, 202, 200 for a request it dispatches under
  2025-11-25, None for one it dispatches under 2026-07-28, whose status is its answer's, on the
  ``send`` line), ``content_type`` (the request's), ``accept``, ``session``, ``protocol_version``,
  ``mcp_method``, ``mcp_name`` (the request headers, as they came) and ``reason`` (why it was
  refused, when it was).
- ``send``: one per JSON-RPC message written (a 2026-07-28 refusal included: it answers the
  request): ``bytes`` (the JSON body, or the whole SSE event
  ``event: message\\ndata: ...\\n\\n``, without chunk framing), ``id``, ``sha256`` of those bytes,
  ``write_ms``, ``error``, ``message`` (elided), and ``http``: ``method``, ``path``, ``status``,
  ``content_type`` (the response's), ``session`` (None under 2026-07-28).
- ``http``: a request that carried no message (GET, DELETE, another method or path):
  ``method``, ``path``, ``status``, ``session``, ``reason``.
- ``unsent`` / ``unanswered`` / ``error``: see :mod:`http_routing`.
"""

from __future__ import annotations

import json
import secrets
import sys
import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any

from http_checks import PATH
from http_handler import McpHandler
from http_sessions import HttpSession, LockedJournal
from journal import Journal
from protocol import LATEST_VERSION, MODERN_VERSIONS

HOST = "127.0.0.1"
MODES = ("http-json", "http-sse")


class McpServer(ThreadingHTTPServer):
    """The HTTP server: its mode, the journal and the live sessions (under 2026-07-28: the one
    stateless holder, :attr:`stateless`)."""

    daemon_threads = True
    allow_reuse_address = False

    def __init__(
        self,
        port: int,
        mode: str,
        session_factory: Callable[[], Any],
        journal: LockedJournal,
        protocol: str = LATEST_VERSION,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown HTTP mode {mode!r}")
        self.mode = mode
        self.session_factory = session_factory
        self.journal = journal
        self.stateless = HttpSession(None, session_factory()) if protocol in MODERN_VERSIONS else None
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
        sid = secrets.token_hex(16)
        http_session = HttpSession(sid, self.session_factory())
        with self._sessions_lock:
            self.sessions[sid] = http_session
        return http_session

    def end_session(self, sid: str) -> None:
        with self._sessions_lock:
            self.sessions.pop(sid, None)


def serve(
    session_factory: Callable[[], Any],
    journal: Journal | LockedJournal,
    mode: str,
    port: int = 0,
    start: dict[str, Any] | None = None,
    protocol: str = LATEST_VERSION,
) -> str:
    """Bind 127.0.0.1:``port``, journal ``start``, print ``{"url": ...}`` on stdout, serve forever.

    ``protocol`` is the revision served (2025-11-25 or 2026-07-28). Returns the exit reason when
    serving stops other than by a signal handler's ``os._exit``.
    """
    locked = journal if isinstance(journal, LockedJournal) else LockedJournal(journal)
    server = McpServer(port, mode, session_factory, locked, protocol)
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
