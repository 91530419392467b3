"""The reference server a backend starts for an HTTP cell: how long it may take, and its ready line.

The server prints one line, ``{"url": "http://127.0.0.1:PORT/mcp"}``, once it listens
(``servers/reference/__main__.py``); both backends wait for it at most :data:`READY_S` seconds.
"""

from __future__ import annotations

import json

from ..process import ServiceError

READY_S = 10.0


def parse_url_line(line: str) -> str:
    """The URL from the reference server's ready line ``{"url": ...}``."""
    try:
        return str(json.loads(line)["url"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ServiceError(f'reference server printed {line[:200]!r}, not {{"url": ...}}') from exc
