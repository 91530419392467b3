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
  client closed the pipe; null when it completed), ``message`` (elided), and with a results
  directory (``--results-dir``) ``result_file``: the file there that holds the message's
  ``result`` whole (an agent host's driver compares it with what the model read; the journal
  itself stays elided).
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
    """Appends events to a JSON-lines file (or nowhere when no path is given).

    ``results_dir``: also write the ``result`` of every message sent, whole, to a numbered file
    there (``result-1.json``, ...), named in the ``send`` event's ``result_file``.
    """

    def __init__(self, path: str | None, results_dir: str | None = None) -> None:
        self._start = time.monotonic()
        self._file: TextIO | None = None
        self._results_dir = results_dir
        self._results = 0
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the server's lifetime

    def write(self, event: str, **fields: Any) -> None:
        """Append one event; values are elided so the journal stays small."""
        if self._file is None:
            return
        record = {"t": round(time.monotonic() - self._start, 6), "event": event}
        if event == "send" and self._results_dir is not None:
            fields = {**fields, "result_file": self._keep_result(fields.get("message"))}
        record.update({key: elide(value) for key, value in fields.items()})
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def _keep_result(self, message: Any) -> str | None:
        if not isinstance(message, dict) or "result" not in message or self._results_dir is None:
            return None
        self._results += 1
        name = f"result-{self._results}.json"
        os.makedirs(self._results_dir, exist_ok=True)
        with open(os.path.join(self._results_dir, name), "w", encoding="utf-8") as out:
            json.dump(message["result"], out, ensure_ascii=False)
        return name

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
