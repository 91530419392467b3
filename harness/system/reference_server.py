"""The reference server a backend starts for an HTTP cell: how long it may take, and its ready line.

The server prints one line, ``{"url": "http://127.0.0.1:PORT/mcp"}``, once it listens
(``servers/reference/__main__.py``); both backends wait for it at most :data:`READY_S` seconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .process import ServiceError, start_service, stop_service

READY_S = 10.0


def parse_url_line(line: str) -> str:
    """The URL from the reference server's ready line ``{"url": ...}``."""
    try:
        return str(json.loads(line)["url"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ServiceError(f'reference server printed {line[:200]!r}, not {{"url": ...}}') from exc


@contextmanager
def fresh_server(command: list[str], stderr: Path) -> Iterator[tuple[str, int]]:
    """The reference server started by ``command`` as a process of its own while inside: yields its
    URL and pid; on leaving it is stopped (SIGTERM, so it journals its exit, then SIGKILL) and reaped."""
    service, line = start_service(command, stderr=stderr, ready_timeout_s=READY_S)
    try:
        yield parse_url_line(line), service.pid
    finally:
        stop_service(service)
