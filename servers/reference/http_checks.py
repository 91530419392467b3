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
3. 2025-11-25: :func:`session_refusal`: a ``Mcp-Session-Id`` naming no live session gets 404
   (on ``initialize`` too); any request but ``initialize`` without the header gets 400 (the server
   requires the id: the spec's SHOULD); an ``MCP-Protocol-Version`` that is neither a version this
   server supports nor the one negotiated for the session gets 400 (absent is accepted: the spec's
   2025-03-26 fallback).
3. 2026-07-28, instead (stateless, no sessions: a ``Mcp-Session-Id`` is neither required nor
   checked), :func:`modern_refusal`, in this order (the spec's "Server Validation" and "Protocol
   Version Header"; the headers first, as an intermediary routes on them, then the body's own
   envelope). Every refusal of a request is a JSON-RPC error response carrying the request's id:

   a. a client's JSON-RPC response gets 400 (-32600, ``id: null``): the client MUST NOT send one,
      and a 2026-07-28 server sends no request it could answer. A notification passes (202; the
      revision defines no header rules for notification POSTs).
   b. no ``MCP-Protocol-Version`` header: a server that serves no client of a revision before
      2025-06-18 (which had no such header) MUST reject the request (400). An ``initialize`` (a
      legacy client's handshake) gets the session's ``UnsupportedProtocolVersion`` (-32022, naming
      the served versions in ``data.supported`` and its message, ``data.requested``: the version
      it asked for): the only diagnostic a legacy client can show. Any other request gets
      ``HeaderMismatch`` (-32020) naming the missing header.
   c. ``Mcp-Method`` missing, or not equal to the body's ``method``: 400, -32020.
   d. for ``tools/call``, ``prompts/get`` (``params.name``) and ``resources/read``
      (``params.uri``): ``Mcp-Name`` missing while the body has the value, present while it has
      none, not decodable, or not equal to it: 400, -32020. Values are compared after removing
      surrounding spaces and tabs (RFC 9110 field parsing) and decoding the Base64 sentinel
      ``=?base64?...?=`` (strict Base64 of UTF-8; invalid Base64 is a malformed header); a plain
      value with a character outside visible ASCII, space and tab is malformed too.
   e. ``params._meta["io.modelcontextprotocol/protocolVersion"]`` present and not equal to
      ``MCP-Protocol-Version``: 400, -32020 (absent: the envelope check below names it).
   f. ``initialize`` with the headers of a 2026-07-28 request: 404 with -32601 naming the served
      versions (2026-07-28 has no ``initialize``, and a server MUST answer a method it does not
      implement with 404).
   g. the session's own envelope (:meth:`protocol.Session.envelope_error`): a missing
      ``_meta`` protocol version or client capabilities gets 400 with -32602, a version the
      session does not serve 400 with -32022 (``data.supported``, ``data.requested``).

   A request that passes is dispatched; :func:`answer_status` is the status of the session's
   answer: 404 for -32601, 400 for a code of the range the spec reserves for its own errors
   (-32020 to -32099: HeaderMismatch, MissingRequiredClientCapability, UnsupportedProtocolVersion,
   each "400 Bad Request" on HTTP), 200 for anything else (a result, or a tool's error).

GET gets :data:`NO_GET_STREAM` (405: no server-initiated stream), other methods
:data:`METHOD_NOT_ALLOWED` (405); under 2026-07-28 DELETE is one of them (no sessions to end) and
``Allow`` names POST only.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from typing import Any
from urllib.parse import urlsplit

from http_request import Posted
from http_sessions import HttpSession
from protocol import (
    HEADER_MISMATCH,
    LEGACY_VERSIONS,
    META_VERSION,
    METHOD_NOT_FOUND,
    MODERN_VERSIONS,
    error_response,
)

PATH = "/mcp"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
TRANSPORT_ERROR = -32000
SESSION_NOT_FOUND = -32001


SPEC_ERRORS = range(-32099, -32019)
"""The codes the spec reserves for its own errors (-32020 to -32099); each one it defines
(HeaderMismatch, MissingRequiredClientCapability, UnsupportedProtocolVersion) is 400 on HTTP."""
NAMED_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The methods whose ``Mcp-Name`` header mirrors a body field: ``params.<field>``."""
BASE64_SENTINEL = ("=?base64?", "?=")

Envelope = Callable[[Any, str, dict[str, Any]], dict[str, Any] | None]
""":meth:`protocol.Session.envelope_error`: a session's refusal of a request's ``_meta``, or None."""


@dataclass(frozen=True)
class Refusal:
    """An HTTP error answer: ``status``, a JSON-RPC error body (``code``, ``text``, ``id: null``)
    and extra ``headers``; ``plain`` is the unknown path's ``Not Found`` text body instead, and
    ``response`` a JSON-RPC error response that answers the request (with its id: the 2026-07-28
    refusals, journaled as a ``send`` line too)."""

    status: int
    text: str
    reason: str
    code: int = TRANSPORT_ERROR
    headers: Mapping[str, str] = field(default_factory=dict)
    plain: bool = False
    response: Mapping[str, Any] | None = None


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
MODERN_NO_GET_STREAM = Refusal(
    405, "Method Not Allowed: 2026-07-28 has no GET stream", "no GET stream", headers={"Allow": "POST"}
)
MODERN_NO_SESSIONS = Refusal(
    405, "Method Not Allowed: 2026-07-28 has no sessions to delete", "no sessions", headers={"Allow": "POST"}
)
MODERN_METHOD_NOT_ALLOWED = Refusal(405, "Method Not Allowed", "method not allowed", headers={"Allow": "POST"})
CLIENT_RESPONSE = Refusal(
    400,
    "Invalid Request: a client sends no JSON-RPC responses under 2026-07-28",
    "a JSON-RPC response (2026-07-28 servers send no requests)",
    INVALID_REQUEST,
)


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
    if version in LEGACY_VERSIONS or version == negotiated:
        return None
    reason = f"unsupported MCP-Protocol-Version {version!r}"
    return Refusal(400, f"Bad Request: {reason}", reason)


# -- 2026-07-28: stateless, every request validated on its own ----------------------------------


def modern_refusal(headers: Message, posted: Posted, envelope: Envelope) -> Refusal | None:
    """Why a 2026-07-28 message is refused, else None (step 3 under 2026-07-28 above).

    ``envelope`` is the serving session's :meth:`protocol.Session.envelope_error`.
    """
    if posted.kind == "response":
        return CLIENT_RESPONSE
    if posted.kind != "request":
        return None
    message = posted.message
    msg_id, method = message["id"], message["method"]
    params: dict[str, Any] = message["params"] if isinstance(message.get("params"), dict) else {}
    version = _field(headers, "MCP-Protocol-Version")
    if version is None and method == "initialize":
        refused = envelope(msg_id, method, params)
        if refused is not None:
            return _answered(400, refused, "initialize without MCP-Protocol-Version (a legacy handshake)")
    mismatch = header_mismatch(headers, method, params)
    if mismatch is not None:
        return _answered(400, error_response(msg_id, HEADER_MISMATCH, f"Header mismatch: {mismatch}"), mismatch)
    if method == "initialize":
        served = ", ".join(MODERN_VERSIONS)
        text = f"Method not found: initialize (2026-07-28 has no handshake; this server speaks {served})"
        return _answered(404, error_response(msg_id, METHOD_NOT_FOUND, text), "initialize under 2026-07-28")
    refused = envelope(msg_id, method, params)
    if refused is not None:
        return _answered(400, refused, f"envelope: {refused['error']['message']}")
    return None


def header_mismatch(headers: Message, method: str, params: Mapping[str, Any]) -> str | None:
    """Why a request's standard headers do not match its body (steps b to e of the 2026-07-28
    order above), or None."""
    version = _field(headers, "MCP-Protocol-Version")
    if version is None:
        return "the MCP-Protocol-Version header is required"
    sent_method = _field(headers, "Mcp-Method")
    if sent_method is None:
        return "the Mcp-Method header is required"
    if sent_method != method:
        return f"Mcp-Method header value {sent_method!r} does not match body value {method!r}"
    source = NAMED_METHODS.get(method)
    if source is not None:
        why = _name_mismatch(headers.get("Mcp-Name"), params.get(source), source)
        if why is not None:
            return why
    meta = params.get("_meta")
    declared = meta.get(META_VERSION) if isinstance(meta, Mapping) else None
    if declared is not None and declared != version:
        return f"MCP-Protocol-Version header value {version!r} does not match _meta value {declared!r}"
    return None


def _name_mismatch(header: str | None, body: Any, source: str) -> str | None:
    if header is None:
        return None if body is None else f"the Mcp-Name header is required (the body has params.{source})"
    value = header_value(header)
    if value is None:
        return f"Mcp-Name header value {header!r} is malformed (invalid characters or Base64)"
    if value != body:
        return f"Mcp-Name header value {value!r} does not match body value {body!r}"
    return None


def header_value(raw: str) -> str | None:
    """A header's value: without surrounding spaces and tabs, the Base64 sentinel decoded; None when
    it is malformed (a character outside visible ASCII, space and tab; invalid Base64 or UTF-8)."""
    value = raw.strip(" \t")
    if any(not (0x20 <= ord(char) <= 0x7E or char == "\t") for char in value):
        return None
    prefix, suffix = BASE64_SENTINEL
    if not (value.startswith(prefix) and value.endswith(suffix) and len(value) >= len(prefix) + len(suffix)):
        return value
    try:
        return base64.b64decode(value[len(prefix) : -len(suffix)], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def answer_status(response: Mapping[str, Any]) -> int:
    """The HTTP status of a 2026-07-28 session's answer: 404 for -32601, 400 for the spec's own
    error codes (-32020 to -32099), else 200."""
    error = response.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if code == METHOD_NOT_FOUND:
        return 404
    return 400 if isinstance(code, int) and code in SPEC_ERRORS else 200


def _field(headers: Message, name: str) -> str | None:
    """A header's value without surrounding spaces and tabs (header names are case-insensitive)."""
    value = headers.get(name)
    return None if value is None else value.strip(" \t")


def _answered(status: int, response: dict[str, Any], reason: str) -> Refusal:
    return Refusal(status, response["error"]["message"], reason, response["error"]["code"], response=response)
