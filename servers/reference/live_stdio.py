"""Live mode over stdio: a recording pipe between a client and the user's own server.

``python servers/reference/live_stdio.py --live LIVE.json --journal J --case ID --schema S
--protocol P`` starts the user's server (``LIVE.json``: ``{"command": [...], "cwd": ..., "env":
{...}}``, written by the harness into the cell directory) and copies bytes both ways, unchanged:
the client's stdin to the server's stdin, the server's stdout to the client. Every newline-framed
message is journaled as the reference server journals its own (``journal.py``: ``recv`` for what
the client sent, ``send`` for what the server answered, with the revision each request was made
under), so the harness classifies a live cell exactly as a replayed one. The server's stderr is
passed through. When the client closes stdin the server's stdin is closed and the proxy waits for
it to exit; SIGTERM is passed on. The proxy and the server are in the client's process group,
which the harness kills as a whole at the cell's budget. The follow-up tool ``echo`` is the
pipe's own (``live_splice.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
from typing import IO, Any

from journal import Journal
from live_splice import Splice, send_fields
from protocol import message_kind

EXIT_WAIT_S = 5.0


class Pipe:
    """One proxied session: the journal, the client's stdout, and the follow-up tool's splice."""

    def __init__(self, journal: Journal, out: IO[bytes]) -> None:
        self.journal = journal
        self.out = out
        self.lock = threading.Lock()
        """Serializes the journal and the writes to the client (two threads use both)."""
        self.splice = Splice()

    def from_client(self, line: bytes) -> bytes | None:
        """Journal a client frame; what to pass to the server (None: the pipe answered it)."""
        try:
            message = json.loads(line)
        except ValueError as exc:
            with self.lock:
                self.journal.write("recv", bytes=len(line), kind="invalid", error=str(exc))
            return line
        is_dict = isinstance(message, dict)
        answer = self.splice.from_client(message)
        with self.lock:
            self.journal.write(
                "recv",
                bytes=len(line),
                kind=message_kind(message),
                method=message.get("method") if is_dict else None,
                id=message.get("id") if is_dict else None,
                params=message.get("params") if is_dict else None,
                protocol=self.splice.revision(message) if is_dict else None,
            )
        if answer is None:
            return line
        frame = json.dumps(answer, separators=(",", ":")).encode("utf-8") + b"\n"
        self.to_client(frame, answer, "answered by the pipe")
        return None

    def from_server(self, line: bytes) -> None:
        """Journal a server frame and pass it to the client (a tools/list answer with ``echo`` added)."""
        try:
            message = json.loads(line)
        except ValueError:
            with self.lock:
                self.journal.write(
                    "send-raw", stream="stdout", bytes=len(line), note="not JSON", write_ms=0.0,
                    excerpt=line[:120].decode("utf-8", "replace"),
                )  # fmt: skip
                self._write(line)
            return
        note = self.splice.from_server(message)
        if note is not None:
            line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        self.to_client(line, message, note)

    def to_client(self, frame: bytes, message: Any, note: str | None) -> None:
        with self.lock:
            self.journal.write("send", **send_fields(frame, message, note))
            self._write(frame)

    def _write(self, frame: bytes) -> None:
        try:
            self.out.write(frame)
            self.out.flush()
        except (BrokenPipeError, ValueError):  # the client is gone
            pass


def _to_server(source: IO[bytes], server: IO[bytes], pipe: Pipe) -> None:
    """The client's frames to the server as they come, each journaled before it is passed on."""
    try:
        for line in iter(source.readline, b""):
            passed = pipe.from_client(line)
            if passed is None:
                continue
            try:
                server.write(passed)
                server.flush()
            except (BrokenPipeError, ValueError):
                return
    finally:
        try:
            server.close()
        except OSError:
            pass


def _to_client(server: IO[bytes], pipe: Pipe) -> None:
    for line in iter(server.readline, b""):
        pipe.from_server(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="live-stdio", description=__doc__)
    parser.add_argument("--live", required=True, help="the user's server: JSON with command, cwd, env")
    parser.add_argument("--journal", default=None)
    parser.add_argument("--case", default="live")
    parser.add_argument("--schema", default="advertised")
    parser.add_argument("--protocol", default=None)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with open(args.live, encoding="utf-8") as handle:
        live = json.load(handle)
    journal = Journal(args.journal)
    pipe = Pipe(journal, sys.stdout.buffer)
    try:
        server = subprocess.Popen(
            live["command"],
            cwd=live.get("cwd") or None,
            env={**os.environ, **(live.get("env") or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
    except OSError as exc:
        journal.write("exit", reason="error", detail=f"cannot start the server: {exc}")
        journal.close()
        print(f"live-stdio: cannot start {live['command'][0]!r}: {exc}", file=sys.stderr)
        return 127
    journal.write(
        "start", case=args.case, schema=args.schema, protocol=args.protocol, pid=server.pid,
        transport="stdio", live=True, command=live["command"],
    )  # fmt: skip
    signal.signal(signal.SIGTERM, lambda signum, _frame: server.send_signal(signum))
    assert server.stdin is not None and server.stdout is not None
    answers = threading.Thread(target=_to_client, args=(server.stdout, pipe), daemon=True)
    answers.start()
    _to_server(sys.stdin.buffer, server.stdin, pipe)
    try:
        code = server.wait(timeout=EXIT_WAIT_S)
        reason = "stdin-eof"
    except subprocess.TimeoutExpired:
        server.kill()
        code = server.wait()
        reason = "killed"
    answers.join(timeout=EXIT_WAIT_S)
    with pipe.lock:
        journal.write("exit", reason=reason, detail=f"the server exited with code {code}")
        journal.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
