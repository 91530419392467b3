"""Live mode over Streamable HTTP: a recording reverse proxy between a client and the user's server.

``python servers/reference/live_http.py --live LIVE.json --journal J --transport http-json|http-sse
--port 0 --case ID --schema S --protocol P`` listens on 127.0.0.1 and prints
``{"url": "http://127.0.0.1:PORT/mcp"}`` once it does, as the reference server; the harness gives
that URL to the client. ``LIVE.json`` (``{"url": ...}``, written by the harness into the cell
directory) names the user's endpoint; ``--transport`` is the framing that server answered the
harness's opening request with (``harness/recorded/live.py``), journaled on ``start``.

Every request, whatever its path, goes to that endpoint: the method, the body and the headers
unchanged, except the hop-by-hop headers, ``Host`` (the upstream's) and ``Accept-Encoding``
(``identity``: the proxy must read what it journals). The answer comes back the same way: the
status and the headers (except hop-by-hop ones and the body's length, which the proxy frames
again), then the body: a JSON body whole, an SSE stream event by event as the server writes it
(chunked transfer encoding), anything else as it comes. The proxy cannot connect: ``502``.

Journal (``journal.py``, the reference server's HTTP lines): ``recv`` for every POST body before it
is forwarded (``http.status`` None: the status is the answer's, on its lines), ``send`` for every
JSON-RPC message the server answered (a JSON body, or one SSE event: ``bytes`` the whole event),
``send-raw`` for an SSE event that carries no JSON-RPC message or a body that is not JSON, and
``http`` for the head of an answer without a message (``202``) and of every answer to a request
that carries none (``GET``: the server's stream, its events then as ``send`` lines; ``DELETE``).
The follow-up tool ``echo`` is the proxy's own (``live_splice.py``): added to ``tools/list``
answers, its calls answered in the transport's framing. SIGTERM ends the proxy at once.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from http_request import Posted, header_info, read_body
from http_sessions import LockedJournal
from journal import Journal
from live_splice import Splice, send_fields

HOST = "127.0.0.1"
PATH = "/mcp"
HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
     "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding")
)  # fmt: skip
EVENT_STREAM = "text/event-stream"


class Proxy(ThreadingHTTPServer):
    """The listening side: the upstream endpoint, the framing, the journal and the splice."""

    daemon_threads = True

    def __init__(self, port: int, upstream: str, mode: str, journal: LockedJournal) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {upstream!r}")
        self.upstream = parts
        self.mode = mode
        self.journal = journal
        self.splice = Splice()
        super().__init__((HOST, port), ProxyHandler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}{PATH}"

    def connect(self) -> http.client.HTTPConnection:
        port = self.upstream.port
        if self.upstream.scheme == "https":
            return http.client.HTTPSConnection(self.upstream.hostname or "", port)
        return http.client.HTTPConnection(self.upstream.hostname or "", port)

    def target(self, path: str) -> str:
        """The upstream path for a request to ``path`` (its query kept, the upstream's path used)."""
        query = urlsplit(path).query
        base = self.upstream.path or "/"
        joined = "&".join(part for part in (self.upstream.query, query) if part)
        return f"{base}?{joined}" if joined else base


class ProxyHandler(BaseHTTPRequestHandler):
    """One client connection (keep-alive); each request forwarded, its answer journaled."""

    protocol_version = "HTTP/1.1"
    server_version = "mcp-client-matrix-live-proxy"
    disable_nagle_algorithm = True
    server: Proxy

    def version_string(self) -> str:  # on the proxy's own answers (the follow-up, 502)
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # the journal records all
        pass

    def http_info(self, status: int | None, **extra: Any) -> dict[str, Any]:
        return {"method": self.command, "path": urlsplit(self.path).path, "status": status, **extra}

    def do_POST(self) -> None:
        try:
            body = read_body(self.headers, self.rfile)
        except (OSError, ValueError) as exc:
            self.close_connection = True
            self.server.journal.write(
                "recv", bytes=None, kind="invalid", protocol=None, error=f"{type(exc).__name__}: {exc}",
                http=self.http_info(None, reason="the body could not be read", **header_info(self.headers)),
            )  # fmt: skip
            return
        posted = Posted.parse(body)
        splice = self.server.splice
        protocol = splice.revision(posted.message) if isinstance(posted.message, dict) else None
        answer = splice.from_client(posted.message)
        self.server.journal.write(
            "recv", **posted.recv_fields(protocol), http=self.http_info(None, **header_info(self.headers))
        )
        if answer is not None:
            self._answer_followup(answer)
        else:
            self._forward(body)

    def do_GET(self) -> None:
        self._forward(None)

    def do_DELETE(self) -> None:
        self._forward(None)

    def _answer_followup(self, answer: dict[str, Any]) -> None:
        data = json.dumps(answer, separators=(",", ":")).encode("utf-8")
        sse = self.server.mode == "http-sse"
        frame = b"event: message\ndata: " + data + b"\n\n" if sse else data
        self.send_response(200)
        self.send_header("Content-Type", EVENT_STREAM if sse else "application/json")
        if self.headers.get("Mcp-Session-Id"):
            self.send_header("Mcp-Session-Id", self.headers["Mcp-Session-Id"])
        self.send_header("Content-Length", str(len(frame)))
        self.end_headers()
        content_type = EVENT_STREAM if sse else "application/json"
        self._send(frame, answer, 200, content_type, "answered by the proxy")

    def _forward(self, body: bytes | None) -> None:
        if body is None:  # GET, DELETE: any body is drained, not forwarded
            try:
                read_body(self.headers, self.rfile)
            except (OSError, ValueError):
                self.close_connection = True
        headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP}
        headers["Accept-Encoding"] = "identity"
        connection = self.server.connect()
        try:
            connection.request(self.command, self.server.target(self.path), body=body, headers=headers)
            response = connection.getresponse()
        except OSError as exc:
            connection.close()
            self._bad_gateway(f"{type(exc).__name__}: {exc}")
            return
        try:
            self._relay(response)
        finally:
            connection.close()

    def _bad_gateway(self, why: str) -> None:
        text = f"live proxy: cannot reach {self.server.upstream.geturl()}: {why}"
        self.server.journal.write("http", http=self.http_info(502, reason=text))
        data = text.encode("utf-8")
        self.send_response(502)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _relay(self, response: http.client.HTTPResponse) -> None:
        content_type = response.getheader("Content-Type") or ""
        streaming = content_type.split(";")[0].strip().lower() == EVENT_STREAM
        data = b"" if streaming else response.read()
        message: Any = None
        note = None
        if data:
            try:
                message = json.loads(data)
            except ValueError:
                message = None
            note = self.server.splice.from_server(message)
            if note is not None:
                data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if self.command != "POST" or not (streaming or data):  # an answer without a message: its head, first
            http = self.http_info(response.status, content_type=content_type or None, session=self._session())
            self.server.journal.write("http", http=http)
        self.send_response_only(response.status, response.reason)  # the server's own Server and Date
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header(*(("Transfer-Encoding", "chunked") if streaming else ("Content-Length", str(len(data)))))
        self.end_headers()
        if streaming:
            self._relay_events(response, content_type)
        elif isinstance(message, (dict, list)):
            self._send(data, message, response.status, content_type, note)
        elif data:
            self._send_raw(data, response.status, content_type, "not JSON-RPC")

    def _relay_events(self, response: http.client.HTTPResponse, content_type: str) -> None:
        """Each SSE event as it is complete, one chunk each; the stream's end as the server's."""
        try:
            for event in _events(response):
                message = _event_message(event)
                if message is None:
                    why = "SSE event without a JSON-RPC message"
                    self._send_raw(event, response.status, content_type, why, chunked=True)
                    continue
                note = self.server.splice.from_server(message)
                frame = _with_data(event, message) if note is not None else event
                self._send(frame, message, response.status, content_type, note, chunked=True)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # either side went away: the stream ends here
            self.close_connection = True

    def _session(self) -> str | None:
        return self.headers.get("Mcp-Session-Id")

    def _send(
        self, frame: bytes, message: Any, status: int, content_type: str, note: str | None,
        *, chunked: bool = False,
    ) -> None:  # fmt: skip
        """Journal one message's frame, then write it (its ``send`` line before the client can act)."""
        with self.server.journal.sending():
            http = self.http_info(status, content_type=content_type, session=self._session())
            self.server.journal.write("send", **send_fields(frame, message, note), http=http)
            self._write(frame, chunked)

    def _send_raw(self, frame: bytes, status: int, content_type: str, note: str, *, chunked: bool = False) -> None:
        with self.server.journal.sending():
            self.server.journal.write(
                "send-raw", stream="http", bytes=len(frame), note=note, write_ms=0.0,
                excerpt=frame[:120].decode("utf-8", "replace"),
                http=self.http_info(status, content_type=content_type or None, session=self._session()),
            )  # fmt: skip
            self._write(frame, chunked)

    def _write(self, frame: bytes, chunked: bool) -> None:
        if chunked:
            self.wfile.write(b"%x\r\n" % len(frame) + frame + b"\r\n")
        else:
            self.wfile.write(frame)
        self.wfile.flush()


def _events(response: http.client.HTTPResponse) -> Iterator[bytes]:
    """The SSE events of a stream as the server wrote them (each with its closing blank line); a
    last event the stream ended in the middle of is passed as it is."""
    lines: list[bytes] = []
    while True:
        line = response.readline()
        if not line:
            if lines:
                yield b"".join(lines)
            return
        lines.append(line)
        if line in (b"\n", b"\r\n"):
            yield b"".join(lines)
            lines = []


def _event_message(event: bytes) -> Any:
    """The JSON-RPC message (or batch) an SSE event's ``data`` carries, None when it carries none."""
    data = [
        line[5:].removeprefix(b" ") for line in event.replace(b"\r\n", b"\n").split(b"\n") if line.startswith(b"data:")
    ]
    try:
        message = json.loads(b"\n".join(data)) if data else None
    except ValueError:
        return None
    return message if isinstance(message, (dict, list)) else None


def _with_data(event: bytes, message: Any) -> bytes:
    """The event with its ``data`` replaced by ``message`` (one line), its other fields kept."""
    kept = [line for line in event.replace(b"\r\n", b"\n").split(b"\n") if line and not line.startswith(b"data")]
    encoded = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"\n".join([*kept, b"data: " + encoded]) + b"\n\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="live-http", description=__doc__)
    parser.add_argument("--live", required=True, help="the user's server: JSON with url")
    parser.add_argument("--journal", default=None)
    parser.add_argument("--transport", default="http-json", choices=("http-json", "http-sse"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--case", default="live")
    parser.add_argument("--schema", default="advertised")
    parser.add_argument("--protocol", default=None)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with open(args.live, encoding="utf-8") as handle:
        upstream = json.load(handle)["url"]
    journal = LockedJournal(Journal(args.journal))

    def on_signal(signum: int, _frame: object) -> None:
        journal.write("exit", reason="signal", detail=signal.Signals(signum).name)
        journal.close()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    proxy = Proxy(args.port, upstream, args.transport, journal)
    journal.write(
        "start", case=args.case, schema=args.schema, protocol=args.protocol, pid=os.getpid(),
        transport=args.transport, url=proxy.url, live=True, upstream=upstream,
    )  # fmt: skip
    print(json.dumps({"url": proxy.url}), flush=True)
    try:
        proxy.serve_forever(poll_interval=0.2)
    finally:
        proxy.server_close()
        journal.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
