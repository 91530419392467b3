"""Which HTTP requests the Streamable HTTP transport refuses, and how: pure functions, no I/O.

Every check takes what the request carries (its path, headers, parsed message, the session its
``Mcp-Session-Id`` names) and returns a :class:`Refusal` (the status, the JSON-RPC error of the
body, the reason the journal records) or None when the request passes. The handler journals a
refusal and writes it (:meth:`http_writers.Responder.refuse`); nothing here touches the socket.

The checks and their order, as the handler applies them (the order after the endpoint follows the
TypeScript SDK's server transport):

1. :func:`endpoint_refusal`: a path other than ``/mcp`` gets 404 with a plain-text body; an
   ``Origin`` that is present and not ``http(s)://localhost|127.0.0.1|[::1]`` (any port), or a
   ``Host`` naming any other host, gets 403 (DNS-rebinding protection).
2. :func:`message_refusal` (POST): ``Accept`` must admit both ``application/json`` and
   ``text/event-stream`` (media ranges such as ``*/*`` count, ``q=0`` excludes), else 406;
   ``Content-Type`` must be ``application/json``, else 415; a body that is not JSON gets 400
   (-32700); a JSON array (a batch, not allowed since 2025-06-18) or a non-object gets 400 (-32600).
3. :func:`session_refusal`: a ``Mcp-Session-Id`` naming no live session gets 404 (on ``initialize``
   too); any request but ``initialize`` without the header gets 400 (the server requires the id:
   the spec's SHOULD); an ``MCP-Protocol-Version`` that is neither a version this server supports
   nor the one negotiated for the session gets 400 (absent is accepted: the spec's 2025-03-26
   fallback).

GET gets :data:`NO_GET_STREAM` (405: no server-initiated stream), other methods
:data:`METHOD_NOT_ALLOWED` (405).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import urlsplit

from http_request import Posted
from http_sessions import HttpSession
from protocol import SUPPORTED_VERSIONS

PATH = "/mcp"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
TRANSPORT_ERROR = -32000
SESSION_NOT_FOUND = -32001


@dataclass(frozen=True)
class Refusal:
    """An HTTP error answer: ``status``, a JSON-RPC error body (``code``, ``text``, ``id: null``)
    and extra ``headers``; ``plain`` is the unknown path's ``Not Found`` text body instead."""

    status: int
    text: str
    reason: str
    code: int = TRANSPORT_ERROR
    headers: Mapping[str, str] = field(default_factory=dict)
    plain: bool = False


UNKNOWN_PATH = Refusal(404, "Not Found", "unknown path", plain=True)
NOT_ACCEPTABLE = Refusal(
    406,
    "Not Acceptable: Client must accept both application/json and text/event-stream",
    "Accept lacks application/json or text/event-stream",
)
UNSUPPORTED_MEDIA_TYPE = Refusal(
    415, "Unsupported Media Type: Content-Type must be application/json", "Content-Type is not application/json"
)
UNKNOWN_SESSION = Refusal(404, "Session not found", "unknown session", SESSION_NOT_FOUND)
NO_SESSION_ID = Refusal(400, "Bad Request: Mcp-Session-Id header is required", "no session id")
NO_GET_STREAM = Refusal(
    405, "Method Not Allowed: this server offers no GET stream", "no GET stream", headers={"Allow": "POST, DELETE"}
)
METHOD_NOT_ALLOWED = Refusal(405, "Method Not Allowed", "method not allowed", headers={"Allow": "POST, DELETE"})


def endpoint_refusal(path: str, headers: Message) -> Refusal | None:
    """404 for a path other than ``/mcp``, 403 for a non-local ``Origin`` or ``Host``, else None."""
    if path != PATH:
        return UNKNOWN_PATH
    foreign = _not_local(headers)
    if foreign:
        return Refusal(403, f"Forbidden: {foreign}", foreign)
    return None


def _not_local(headers: Message) -> str | None:
    """Why the request is refused as a possible DNS-rebinding attack, or None."""
    origin = headers.get("Origin")
    if origin is not None:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or (parts.hostname or "") not in LOCAL_HOSTS:
            return f"Origin {origin!r} is not a local origin"
    host = headers.get("Host")
    if host is not None:
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name.lower() not in LOCAL_HOSTS:
            return f"Host {host!r} is not a local host"
    return None


def message_refusal(headers: Message, posted: Posted) -> Refusal | None:
    """406 (``Accept``), 415 (``Content-Type``), 400 (not JSON, not one JSON-RPC message), else None."""
    if not accepts_both(headers.get("Accept")):
        return NOT_ACCEPTABLE
    media_type = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        return UNSUPPORTED_MEDIA_TYPE
    if posted.parse_error:
        return Refusal(400, f"Parse error: {posted.parse_error}", "body is not JSON", PARSE_ERROR)
    if posted.kind == "invalid":
        what = "a JSON-RPC batch (not allowed)" if isinstance(posted.message, list) else "not a JSON-RPC message"
        return Refusal(400, f"Invalid Request: {what}", what, INVALID_REQUEST)
    return None


def accepts_both(accept: str | None) -> bool:
    """Whether an ``Accept`` header admits ``application/json`` and ``text/event-stream``."""
    if not accept:
        return False
    json_ok = sse_ok = False
    for item in accept.split(","):
        parts = [part.strip() for part in item.split(";")]
        media = parts[0].lower()
        quality = 1.0
        for param in parts[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality <= 0:
            continue
        json_ok = json_ok or media in ("application/json", "application/*", "*/*")
        sse_ok = sse_ok or media in ("text/event-stream", "text/*", "*/*")
    return json_ok and sse_ok


def session_refusal(headers: Message, named: HttpSession | None, *, opening: bool) -> Refusal | None:
    """The session rules for a request whose ``Mcp-Session-Id`` names ``named`` (None: no live one).

    ``opening`` is an ``initialize`` request, which needs no session id and opens a new session.
    """
    if headers.get("Mcp-Session-Id") is not None and named is None:
        return UNKNOWN_SESSION
    if opening:
        return None
    if named is None:
        return NO_SESSION_ID
    return version_refusal(headers.get("MCP-Protocol-Version"), named.version)


def version_refusal(version: str | None, negotiated: str | None) -> Refusal | None:
    """400 for an ``MCP-Protocol-Version`` that is neither supported nor the session's, else None."""
    if version is None:
        return None  # the spec's fallback: assume 2025-03-26
    if version in SUPPORTED_VERSIONS or version == negotiated:
        return None
    reason = f"unsupported MCP-Protocol-Version {version!r}"
    return Refusal(400, f"Bad Request: {reason}", reason)
