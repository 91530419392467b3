"""Wire-level faults of the transport family, on stdio.

A :class:`Fault` decides how the server's answers go out. :class:`Plain` sends every answer as
one frame; each other class changes the answer to the case's ``tools/call`` (or to
``initialize``) in one way, and journals what it did. ``fault_for(case_id)`` picks the fault;
cases without one are plain.
"""

from __future__ import annotations

import base64
import os
import threading
import time
from typing import Any

from cases import MIB, ascii_text, cjk_text
from protocol import META_LOG_LEVEL, Session, request_meta
from wire import Wire, encode

NOISE = b"[ledger] DEBUG fetching balance for ACC-4471 from primary\n"
BANNER = b"Reference ledger server 0.1.0 - listening on stdio (press Ctrl-C to quit)\n"
STDERR_FLOOD_BYTES = 8 * MIB
SLOW_WRITER_BYTES = 32 * MIB
SLOW_CHUNK = 64 * 1024
SLOW_PAUSE_S = 0.002
CANCEL_WINDOW_S = 8.0
CANCEL_TICK_S = 0.2
NOTIFICATIONS = 3


class Fault:
    """How answers are written. The default sends each answer as one frame."""

    newline = b"\n"

    def answer(self, wire: Wire, session: Session, message: Any) -> None:
        if session.is_case_call(message):
            self.answer_case(wire, session, message)
        elif isinstance(message, dict) and message.get("method") == "initialize":
            self.answer_initialize(wire, session, message)
        else:
            for response in session.handle(message):
                wire.send(response)

    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        for response in session.handle(message):
            wire.send(response)

    def answer_initialize(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        for response in session.handle(message):
            wire.send(response)

    def cancelled(self, request_id: Any) -> None:
        """A ``notifications/cancelled`` for ``request_id`` arrived."""

    def finish(self) -> None:
        """stdin closed."""


class Plain(Fault):
    pass


class StdoutNoise(Fault):
    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        wire.raw(NOISE, "non-JSON log line before the response")
        super().answer_case(wire, session, message)


class StdoutBanner(Fault):
    def answer_initialize(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        wire.raw(BANNER, "banner before the initialize answer")
        super().answer_initialize(wire, session, message)


class StderrFlood(Fault):
    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        line = b"[ledger] WARN slow replica, retrying read of ACC-4471 " + b"." * 64 + b"\n"
        chunk = line * (SLOW_CHUNK // len(line))
        written = 0
        while written < STDERR_FLOOD_BYTES:
            piece = chunk[: STDERR_FLOOD_BYTES - written]
            wire.raw(piece, "stderr flood", stream="stderr")
            written += len(piece)
        super().answer_case(wire, session, message)


class MalformedFrame(Fault):
    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        [response] = session.handle(message)
        frame = encode(response)
        broken = frame[: len(frame) // 2].rstrip(b"\n") + b"\n"  # cut JSON, still one line
        wire.send(response, frame=broken)


class PartialFrameEof(Fault):
    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        [response] = session.handle(message)
        frame = encode(response)
        wire.raw(frame[: len(frame) // 2], "first half of the response frame, then exit")
        wire.journal.write("exit", reason="fault", detail="partial-frame-eof: exited after half a frame")
        os._exit(0)


class ExitMidCall(Fault):
    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        wire.journal.write("exit", reason="fault", detail="exit-mid-call: exited without answering")
        os._exit(3)


class NoResponse(Fault):
    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        wire.journal.write("withheld", id=message.get("id"), detail="no-response: this call is never answered")


class WrongId(Fault):
    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        [response] = session.handle(message)
        msg_id = response["id"]
        response["id"] = msg_id + 1000 if isinstance(msg_id, int) else f"{msg_id}-wrong"
        wire.send(response)


class DuplicateResponse(Fault):
    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        [response] = session.handle(message)
        wire.send(response)
        wire.send(response)


def _notifications(session: Session, message: dict[str, Any], index: int, total: int) -> list[dict[str, Any]]:
    """A log notification, and a progress notification when the request asked for progress.

    Under 2026-07-28 the log notification only goes out when the request set a log level in its
    ``_meta`` (``io.modelcontextprotocol/logLevel``): a server MUST NOT send it otherwise."""
    out: list[dict[str, Any]] = []
    meta = request_meta(message)
    if not session.modern or META_LOG_LEVEL in meta:
        out.append(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {
                    "level": "info",
                    "logger": "ledger",
                    "data": f"reading ACC-4471, step {index + 1} of {total}",
                },
            }
        )
    token = meta.get("progressToken")
    if token is not None:
        out.append(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": index + 1, "total": total},
            }
        )
    return out


class InterleavedNotifications(Fault):
    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        for index in range(NOTIFICATIONS):
            for notification in _notifications(session, message, index, NOTIFICATIONS):
                wire.send(notification)
        super().answer_case(wire, session, message)


class CrlfFraming(Fault):
    newline = b"\r\n"


class SlowWriter(Fault):
    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        response = {
            "jsonrpc": "2.0",
            "id": message["id"],
            "result": {"content": [{"type": "text", "text": ascii_text(SLOW_WRITER_BYTES)}]},
        }
        frame = encode(response)
        blocked_ms, sent, error = 0.0, 0, None
        started = time.monotonic()
        with wire.lock:
            try:
                while sent < len(frame):
                    blocked_ms += wire.write_timed(wire.out, frame[sent : sent + SLOW_CHUNK])
                    sent = min(len(frame), sent + SLOW_CHUNK)
                    time.sleep(SLOW_PAUSE_S)
            except OSError as exc:  # the client closed its end mid-frame
                error = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                wire.journal.write(
                    "send",
                    bytes=len(frame),
                    id=response["id"],
                    sha256=None,
                    write_ms=round(blocked_ms, 3),
                    error=error,
                    message=response,
                    slow={
                        "chunk": SLOW_CHUNK,
                        "pause_ms": SLOW_PAUSE_S * 1000,
                        "sent_bytes": sent,
                        "elapsed_ms": round((time.monotonic() - started) * 1000, 3),
                    },
                )


class CancelThenFollowup(Fault):
    """The call works slowly (log/progress ticks); a cancel for it stops the producer."""

    def __init__(self) -> None:
        self._cancelled: set[Any] = set()
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []

    def cancelled(self, request_id: Any) -> None:
        with self._lock:
            self._cancelled.add(request_id)

    def _is_cancelled(self, request_id: Any) -> bool:
        with self._lock:
            return request_id in self._cancelled

    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        worker = threading.Thread(target=self._produce, args=(wire, session, message), daemon=True)
        self._workers.append(worker)
        worker.start()

    def _produce(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        request_id = message["id"]
        started = time.monotonic()
        ticks = int(CANCEL_WINDOW_S / CANCEL_TICK_S)
        try:
            for index in range(ticks):
                if self._is_cancelled(request_id):
                    wire.journal.write(
                        "cancel-observed",
                        id=request_id,
                        producer_stopped=True,
                        after_ms=round((time.monotonic() - started) * 1000, 1),
                        ticks_sent=index,
                    )
                    return
                for notification in _notifications(session, message, index, ticks):
                    wire.send(notification)
                time.sleep(CANCEL_TICK_S)
            wire.journal.write(
                "cancel-observed",
                id=request_id,
                producer_stopped=False,
                after_ms=round((time.monotonic() - started) * 1000, 1),
                ticks_sent=ticks,
            )
            for response in session.handle(message):
                wire.send(response)
        except OSError:
            return  # the client went away; the main loop journals the exit

    def finish(self) -> None:
        for worker in self._workers:
            worker.join(timeout=1.0)


PROBE_KINDS = ("text", "cjk", "blob")


def probe_frame(msg_id: Any, kind: str, frame_bytes: int) -> tuple[dict[str, Any], bytes]:
    """A result whose frame is exactly ``frame_bytes`` long, newline included.

    The payload (ASCII text, 3-byte CJK text, or base64 image data) fills the frame; the 0 to 3
    bytes it cannot fill are spaces inside the JSON, after its opening brace (insignificant
    whitespace, still one line). Not after the JSON: the Go SDK refuses a line with anything after
    its value ("invalid trailing data"), which would make every size that needs padding a
    rejection and no size limit at all.
    """

    def message(payload: str) -> dict[str, Any]:
        block = (
            {"type": "image", "data": payload, "mimeType": "image/png"}
            if kind == "blob"
            else {"type": "text", "text": payload}
        )
        return {"jsonrpc": "2.0", "id": msg_id, "result": {"content": [block]}}

    room = frame_bytes - len(encode(message("")))
    if room < 0:
        raise ValueError(f"a probe frame needs at least {frame_bytes - room} bytes")
    if kind == "text":
        payload = ascii_text(room)
    elif kind == "cjk":
        payload = cjk_text(room // 3)
    else:
        payload = base64.b64encode(bytes(room // 4 * 3)).decode("ascii")
    answer = message(payload)
    frame = encode(answer)
    frame = b"{" + b" " * (frame_bytes - len(frame)) + frame[1:]
    return answer, frame


class Probe(Fault):
    """Answers the case's call with a frame of an exact size (the boundary probe)."""

    def __init__(self, kind: str, frame_bytes: int) -> None:
        self.kind, self.frame_bytes = kind, frame_bytes

    def answer_case(self, wire: Wire, session: Session, message: dict[str, Any]) -> None:
        answer, frame = probe_frame(message["id"], self.kind, self.frame_bytes)
        wire.send(answer, frame=frame)


FAULTS: dict[str, type[Fault]] = {
    "stdout-noise": StdoutNoise,
    "stdout-banner": StdoutBanner,
    "stderr-flood": StderrFlood,
    "malformed-frame": MalformedFrame,
    "partial-frame-eof": PartialFrameEof,
    "exit-mid-call": ExitMidCall,
    "no-response": NoResponse,
    "wrong-id": WrongId,
    "duplicate-response": DuplicateResponse,
    "interleaved-notifications": InterleavedNotifications,
    "crlf-framing": CrlfFraming,
    "slow-writer": SlowWriter,
    "cancel-then-followup": CancelThenFollowup,
}


def fault_for(case_id: str, probe: tuple[str, int] | None = None) -> Fault:
    """The fault that writes this case's answers (plain for cases without a wire fault)."""
    if case_id == "probe":
        if probe is None:
            raise ValueError("the probe case needs --probe-kind and --probe-bytes")
        return Probe(*probe)
    return FAULTS.get(case_id, Plain)()
