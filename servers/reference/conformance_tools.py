"""The tools the official MCP conformance suite calls (``--case conformance``; HTTP only).

Used ONLY by ``nox -s conformance`` (``servers/conformance/run.py``), never by the matrix: the
suite's server scenarios (``@modelcontextprotocol/conformance``, pinned in
``servers/conformance/package.json``) expect tools of their own (``test_simple_text``,
``test_tool_with_progress``, ...). :class:`ConformanceSession` serves them and leaves everything
else (``initialize``, ``ping``, ``server/discover``, unknown methods, the 2026-07-28 envelope) to
the ordinary :class:`protocol.Session` of the no-fault case ``ok``, in the same revision, so the
suite checks the same handshake, envelope and transport the matrix uses.

Tools that stream (log and progress notifications) or ask the client something (sampling,
elicitation) need the :class:`http_writers.SseStream` the transport passes to
:meth:`ConformanceSession.handle_streaming` in ``http-sse`` mode. Without one (``http-json``) the
notifications are left out and the asking tools answer ``isError: true``.

Under 2026-07-28 (``protocol``):

- results carry ``resultType`` and the server's identity in ``_meta`` (``tools/list`` also
  ``ttlMs`` and ``cacheScope``), as :class:`protocol.Session` makes them; ``logging/setLevel`` is
  gone (-32601) and a request's own ``_meta["io.modelcontextprotocol/logLevel"]`` sets the level:
  no ``notifications/message`` without it, -32602 for a level that is not one;
- the session keeps nothing between requests: the client's capabilities are those of the
  request's ``_meta``;
- a server sends the client no requests (sampling and elicitation are MRTR input requests there,
  which this server does not implement), so the four asking tools are not listed. Listed under
  2026-07-28 only, for the suite's ``server-stateless`` scenario: ``test_missing_capability``
  (needs the client's ``sampling`` capability: ``MissingRequiredClientCapability``, -32021,
  without it; with it, a text result), ``test_streaming_elicitation`` (needs ``elicitation``;
  asks nothing on its stream and answers ``isError: true`` saying so) and ``test_logging_tool``
  (logs like ``test_tool_with_logging``).
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
from protocol import (
    INVALID_PARAMS,
    LATEST_VERSION,
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    Session,
    error_response,
    reply,
    request_meta,
)

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
    _tool("test_missing_capability", "Needs the client's sampling capability (2026-07-28: -32021 without it)."),
    _tool("test_streaming_elicitation", "Needs elicitation; sends no request on its stream (2026-07-28)."),
    _tool("test_logging_tool", "Logs three info messages when the request sets a log level (2026-07-28)."),
    _tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106)",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": False,
        },
    ),
]

ASKING = ("test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums")
"""Tools that send the client a request: 2025-11-25 only."""
MODERN_ONLY = ("test_missing_capability", "test_streaming_elicitation", "test_logging_tool")
"""The diagnostic tools of the suite's 2026-07-28 ``server-stateless`` scenario."""
REQUIRED_CAPABILITY = {"test_missing_capability": "sampling", "test_streaming_elicitation": "elicitation"}
"""2026-07-28: the client capability a tool cannot run without (-32021 when the request lacks it)."""
LEGACY_TOOLS = [tool for tool in TOOLS if tool["name"] not in MODERN_ONLY]
MODERN_TOOLS = [tool for tool in TOOLS if tool["name"] not in ASKING]

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
    """A :class:`protocol.Session` look-alike serving the conformance suite's tools in ``protocol``."""

    def __init__(self, schema_mode: str = "advertised", protocol: str = LATEST_VERSION) -> None:
        self._base = Session(CASES["ok"], schema_mode, protocol)
        self.modern = self._base.modern
        self._lock = threading.Lock()
        self.client_capabilities: dict[str, Any] = {}
        """2025-11-25: the capabilities the client's ``initialize`` declared."""
        self.log_level = "debug"
        """2025-11-25: the level ``logging/setLevel`` set (until then: send every log message)."""

    # -- the transport's entry points -------------------------------------------------------------

    def revision(self, message: Any) -> str | None:
        """The revision ``message`` was sent under (:meth:`protocol.Session.revision`)."""
        return self._base.revision(message)

    def envelope_error(self, msg_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The 2026-07-28 envelope refusal (:meth:`protocol.Session.envelope_error`)."""
        return self._base.envelope_error(msg_id, method, params)

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
        if self.modern:
            return [self._modern(message, msg_id, method, params, stream)]
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
            return [reply(msg_id, {"tools": LEGACY_TOOLS})]
        if method == "logging/setLevel":
            level = params.get("level")
            if level not in LOG_LEVELS:
                return [error_response(msg_id, INVALID_PARAMS, f"Invalid log level: {level!r}")]
            self.log_level = level
            return [reply(msg_id, {})]
        if method == "tools/call":
            call = _Call(stream, params, request_meta(message), self.log_level, self.client_capabilities)
            return [self._call(msg_id, params, call)]
        with self._lock:
            return self._base.handle(message)

    def _modern(
        self, message: dict[str, Any], msg_id: Any, method: str, params: dict[str, Any], stream: Any
    ) -> dict[str, Any]:
        """A 2026-07-28 request: the envelope and everything but the tools go to the base session."""
        refused = self._base.envelope_error(msg_id, method, params)
        if refused is not None:
            return refused
        if method == "tools/list":
            return reply(msg_id, self._base.complete({"tools": MODERN_TOOLS}, cacheable=True))
        if method != "tools/call":
            with self._lock:
                [answer] = self._base.handle(message)
            result = answer.get("result")
            if method == "server/discover" and isinstance(result, dict):
                result["capabilities"]["logging"] = {}  # the tools send log messages when asked to
            return answer
        meta = request_meta(message)
        level = meta.get(META_LOG_LEVEL)
        if level is not None and level not in LOG_LEVELS:
            return error_response(msg_id, INVALID_PARAMS, f"Invalid log level {META_LOG_LEVEL}: {level!r}")
        capabilities = meta.get(META_CLIENT_CAPABILITIES)
        call = _Call(stream, params, meta, level, capabilities if isinstance(capabilities, dict) else {})
        needed = REQUIRED_CAPABILITY.get(str(params.get("name")))
        if needed is not None and not call.supports(needed):
            return error_response(
                msg_id,
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: {needed}",
                {"requiredCapabilities": {needed: {}}},
            )
        answer = self._call(msg_id, params, call)
        if "result" in answer:
            answer["result"] = self._base.complete(answer["result"])
        return answer

    def _call(self, msg_id: Any, params: dict[str, Any], call: _Call) -> dict[str, Any]:
        name = params.get("name")
        listed = MODERN_TOOLS if self.modern else LEGACY_TOOLS
        if not isinstance(name, str) or all(entry["name"] != name for entry in listed):
            return error_response(msg_id, INVALID_PARAMS, f"Unknown tool: {name}")
        return reply(msg_id, _CALLS[name](call))


class _Call:
    """One ``tools/call`` in progress: its arguments, the stream it may send on, the log level and
    the client capabilities in force for it (None: no log messages)."""

    def __init__(
        self,
        stream: Any,
        params: dict[str, Any],
        meta: dict[str, Any],
        log_level: str | None,
        capabilities: dict[str, Any],
    ) -> None:
        raw_arguments = params.get("arguments")
        self.stream = stream
        self.arguments: dict[str, Any] = raw_arguments if isinstance(raw_arguments, dict) else {}
        self.progress_token = meta.get("progressToken")
        self.log_level = log_level
        self.capabilities = capabilities

    def notify(self, method: str, params: dict[str, Any]) -> None:
        if self.stream is not None:
            self.stream.notify(method, params)

    def log(self, level: str, data: Any) -> None:
        if self.log_level is not None and LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level):
            self.notify("notifications/message", {"level": level, "data": data})

    def supports(self, capability: str) -> bool:
        return isinstance(self.capabilities.get(capability), dict)

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request to the client; its ``result`` (raises when it failed or cannot be sent)."""
        if self.stream is None:
            raise RuntimeError(f"{method} needs an SSE stream (--transport http-sse)")
        response = self.stream.request(method, params)
        if "error" in response:
            raise RuntimeError(f"{method} failed: {json.dumps(response['error'])}")
        result = response.get("result")
        return result if isinstance(result, dict) else {}


# -- the tools ------------------------------------------------------------------------------------


def _simple_text(_call: _Call) -> dict[str, Any]:
    return {"content": [_text("This is a simple text response for testing.")]}


def _image(_call: _Call) -> dict[str, Any]:
    return {"content": [{"type": "image", "data": PNG_B64, "mimeType": "image/png"}]}


def _audio(_call: _Call) -> dict[str, Any]:
    return {"content": [{"type": "audio", "data": WAV_B64, "mimeType": "audio/wav"}]}


def _embedded(_call: _Call) -> dict[str, Any]:
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


def _mixed(_call: _Call) -> dict[str, Any]:
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


def _logging(call: _Call) -> dict[str, Any]:
    for step, text in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if step:
            time.sleep(STEP_S)
        call.log("info", text)
    return {"content": [_text("Tool with logging executed successfully")]}


def _progress(call: _Call) -> dict[str, Any]:
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


def _error(_call: _Call) -> dict[str, Any]:
    return _error_result("This tool intentionally returns an error for testing")


def _sampling(call: _Call) -> dict[str, Any]:
    prompt = call.arguments.get("prompt")
    if not isinstance(prompt, str):
        return _error_result("The argument 'prompt' (string) is required")
    if not call.supports("sampling"):
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


def _elicit(message: str, schema: dict[str, Any], prefix: str) -> Callable[[_Call], dict[str, Any]]:
    def tool(call: _Call) -> dict[str, Any]:
        text: Any = message
        if not text:
            text = call.arguments.get("message")
            if not isinstance(text, str):
                return _error_result("The argument 'message' (string) is required")
        if not call.supports("elicitation"):
            return _error_result("The client does not support elicitation")
        try:
            result = call.ask("elicitation/create", {"message": text, "requestedSchema": schema})
        except Exception as exc:
            return _error_result(f"Elicitation failed: {exc}")
        content = json.dumps(result.get("content") or {})
        return {"content": [_text(f"{prefix}: action={result.get('action')}, content={content}")]}

    return tool


def _json_schema_tool(call: _Call) -> dict[str, Any]:
    return {"content": [_text(f"JSON Schema 2020-12 tool called with: {json.dumps(call.arguments)}")]}


def _needs_sampling(_call: _Call) -> dict[str, Any]:
    return {"content": [_text("The client declared the sampling capability (this tool asks it nothing).")]}


def _streaming_elicitation(_call: _Call) -> dict[str, Any]:
    return _error_result(
        "Elicitation under 2026-07-28 is an input request of an InputRequiredResult (MRTR), which this server "
        "does not implement; it sends no elicitation/create request on a response stream."
    )


_CALLS: dict[str, Callable[[_Call], dict[str, Any]]] = {
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
    "test_missing_capability": _needs_sampling,
    "test_streaming_elicitation": _streaming_elicitation,
    "test_logging_tool": _logging,
}
assert set(_CALLS) == {tool["name"] for tool in TOOLS}, "every listed tool is callable"
