"""The server's side of a stdio pipe: framing and serialized, journaled writes."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Any, BinaryIO

from journal import Journal


def encode(message: dict[str, Any], newline: bytes = b"\n") -> bytes:
    """One wire frame: compact UTF-8 JSON followed by the line terminator."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + newline


class Wire:
    """stdout (and stderr) of the server: serialized, journaled writes."""

    def __init__(self, out: BinaryIO, err: BinaryIO, journal: Journal, newline: bytes = b"\n") -> None:
        self.out, self.err, self.journal, self.newline = out, err, journal, newline
        self.lock = threading.Lock()

    def write_timed(self, stream: BinaryIO, data: bytes) -> float:
        """Write and flush (the caller holds :attr:`lock`); returns how long it blocked, in ms."""
        started = time.monotonic()
        stream.write(data)
        stream.flush()
        return round((time.monotonic() - started) * 1000, 3)

    def send(self, message: dict[str, Any], frame: bytes | None = None) -> None:
        """Send ``message`` (as ``frame`` when a fault supplies the exact bytes), journaled."""
        frame = encode(message, self.newline) if frame is None else frame
        error, write_ms = None, 0.0
        with self.lock:
            try:
                write_ms = self.write_timed(self.out, frame)
            except OSError as exc:  # the client closed its end: journaled, then the server ends
                error = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                self.journal.write(
                    "send",
                    bytes=len(frame),
                    id=message.get("id"),
                    sha256=hashlib.sha256(frame).hexdigest(),
                    write_ms=write_ms,
                    error=error,
                    message=message,
                )

    def raw(self, data: bytes, note: str, stream: str = "stdout") -> None:
        """Write bytes that are not a message (noise, a banner, half a frame), journaled."""
        with self.lock:
            write_ms = self.write_timed(self.out if stream == "stdout" else self.err, data)
            self.journal.write(
                "send-raw",
                stream=stream,
                bytes=len(data),
                note=note,
                write_ms=write_ms,
                excerpt=data[:120].decode("utf-8", "replace"),
            )
