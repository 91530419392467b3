"""JSON-RPC 2.0 / MCP method handling, independent of the transport.

:class:`Session` turns one decoded inbound message into the responses to send. It implements
``initialize`` (with version negotiation), ``notifications/initialized``, ``ping``, ``tools/list``
and ``tools/call``; any other request gets ``-32601``.
"""

from __future__ import annotations

import time
from typing import Any

from cases import Case
from tool import ACCOUNT, FOLLOWUP_TOOL, TOOL_NAME, tool_definitions

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = SUPPORTED_VERSIONS[-1]
SERVER_INFO = {"name": "mcp-client-matrix-reference", "version": "0.1.0"}

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


def message_kind(message: Any) -> str:
    """request / notification / response / invalid: the journal's word for an inbound message."""
    if not isinstance(message, dict):
        return "invalid"
    if "method" in message:
        return "request" if "id" in message else "notification"
    if "result" in message or "error" in message:
        return "response"
    return "invalid"


def _error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def _reply(msg_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


class Session:
    """One client session of the reference server, serving one fault case."""

    def __init__(self, case: Case, schema_mode: str) -> None:
        self.case = case
        self.schema_mode = schema_mode

    def handle(self, message: Any) -> list[dict[str, Any]]:
        """The responses to ``message`` (empty for notifications and responses)."""
        if not isinstance(message, dict) or "method" not in message:
            return []
        msg_id = message.get("id")
        if "id" not in message:
            return []  # notifications (initialized, cancelled, ...) need no answer
        params = message.get("params") or {}
        method = message["method"]
        if method == "initialize":
            return [_reply(msg_id, self._initialize(params))]
        if method == "ping":
            return [_reply(msg_id, {})]
        if method == "tools/list":
            return [_reply(msg_id, {"tools": tool_definitions(self.schema_mode)})]
        if method == "tools/call":
            return [self._call(msg_id, params)]
        return [_error(msg_id, METHOD_NOT_FOUND, f"Method not found: {method}")]

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
        return {
            "protocolVersion": self.case.initialize_version or version,
            "capabilities": {"tools": {"listChanged": False}, "logging": {}},
            "serverInfo": SERVER_INFO,
        }

    def _call(self, msg_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == FOLLOWUP_TOOL:
            return _reply(msg_id, {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]})
        if name != TOOL_NAME:
            return _error(msg_id, INVALID_PARAMS, f"Unknown tool: {name}")
        if arguments.get("account_id") != ACCOUNT["account_id"]:
            return _error(msg_id, INVALID_PARAMS, f"Unknown account: {arguments.get('account_id')}")
        if self.case.delay_s:
            time.sleep(self.case.delay_s)
        if self.case.rpc_error is not None:
            return {"jsonrpc": "2.0", "id": msg_id, "error": self.case.rpc_error}
        return _reply(msg_id, self.case.result())

    def is_case_call(self, message: Any) -> bool:
        """Whether ``message`` is a ``tools/call`` of the faulty tool (not the follow-up)."""
        return (
            isinstance(message, dict)
            and message.get("method") == "tools/call"
            and "id" in message
            and isinstance(message.get("params"), dict)
            and message["params"].get("name") == TOOL_NAME
        )
