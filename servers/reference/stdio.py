"""Newline-delimited JSON-RPC over stdin/stdout, with every frame journaled."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from typing import Any, BinaryIO

from journal import Journal
from protocol import Session


def encode(message: dict[str, Any]) -> bytes:
    """One wire frame: compact UTF-8 JSON followed by ``\\n``."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _classify(message: Any) -> str:
    if not isinstance(message, dict):
        return "invalid"
    if "method" in message:
        return "request" if "id" in message else "notification"
    if "result" in message or "error" in message:
        return "response"
    return "invalid"


def send(out: BinaryIO, journal: Journal, message: dict[str, Any]) -> None:
    """Write one frame, journaling its size, hash and how long the write blocked."""
    frame = encode(message)
    started = time.monotonic()
    error = None
    try:
        out.write(frame)
        out.flush()
    except OSError as exc:  # the client closed its end: journaled, then the server ends
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        journal.write(
            "send",
            bytes=len(frame),
            id=message.get("id"),
            sha256=hashlib.sha256(frame).hexdigest(),
            write_ms=round((time.monotonic() - started) * 1000, 3),
            error=error,
            message=message,
        )


def serve(session: Session, journal: Journal) -> str:
    """Serve until stdin closes; returns the exit reason."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for line in stdin:
        try:
            message = json.loads(line)
        except ValueError as exc:
            journal.write("recv", bytes=len(line), kind="invalid", error=str(exc))
            continue
        kind = _classify(message)
        journal.write(
            "recv",
            bytes=len(line),
            kind=kind,
            method=message.get("method") if isinstance(message, dict) else None,
            id=message.get("id") if isinstance(message, dict) else None,
            params=message.get("params") if isinstance(message, dict) else None,
        )
        for response in session.handle(message):
            send(stdout, journal, response)
    return "stdin-eof"
