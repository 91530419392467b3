"""JSON-RPC 2.0 / MCP method handling, independent of the transport, for either protocol era.

:class:`Session` turns one decoded inbound message into the responses to send. The revision it
serves (``protocol``) picks the era, as the 2026-07-28 text names them (basic/versioning):

- **legacy** (``2025-11-25``, and every handshake-era version a client asks for): ``initialize``
  (with version negotiation), ``notifications/initialized``, ``ping``, ``tools/list`` and
  ``tools/call``; any other request, ``server/discover`` included, gets ``-32601``.
- **modern** (``2026-07-28``, stateless): no handshake. Every request must carry its protocol
  version and client capabilities in ``params._meta`` (``-32602`` naming the missing key
  otherwise), and a version this server does not serve gets ``UnsupportedProtocolVersion``
  (``-32022``, ``data: {supported, requested}``). ``initialize`` gets ``-32022`` naming the
  supported versions (what a modern-only server SHOULD say to a legacy client); ``ping`` is removed
  (``-32601``). ``server/discover``, ``tools/list`` and ``tools/call`` answer with
  ``resultType: "complete"`` and the server's identity in ``_meta``
  (``io.modelcontextprotocol/serverInfo``); ``tools/list`` and ``server/discover`` are cacheable
  results (``ttlMs``, ``cacheScope``). A case may change what its ``tools/call`` result carries
  (``cases.Case.modern``), or claim to speak only another revision (``cases.Case.speaks_only``).

:func:`request_revision` is the revision a request was made under, for the journal.
"""

from __future__ import annotations

import time
from typing import Any

from cases import Case
from tool import ACCOUNT, FOLLOWUP_TOOL, TOOL_NAME, tool_definitions

LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The versions an ``initialize`` may negotiate."""
MODERN_VERSIONS = ("2026-07-28",)
LATEST_VERSION = LEGACY_VERSIONS[-1]
REVISIONS = (LATEST_VERSION, MODERN_VERSIONS[-1])
"""The revisions the server can be asked to speak (``--protocol``): the matrix's protocol axis."""
SERVER_INFO = {"name": "mcp-client-matrix-reference", "version": "0.1.0"}

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
RESULT_COMPLETE = "complete"
LIST_TTL_MS = 0
"""``ttlMs`` of the cacheable results: every cell's server serves one case, so nothing is to be kept."""

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022


def message_kind(message: Any) -> str:
    """request / notification / response / invalid: the journal's word for an inbound message."""
    if not isinstance(message, dict):
        return "invalid"
    if "method" in message:
        return "request" if "id" in message else "notification"
    if "result" in message or "error" in message:
        return "response"
    return "invalid"


def params_meta(params: Any) -> dict[str, Any]:
    """``_meta`` of a request's params, or an empty dict."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else {}


def request_meta(message: Any) -> dict[str, Any]:
    """``params._meta`` of a message, or an empty dict."""
    return params_meta(message.get("params") if isinstance(message, dict) else None)


def request_revision(message: Any, negotiated: str | None) -> str | None:
    """The revision a message was sent under: its ``_meta`` version (modern), the version an
    ``initialize`` asks for, else the version the session negotiated (legacy), else None."""
    version = request_meta(message).get(META_VERSION)
    if isinstance(version, str):
        return version
    if isinstance(message, dict) and message.get("method") == "initialize":
        asked = (message.get("params") or {}).get("protocolVersion")
        return asked if isinstance(asked, str) else None
    return negotiated


def error_response(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def unsupported_version(msg_id: Any, requested: Any, supported: tuple[str, ...] = MODERN_VERSIONS) -> dict[str, Any]:
    """``UnsupportedProtocolVersion`` (-32022) naming the versions this server serves."""
    return error_response(
        msg_id,
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested!r}: this server speaks {', '.join(supported)} only",
        {"supported": list(supported), "requested": requested},
    )


def reply(msg_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


class Session:
    """One client session of the reference server, serving one fault case in one protocol era."""

    def __init__(self, case: Case, schema_mode: str, protocol: str = LATEST_VERSION) -> None:
        if protocol not in REVISIONS:
            raise ValueError(f"protocol {protocol!r}: expected one of {', '.join(REVISIONS)}")
        self.case = case
        self.schema_mode = schema_mode
        self.modern = protocol in MODERN_VERSIONS
        self.negotiated: str | None = None
        """The version an ``initialize`` answer named (legacy era)."""

    def revision(self, message: Any) -> str | None:
        """The revision ``message`` was sent under (the journal's ``protocol`` field)."""
        return request_revision(message, self.negotiated)

    def handle(self, message: Any) -> list[dict[str, Any]]:
        """The responses to ``message`` (empty for notifications and responses)."""
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return []  # notifications (initialized, cancelled, ...) and responses need no answer
        params = message.get("params") or {}
        if self.modern:
            return [self._modern(message["id"], message["method"], params)]
        return [self._legacy(message["id"], message["method"], params)]

    # -- the legacy era: initialize, then a session ----------------------------------------------

    def _legacy(self, msg_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return reply(msg_id, self._initialize(params))
        if method == "ping":
            return reply(msg_id, {})
        if method == "tools/list":
            return reply(msg_id, self._tools())
        if method == "tools/call":
            return self._call(msg_id, params)
        return error_response(msg_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def _tools(self) -> dict[str, Any]:
        return {"tools": tool_definitions(self.schema_mode, self.case.output_schema, self.case.tool)}

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        version = requested if requested in LEGACY_VERSIONS else LATEST_VERSION
        self.negotiated = self.case.initialize_version or version
        return {
            "protocolVersion": self.negotiated,
            "capabilities": {"tools": {"listChanged": False}, "logging": {}},
            "serverInfo": SERVER_INFO,
        }

    # -- the modern era: every request stands alone -----------------------------------------------

    def envelope_error(self, msg_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Why a modern server refuses a request before looking at its method, or None."""
        supported = MODERN_VERSIONS if self.case.speaks_only is None else (self.case.speaks_only,)
        if method == "initialize":
            return unsupported_version(msg_id, params.get("protocolVersion"), supported)
        meta = params_meta(params)
        version = meta.get(META_VERSION)
        if version is None:
            return error_response(msg_id, INVALID_PARAMS, f"Invalid params: _meta[{META_VERSION!r}] is required")
        if version not in supported:
            return unsupported_version(msg_id, version, supported)
        if not isinstance(meta.get(META_CLIENT_CAPABILITIES), dict):
            return error_response(
                msg_id, INVALID_PARAMS, f"Invalid params: _meta[{META_CLIENT_CAPABILITIES!r}] is required"
            )
        return None

    def _modern(self, msg_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        refused = self.envelope_error(msg_id, method, params)
        if refused is not None:
            return refused
        if method == "server/discover":
            return reply(msg_id, self.complete(self._discover(), cacheable=True))
        if method == "tools/list":
            return reply(msg_id, self.complete(self._tools(), cacheable=True))
        if method == "tools/call":
            return self._call(msg_id, params)
        return error_response(msg_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def _discover(self) -> dict[str, Any]:
        return {"supportedVersions": list(MODERN_VERSIONS), "capabilities": {"tools": {"listChanged": False}}}

    def complete(self, result: dict[str, Any], *, cacheable: bool = False) -> dict[str, Any]:
        """A modern result: ``resultType``, the server's identity in ``_meta``, the cache fields."""
        meta = dict(result.get("_meta") or {})
        meta.setdefault(META_SERVER_INFO, SERVER_INFO)
        out = {"resultType": RESULT_COMPLETE, **result, "_meta": meta}
        if cacheable:
            out.update(ttlMs=LIST_TTL_MS, cacheScope="private")
        return out

    # -- tools/call, in either era ----------------------------------------------------------------

    def _call(self, msg_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == FOLLOWUP_TOOL:
            return reply(msg_id, self._result({"content": [{"type": "text", "text": str(arguments.get("text", ""))}]}))
        if name != (TOOL_NAME if self.case.tool is None else self.case.tool["name"]):
            return error_response(msg_id, INVALID_PARAMS, f"Unknown tool: {name}")
        if self.case.arguments is not None:
            if arguments != self.case.arguments:
                return error_response(msg_id, INVALID_PARAMS, "Invalid params: not the recorded call's arguments")
        elif arguments.get("account_id") != ACCOUNT["account_id"]:
            return error_response(msg_id, INVALID_PARAMS, f"Unknown account: {arguments.get('account_id')}")
        if self.case.delay_s:
            time.sleep(self.case.delay_s)
        if self.case.rpc_error is not None:
            return {"jsonrpc": "2.0", "id": msg_id, "error": self.case.rpc_error}
        result = self._result(self.case.result())
        return reply(msg_id, self.case.modern(result) if self.modern and self.case.modern else result)

    def _result(self, result: dict[str, Any]) -> dict[str, Any]:
        return self.complete(result) if self.modern else result

    def is_case_call(self, message: Any) -> bool:
        """Whether ``message`` is a ``tools/call`` of the case's tool (any but the follow-up)."""
        return (
            isinstance(message, dict)
            and message.get("method") == "tools/call"
            and "id" in message
            and isinstance(message.get("params"), dict)
            and message["params"].get("name") != FOLLOWUP_TOOL
        )
