"""The OpenAI Responses API (``POST /v1/responses``, or ``/responses`` under any base; streaming or
not), as Codex CLI speaks it.

Codex offers an MCP server's tools as one ``namespace`` tool (``mcp__ref``) holding plain
``function`` tools (``get_account_balance``); the model calls one with a ``function_call`` item
naming the function and carrying the namespace. The script sees such a tool under its qualified
name (``mcp__ref__get_account_balance``, :func:`qualified`) and a call is split back into
namespace and name when answered. A tool result is a ``function_call_output`` item of the next
request's ``input``, answering a ``function_call`` item replayed there by ``call_id``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from script import Action, Answer, Call, Request, as_text
from wire import Body, Dialect, Reply, json_reply, sse_reply

PATH = "/v1/responses"
SUFFIX = "/responses"
ID_PREFIX = "call_"
NAMESPACE_SEPARATOR = "__"
USAGE = {
    "input_tokens": 1,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 1,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 2,
}


def qualified(namespace: str | None, name: str) -> str:
    """The name the script sees for function ``name`` of ``namespace`` (none: the name itself)."""
    return f"{namespace}{NAMESPACE_SEPARATOR}{name}" if namespace else name


def _items(body: Body, key: str) -> list[dict[str, Any]]:
    value = body.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def offered(body: Body) -> list[tuple[str | None, str]]:
    """The function tools a request offers, as (namespace or None, function name), in order."""
    functions: list[tuple[str | None, str]] = []
    for tool in _items(body, "tools"):
        if tool.get("type") == "function" and tool.get("name"):
            functions.append((None, str(tool["name"])))
        elif tool.get("type") == "namespace" and tool.get("name"):
            functions += [
                (str(tool["name"]), str(inner["name"]))
                for inner in _items(tool, "tools")
                if inner.get("type") == "function" and inner.get("name")
            ]
    return functions


def _call_name(item: dict[str, Any]) -> str:
    namespace = item.get("namespace")
    return qualified(str(namespace) if namespace else None, str(item.get("name")))


CALL_TYPES = ("function_call", "custom_tool_call")
"""The ``input`` items that are the model's own tool calls, replayed by the host."""


def parse(body: Body) -> Request:
    tools = tuple(qualified(namespace, name) for namespace, name in offered(body))
    called = tuple(_call_name(item) for item in _items(body, "input") if item.get("type") in CALL_TYPES)
    return Request(tools, called, as_text(body))


def _split(name: str, body: Body) -> tuple[str | None, str]:
    """The (namespace, function name) an action's qualified name stands for in this request."""
    return next(((ns, fn) for ns, fn in offered(body) if qualified(ns, fn) == name), (None, name))


def output_item(action: Action, body: Body, number: int) -> dict[str, Any]:
    """The one output item of the response: a ``function_call`` or an assistant ``message``."""
    if isinstance(action, Call):
        namespace, name = _split(action.name, body)
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{number}",
            "status": "completed",
            "call_id": action.call_id,
            "name": name,
            "arguments": json.dumps(dict(action.arguments)),
        }
        if namespace:
            item["namespace"] = namespace
        return item
    assert isinstance(action, Answer)
    return {
        "type": "message",
        "id": f"msg_{number}",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": action.text, "annotations": []}],
    }


def response(action: Action, body: Body, number: int, status: str = "completed") -> dict[str, Any]:
    """The whole response object (of a non-streaming request, or ``response.completed``)."""
    done = status == "completed"
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": str(body.get("model") or "scripted"),
        "output": [output_item(action, body, number)] if done else [],
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", False)),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": [],
        "usage": USAGE if done else None,
        "error": None,
        "incomplete_details": None,
    }


def events(action: Action, body: Body, number: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events of a streaming response: (event name, data)."""
    sequence = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(sequence), **fields}

    yield event("response.created", response=response(action, body, number, "in_progress"))
    yield event("response.in_progress", response=response(action, body, number, "in_progress"))
    item = output_item(action, body, number)
    at = {"output_index": 0, "item_id": item["id"]}
    started = {**item, "status": "in_progress"}
    if item["type"] == "function_call":
        yield event("response.output_item.added", output_index=0, item={**started, "arguments": ""})
        yield event("response.function_call_arguments.delta", **at, delta=item["arguments"])
        yield event("response.function_call_arguments.done", **at, arguments=item["arguments"])
    else:
        text = item["content"][0]["text"]
        yield event("response.output_item.added", output_index=0, item={**started, "content": []})
        part = {"type": "output_text", "text": "", "annotations": []}
        yield event("response.content_part.added", **at, content_index=0, part=part)
        yield event("response.output_text.delta", **at, content_index=0, delta=text)
        yield event("response.output_text.done", **at, content_index=0, text=text)
        yield event("response.content_part.done", **at, content_index=0, part={**part, "text": text})
    yield event("response.output_item.done", output_index=0, item=item)
    yield event("response.completed", response=response(action, body, number))


def tool_results(body: Body) -> list[dict[str, Any]]:
    """Every ``function_call_output`` the request carries, with the name of the tool it answers."""
    items = _items(body, "input")
    names = {item.get("call_id"): _call_name(item) for item in items if item.get("type") in CALL_TYPES}
    return [
        {
            "call_id": item.get("call_id"),
            "tool": names.get(item.get("call_id")),
            "content": item.get("output"),
            "is_error": item.get("is_error"),
            "block": item,
        }
        for item in items
        if item.get("type") == "function_call_output"
    ]


def reply(action: Action, body: Body, number: int, path: str) -> Reply:
    if body.get("stream"):
        return sse_reply(events(action, body, number))
    return json_reply(response(action, body, number))


DIALECT = Dialect(
    "openai-responses",
    lambda path: path == PATH or path.endswith(SUFFIX),
    parse,
    reply,
    ID_PREFIX,
    tool_results,
)
