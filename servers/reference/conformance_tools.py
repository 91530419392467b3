"""The tools the official MCP conformance suite calls (``--case conformance``; HTTP only).

Used ONLY by ``nox -s conformance`` (``servers/conformance/run.py``), never by the matrix: the
suite's server scenarios (``@modelcontextprotocol/conformance``, pinned in
``servers/conformance/package.json``) expect tools of their own (``test_simple_text``,
``test_tool_with_progress``, ...). :class:`ConformanceSession` serves them and leaves everything
else (``initialize``, ``ping``, unknown methods) to the ordinary :class:`protocol.Session` of the
no-fault case ``ok``, so the suite checks the same initialize and transport the matrix uses.

Tools that stream (log and progress notifications) or ask the client something (sampling,
elicitation) need the :class:`http_writers.SseStream` the transport passes to
:meth:`ConformanceSession.handle_streaming` in ``http-sse`` mode. Without one (``http-json``) the
notifications are left out and the asking tools answer ``isError: true``.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

from cases import CASES
from protocol import Session

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
STEP_S = 0.05


def _png_1x1_red() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one red pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence(samples: int = 80) -> bytes:
    """10 ms of 16-bit mono silence at 8 kHz."""
    data = b"\x00\x00" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + len(data))
        + b"WAVE"
        + b"fmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


PNG_B64 = base64.b64encode(_png_1x1_red()).decode("ascii")
WAV_B64 = base64.b64encode(_wav_silence()).decode("ascii")

_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool(name: str, description: str, input_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": input_schema or _NO_ARGS}


def _string_arg(name: str, description: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string", "description": description}}, "required": [name]}


TOOLS: list[dict[str, Any]] = [
    _tool("test_simple_text", "Returns a simple text block."),
    _tool("test_image_content", "Returns a 1x1 red PNG image."),
    _tool("test_audio_content", "Returns 10 ms of silence as audio/wav."),
    _tool("test_embedded_resource", "Returns an embedded text resource."),
    _tool("test_multiple_content_types", "Returns text, an image and an embedded resource."),
    _tool("test_tool_with_logging", "Sends three info log notifications while it runs."),
    _tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 when given a progressToken."),
    _tool("test_error_handling", "Always fails with isError: true."),
    _tool(
        "test_sampling",
        "Asks the client for an LLM completion (sampling/createMessage).",
        _string_arg("prompt", "The prompt to send to the LLM"),
    ),
    _tool(
        "test_elicitation",
        "Asks the user for input (elicitation/create).",
        _string_arg("message", "The message to show the user"),
    ),
    _tool("test_elicitation_sep1034_defaults", "Elicitation whose schema has defaults for every primitive type."),
    _tool("test_elicitation_sep1330_enums", "Elicitation with the five enum schema variants of SEP-1330."),
    _tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
]

ELICIT_USER = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}
ELICIT_DEFAULTS = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}
ELICIT_ENUMS = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [_text(text)], "isError": True}


class ConformanceSession:
    """A :class:`protocol.Session` look-alike serving the conformance suite's tools."""

    def __init__(self, schema_mode: str = "advertised") -> None:
        self._base = Session(CASES["ok"], schema_mode)
        self._lock = threading.Lock()
        self.client_capabilities: dict[str, Any] = {}
        self.log_level = "debug"  # until the client sets one: send every log message

    # -- the transport's entry points -------------------------------------------------------------

    def handle(self, message: Any) -> list[dict[str, Any]]:
        """The answers to ``message`` without a stream (notifications left out)."""
        return self.handle_streaming(message, None)

    def handle_streaming(self, message: Any, stream: Any) -> list[dict[str, Any]]:
        """The answers to ``message``; ``stream`` (or None) carries what is sent before them."""
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return []
        msg_id, method = message["id"], message["method"]
        raw_params = message.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        if method == "initialize":
            with self._lock:
                answers = self._base.handle(message)
            caps = params.get("capabilities")
            self.client_capabilities = caps if isinstance(caps, dict) else {}
            for answer in answers:
                result = answer.get("result")
                if isinstance(result, dict):
                    result.setdefault("capabilities", {}).update({"tools": {"listChanged": False}, "logging": {}})
            return answers
        if method == "tools/list":
            return [_reply(msg_id, {"tools": TOOLS})]
        if method == "logging/setLevel":
            level = params.get("level")
            if level not in LOG_LEVELS:
                return [_rpc_error(msg_id, -32602, f"Invalid log level: {level!r}")]
            self.log_level = level
            return [_reply(msg_id, {})]
        if method == "tools/call":
            name = params.get("name")
            tool = _CALLS.get(name) if isinstance(name, str) else None
            if tool is None:
                return [_rpc_error(msg_id, -32602, f"Unknown tool: {name}")]
            raw_arguments, raw_meta = params.get("arguments"), params.get("_meta")
            arguments: dict[str, Any] = raw_arguments if isinstance(raw_arguments, dict) else {}
            meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
            return [_reply(msg_id, tool(self, _Call(stream, arguments, meta.get("progressToken"))))]
        with self._lock:
            return self._base.handle(message)

    # -- helpers for the tools -------------------------------------------------------------------

    def log(self, call: _Call, level: str, data: Any) -> None:
        if LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level):
            call.notify("notifications/message", {"level": level, "data": data})

    def supports(self, capability: str) -> bool:
        return isinstance(self.client_capabilities.get(capability), dict)


class _Call:
    """One ``tools/call`` in progress: its arguments and the stream it may send on."""

    def __init__(self, stream: Any, arguments: dict[str, Any], progress_token: Any) -> None:
        self.stream, self.arguments, self.progress_token = stream, arguments, progress_token

    def notify(self, method: str, params: dict[str, Any]) -> None:
        if self.stream is not None:
            self.stream.notify(method, params)

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request to the client; its ``result`` (raises when it failed or cannot be sent)."""
        if self.stream is None:
            raise RuntimeError(f"{method} needs an SSE stream (--transport http-sse)")
        response = self.stream.request(method, params)
        if "error" in response:
            raise RuntimeError(f"{method} failed: {json.dumps(response['error'])}")
        result = response.get("result")
        return result if isinstance(result, dict) else {}


def _reply(msg_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def _rpc_error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


# -- the tools ------------------------------------------------------------------------------------


def _simple_text(_session: ConformanceSession, _call: _Call) -> dict[str, Any]:
    return {"content": [_text("This is a simple text response for testing.")]}


def _image(_session: ConformanceSession, _call: _Call) -> dict[str, Any]:
    return {"content": [{"type": "image", "data": PNG_B64, "mimeType": "image/png"}]}


def _audio(_session: ConformanceSession, _call: _Call) -> dict[str, Any]:
    return {"content": [{"type": "audio", "data": WAV_B64, "mimeType": "audio/wav"}]}


def _embedded(_session: ConformanceSession, _call: _Call) -> dict[str, Any]:
    return {
        "content": [
            {
                "type": "resource",
                "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content.",
                },
            }
        ]
    }


def _mixed(_session: ConformanceSession, _call: _Call) -> dict[str, Any]:
    return {
        "content": [
            _text("Multiple content types test:"),
            {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
            {
                "type": "resource",
                "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": json.dumps({"test": "data", "value": 123}),
                },
            },
        ]
    }


def _logging(session: ConformanceSession, call: _Call) -> dict[str, Any]:
    for step, text in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if step:
            time.sleep(STEP_S)
        session.log(call, "info", text)
    return {"content": [_text("Tool with logging executed successfully")]}


def _progress(_session: ConformanceSession, call: _Call) -> dict[str, Any]:
    for step, progress in enumerate((0, 50, 100)):
        if step:
            time.sleep(STEP_S)
        if call.progress_token is not None:
            call.notify(
                "notifications/progress",
                {
                    "progressToken": call.progress_token,
                    "progress": progress,
                    "total": 100,
                    "message": f"Completed step {progress} of 100",
                },
            )
    return {"content": [_text(f"Progress reported for token {call.progress_token!r}")]}


def _error(_session: ConformanceSession, _call: _Call) -> dict[str, Any]:
    return _error_result("This tool intentionally returns an error for testing")


def _sampling(session: ConformanceSession, call: _Call) -> dict[str, Any]:
    prompt = call.arguments.get("prompt")
    if not isinstance(prompt, str):
        return _error_result("The argument 'prompt' (string) is required")
    if not session.supports("sampling"):
        return _error_result("The client does not support sampling")
    try:
        result = call.ask(
            "sampling/createMessage",
            {"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100},
        )
    except Exception as exc:
        return _error_result(f"Sampling failed: {exc}")
    content = result.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return {"content": [_text(f"LLM response: {text if text is not None else 'No response'}")]}


def _elicit(message: str, schema: dict[str, Any], prefix: str) -> Callable[[ConformanceSession, _Call], dict[str, Any]]:
    def tool(session: ConformanceSession, call: _Call) -> dict[str, Any]:
        text: Any = message
        if not text:
            text = call.arguments.get("message")
            if not isinstance(text, str):
                return _error_result("The argument 'message' (string) is required")
        if not session.supports("elicitation"):
            return _error_result("The client does not support elicitation")
        try:
            result = call.ask("elicitation/create", {"message": text, "requestedSchema": schema})
        except Exception as exc:
            return _error_result(f"Elicitation failed: {exc}")
        content = json.dumps(result.get("content") or {})
        return {"content": [_text(f"{prefix}: action={result.get('action')}, content={content}")]}

    return tool


def _json_schema_tool(_session: ConformanceSession, call: _Call) -> dict[str, Any]:
    return {"content": [_text(f"JSON Schema 2020-12 tool called with: {json.dumps(call.arguments)}")]}


_CALLS: dict[str, Callable[[ConformanceSession, _Call], dict[str, Any]]] = {
    "test_simple_text": _simple_text,
    "test_image_content": _image,
    "test_audio_content": _audio,
    "test_embedded_resource": _embedded,
    "test_multiple_content_types": _mixed,
    "test_tool_with_logging": _logging,
    "test_tool_with_progress": _progress,
    "test_error_handling": _error,
    "test_sampling": _sampling,
    "test_elicitation": _elicit("", ELICIT_USER, "User response"),
    "test_elicitation_sep1034_defaults": _elicit(
        "Please review and update the form fields with defaults", ELICIT_DEFAULTS, "Elicitation completed"
    ),
    "test_elicitation_sep1330_enums": _elicit(
        "Please select options from the enum fields", ELICIT_ENUMS, "Elicitation completed"
    ),
    "json_schema_2020_12_tool": _json_schema_tool,
}
assert set(_CALLS) == {tool["name"] for tool in TOOLS}, "every listed tool is callable"
