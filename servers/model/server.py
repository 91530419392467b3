"""The scripted model's HTTP server on 127.0.0.1: every request journaled whole, each turn answered
by the script in the dialect its path belongs to.

A ``turn`` entry holds the request (``body``, ``headers`` with keys redacted), the tools it offered
(``offered``), the name each step's tool is offered under, or null (``exposed``), the model's move
(``action``: a call with the script ``step`` it makes, null for a loader's, or the answer) and the
tool results the request carried (``results``, as the dialect reads them): what
``clients/_support/host_driver.mjs`` reads the model view from, with no matching of its own."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any
from urllib.parse import urlsplit

import dialects
import wire
from script import Call, Script, exposed_name, next_action

HOST = "127.0.0.1"
SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "api-key"}
"""Headers journaled as ``<redacted>`` (the dummy key the adapter set, but a key all the same)."""


class Journal:
    """One JSON object per line, flushed, from any thread."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._start = time.monotonic()

    def write(self, event: str, **fields: Any) -> None:
        line = json.dumps({"t": round(time.monotonic() - self._start, 6), "event": event, **fields})
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, script: Script, journal: Journal) -> None:
        super().__init__((HOST, port), ModelHandler)
        self.script = script
        self.journal = journal
        self.turns = 0
        self.lock = threading.Lock()

    def next_turn(self) -> int:
        with self.lock:
            self.turns += 1
            return self.turns


class ModelHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ModelServer

    def log_message(self, format: str, *args: Any) -> None:  # the journal says it all
        return

    def setup(self) -> None:
        super().setup()
        self.server.journal.write("connection", peer=f"{self.client_address[0]}:{self.client_address[1]}")

    def _headers(self) -> dict[str, str]:
        return {k: ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()}

    def _send(self, reply: wire.Reply) -> None:
        self.send_response(reply.status)
        self.send_header("content-type", reply.content_type)
        self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def _body(self) -> Any:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {"<not json>": raw.decode("utf-8", "replace")}

    def do_GET(self) -> None:
        self.server.journal.write("request", method="GET", path=self.path, headers=self._headers())
        self._send(wire.json_reply({"error": f"no such resource: {self.path}"}, 404))

    do_HEAD = do_GET
    do_DELETE = do_GET

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body = self._body()
        journal = self.server.journal
        dialect = dialects.for_path(path)
        if dialect is None or not isinstance(body, dict):
            journal.write("request", method="POST", path=self.path, headers=self._headers(), body=body)
            answer = dialects.auxiliary(path, body) if isinstance(body, dict) else None
            if answer is not None:
                self._send(answer)
            else:
                self._send(wire.json_reply({"error": f"not a model API path: {self.path}"}, 404))
            return
        number = self.server.next_turn()
        request = dialect.parse(body)
        action = next_action(self.server.script, request, dialect.id_prefix)
        shown = (
            {"call": action.name, "arguments": dict(action.arguments), "call_id": action.call_id, "step": action.step}
            if isinstance(action, Call)
            else {"answer": action.text, "reason": action.reason}
        )
        journal.write(
            "turn",
            number=number,
            dialect=dialect.name,
            method="POST",
            path=self.path,
            headers=self._headers(),
            body=body,
            offered=list(request.tools),
            exposed={step.tool: exposed_name(step.tool, request.tools) for step in self.server.script.steps},
            action=shown,
            results=dialect.tool_results(body),
        )
        self._send(dialect.reply(action, body, number, path))


def serve(port: int, script: Script, journal: Journal, announce: IO[str]) -> None:
    """Bind, print ``{"url": ...}`` on ``announce``, serve until the process ends."""
    server = ModelServer(port, script, journal)
    url = f"http://{HOST}:{server.server_address[1]}"
    journal.write("start", url=url)
    announce.write(json.dumps({"url": url}) + "\n")
    announce.flush()
    server.serve_forever()
