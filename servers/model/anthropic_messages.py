"""The Anthropic Messages API (``POST /v1/messages``, streaming or not), as Claude Code speaks it.

A tool the host marks ``defer_loading`` is offered only once a ``tool_result`` of the conversation
references it (``tool_reference``: what Claude Code's ``ToolSearch`` returns); until then the
script loads it first (``script.LOADERS``). ``/v1/messages/count_tokens`` answers a fixed count.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from script import Action, Answer, Call, Request, as_text
from wire import Body, Dialect, Reply, json_reply, sse_reply

PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
ID_PREFIX = "toolu_"
USAGE = {"input_tokens": 1, "output_tokens": 1}


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _loaded(messages: list[dict[str, Any]]) -> set[str]:
    """The deferred tools a tool_result of the conversation referenced (loaded by the host)."""
    names = set()
    for message in messages:
        for block in _blocks(message):
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                names |= {str(r.get("tool_name")) for r in block["content"] if r.get("type") == "tool_reference"}
    return names


def parse(body: dict[str, Any]) -> Request:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    loaded = _loaded(messages)
    tools = tuple(
        str(t.get("name"))
        for t in body.get("tools") or []
        if isinstance(t, dict) and (not t.get("defer_loading") or t.get("name") in loaded)
    )
    called = tuple(
        str(block.get("name"))
        for message in messages
        if message.get("role") == "assistant"
        for block in _blocks(message)
        if block.get("type") == "tool_use"
    )
    return Request(tools, called, as_text(body))


def _content(action: Action) -> list[dict[str, Any]]:
    if isinstance(action, Call):
        return [{"type": "tool_use", "id": action.call_id, "name": action.name, "input": dict(action.arguments)}]
    return [{"type": "text", "text": action.text}]


def _stop_reason(action: Action) -> str:
    return "tool_use" if isinstance(action, Call) else "end_turn"


def message(action: Action, model: str, number: int) -> dict[str, Any]:
    """The whole response of a non-streaming request."""
    return {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _content(action),
        "stop_reason": _stop_reason(action),
        "stop_sequence": None,
        "usage": USAGE,
    }


def events(action: Action, model: str, number: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events of a streaming response: (event name, data)."""
    start = {**message(action, model, number), "content": [], "stop_reason": None}
    yield "message_start", {"type": "message_start", "message": start}
    if isinstance(action, Call):
        block = {"type": "tool_use", "id": action.call_id, "name": action.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(dict(action.arguments))}
    else:
        assert isinstance(action, Answer)
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": action.text}
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    stop = {"stop_reason": _stop_reason(action), "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 1}}
    yield "message_stop", {"type": "message_stop"}


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool result the request carries, with the name of the tool it answers: what the model reads."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    names = {
        block.get("id"): block.get("name")
        for message in messages
        for block in _blocks(message)
        if block.get("type") == "tool_use"
    }
    return [
        {
            "call_id": block.get("tool_use_id"),
            "tool": names.get(block.get("tool_use_id")),
            "content": block.get("content"),
            "is_error": block.get("is_error") is True,
            "block": block,
        }
        for message in messages
        for block in _blocks(message)
        if block.get("type") == "tool_result"
    ]


def reply(action: Action, body: Body, number: int, path: str) -> Reply:
    model = str(body.get("model") or "scripted")
    if body.get("stream"):
        return sse_reply(events(action, model, number))
    return json_reply(message(action, model, number))


DIALECT = Dialect(
    "anthropic-messages",
    lambda path: path == PATH,
    parse,
    reply,
    ID_PREFIX,
    tool_results,
    lambda path, body: json_reply({"input_tokens": 1}) if path == COUNT_TOKENS_PATH else None,
)
