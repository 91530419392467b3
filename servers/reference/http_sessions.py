"""What the Streamable HTTP transport keeps per MCP session, and its journal shared by all requests.

- :class:`LockedJournal`: the journal written from many request threads, in wire order.
- :class:`HttpSession`: one MCP session (its protocol session object, negotiated version, and the
  server-to-client requests waiting for the client's answer); under 2026-07-28 one holder without
  an id serves every request of the server, statelessly.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from journal import Journal


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
    """One MCP session: the protocol session object and what the transport keeps for it.

    ``sid`` None is the 2026-07-28 holder: no ``Mcp-Session-Id`` is minted or sent, and its protocol
    session (which keeps no state between requests) answers every request of the server.
    """

    def __init__(self, sid: str | None, session: Any) -> None:
        self.id = sid
        self.session = session
        self.lock = threading.Lock()  # Session.handle is called one message at a time, as on stdio
        self.version: str | None = None
        self._pending: dict[Any, dict[str, Any]] = {}
        self._pending_lock = threading.Lock()
        self._counter = 0

    @property
    def stateless(self) -> bool:
        """The 2026-07-28 holder (no session id)."""
        return self.id is None

    def session_headers(self) -> dict[str, str]:
        """The ``Mcp-Session-Id`` header of this session's answers (none when stateless)."""
        return {} if self.id is None else {"Mcp-Session-Id": self.id}

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
