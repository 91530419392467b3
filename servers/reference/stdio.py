"""Newline-delimited JSON-RPC over stdin/stdout, with every frame journaled.

The main thread reads stdin line by line and hands each message to the case's
:class:`stdio_faults.Fault`, which answers through the :class:`wire.Wire` (possibly from a thread
of its own while reading goes on).
"""

from __future__ import annotations

import json
import sys

from journal import Journal
from protocol import Session, message_kind
from stdio_faults import fault_for
from wire import Wire


def serve(session: Session, journal: Journal, probe: tuple[str, int] | None = None) -> str:
    """Serve until stdin closes (or a fault ends the process); returns the exit reason."""
    fault = fault_for(session.case.id, probe)
    wire = Wire(sys.stdout.buffer, sys.stderr.buffer, journal, fault.newline)
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError as exc:
            journal.write("recv", bytes=len(line), kind="invalid", error=str(exc))
            continue
        is_dict = isinstance(message, dict)
        journal.write(
            "recv",
            bytes=len(line),
            kind=message_kind(message),
            method=message.get("method") if is_dict else None,
            id=message.get("id") if is_dict else None,
            params=message.get("params") if is_dict else None,
            protocol=session.revision(message) if is_dict else None,
        )
        if is_dict and message.get("method") == "notifications/cancelled":
            fault.cancelled((message.get("params") or {}).get("requestId"))
        fault.answer(wire, session, message)
    fault.finish()
    return "stdin-eof"
