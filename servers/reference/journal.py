"""The server's journal: JSON lines describing what went over the wire, the ground truth.

Events (each line has ``t``, seconds since the server started, and ``event``):

- ``start``: ``case``, ``schema``, ``protocol`` (the revision served, ``--protocol``), ``pid``,
  ``transport``.
- ``recv``: a frame read: ``bytes`` (newline included), ``kind`` (request / notification /
  response / invalid), ``method``, ``id``, ``params`` (elided), ``protocol`` (the revision the
  message was sent under: its ``_meta`` version under 2026-07-28, the version an ``initialize``
  asks for, else the one the session negotiated; :meth:`protocol.Session.revision`).
- ``send``: a frame written: ``bytes`` (newline included), ``id``, ``sha256`` of the frame,
  ``write_ms`` (how long the write and flush blocked), ``error`` (why the write failed, e.g. the
  client closed the pipe; null when it completed), ``message`` (elided).
- ``exit``: ``reason`` (stdin-eof / signal / error) and ``detail``.

Over Streamable HTTP (``http_transport.py``) ``start`` also has ``url``; ``recv`` and ``send`` also
have ``http`` (method, path, status, content type, session, and on ``recv`` the request headers
``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``; ``bytes`` is the HTTP body, or the SSE
event, of that message); ``http`` events record requests that carry no message (GET, DELETE).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, TextIO

from elide import elide


class Journal:
    """Appends events to a JSON-lines file (or nowhere when no path is given)."""

    def __init__(self, path: str | None) -> None:
        self._start = time.monotonic()
        self._file: TextIO | None = None
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the server's lifetime

    def write(self, event: str, **fields: Any) -> None:
        """Append one event; values are elided so the journal stays small."""
        if self._file is None:
            return
        record = {"t": round(time.monotonic() - self._start, 6), "event": event}
        record.update({key: elide(value) for key, value in fields.items()})
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
