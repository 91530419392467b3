"""The shape every model API module has (:class:`Dialect`) and the HTTP replies they build."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from script import Action, Request

Body = dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """An HTTP response: status, content type, body."""

    status: int
    content_type: str
    body: bytes


def json_reply(data: Any, status: int = 200) -> Reply:
    return Reply(status, "application/json", json.dumps(data).encode())


def sse_reply(events: Iterator[tuple[str | None, Any]]) -> Reply:
    """Server-sent events (an event name, or none, and its JSON data), sent whole."""
    lines = []
    for name, data in events:
        lines.append((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n")
    return Reply(200, "text/event-stream", "".join(lines).encode())


@dataclass(frozen=True)
class Dialect:
    """One model API: which requests are its own, how to read one, how to answer an action."""

    name: str
    matches: Callable[[str], bool]
    """Whether a request path (query string removed) is a model turn of this API."""
    parse: Callable[[Body], Request]
    reply: Callable[[Action, Body, int, str], Reply]
    """The response to a turn (the action, the request's body, the turn's number in this server, its path)."""
    id_prefix: str
    tool_results: Callable[[Body], list[dict[str, Any]]]
    """The tool results a request carries (``call_id``, ``tool``, ``content`` exactly, ``is_error``:
    the dialect's error marker, or None where it has none, ``block``: the whole message), journaled
    with each turn: what the model read (clients/_support/host_driver.mjs)."""
    auxiliary: Callable[[str, Body], Reply | None] = lambda path, body: None
    """The answer to another request the host makes (token counting), so that it goes on; None: not one."""
