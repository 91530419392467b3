"""The OpenAI Chat Completions API (``POST /v1/chat/completions``, streaming or not), as Qwen Code
and opencode (``@ai-sdk/openai-compatible``) speak it.

A tool call is ``tool_calls[]`` on an assistant message (its arguments a JSON string), its result a
``role: "tool"`` message naming the call's ``tool_call_id``. A streamed response is ``data:``
chunks ending in ``data: [DONE]``: the call (or the answer's text) in one delta, the finish reason
in the next, then a usage chunk (``choices: []``) when ``stream_options.include_usage`` asks for it
(both hosts do). Neither host requests anything but model turns (no ``/v1/models``): no auxiliary paths.

Qwen Code defers MCP tools: it declares only ``tool_search`` (a loader, ``script.LOADERS``), whose
result lists the schemas as ``<function>{...}</function>``, and ``tool_call``, which invokes a
deferred tool by name (``{"name", "arguments"}``) while its declaration stays hidden. A tool a
loader's result returned is offered once ``tool_call`` is; the model's call to it goes through
``tool_call``, and a ``tool_call`` call counts (and its result is named) as a call to its target.
The journal's ``action`` names the target (it is written before :func:`reply` wraps the call).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from script import LOADERS, Action, Call, Request, as_text
from wire import Body, Dialect, Reply, json_reply

PATH_SUFFIX = "/chat/completions"
ID_PREFIX = "call_"
USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
BRIDGE = "tool_call"
"""Qwen Code's invoker of a deferred tool: ``{"name": <the tool>, "arguments": {...}}``."""
SCHEMA = re.compile(r"<function>(.*?)</function>", re.S)


def matches(path: str) -> bool:
    """``/v1/chat/completions``, or ``/chat/completions`` under any other base a host is given."""
    return path.endswith(PATH_SUFFIX)


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body.get("messages") or [] if isinstance(m, dict)]


def _tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _function(entry: dict[str, Any]) -> dict[str, Any]:
    function = entry.get("function")
    return function if isinstance(function, dict) else {}


def _arguments(call: dict[str, Any]) -> Any:
    arguments = _function(call).get("arguments")
    try:
        return json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return None


def _target(call: dict[str, Any]) -> str:
    """The tool a call calls: its name, or for a ``tool_call`` bridge call the name it invokes."""
    name = str(_function(call).get("name"))
    arguments = _arguments(call)
    if name == BRIDGE and isinstance(arguments, dict) and isinstance(arguments.get("name"), str):
        return str(arguments["name"])
    return name


def _declared(body: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(_function(t).get("name")) for t in body.get("tools") or [] if isinstance(t, dict) and _function(t))


def _loaded(messages: list[dict[str, Any]]) -> list[str]:
    """The tools whose schemas a loader's result returned (``<function>{"name": ...}</function>``)."""
    loaders = {call.get("id") for m in messages for call in _tool_calls(m) if _function(call).get("name") in LOADERS}
    names: list[str] = []
    for message in messages:
        if message.get("role") != "tool" or message.get("tool_call_id") not in loaders:
            continue
        for schema in SCHEMA.findall(as_text(message.get("content"))):
            try:
                name = json.loads(schema).get("name")
            except (ValueError, AttributeError):
                continue
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


def parse(body: dict[str, Any]) -> Request:
    messages = _messages(body)
    tools = _declared(body)
    if BRIDGE in tools:
        tools += tuple(name for name in _loaded(messages) if name not in tools)
    called = tuple(_target(call) for message in messages for call in _tool_calls(message))
    return Request(tools, called, as_text(body))


def _bridged(action: Action, body: Body) -> Action:
    """A call to a tool that is offered but not declared (loaded, hidden) goes through ``tool_call``."""
    declared = _declared(body)
    if isinstance(action, Call) and action.name not in declared and BRIDGE in declared:
        return Call(BRIDGE, {"name": action.name, "arguments": dict(action.arguments)}, action.call_id)
    return action


def _tool_call(action: Call) -> dict[str, Any]:
    arguments = json.dumps(dict(action.arguments))
    return {
        "index": 0,
        "id": action.call_id,
        "type": "function",
        "function": {"name": action.name, "arguments": arguments},
    }


def _finish_reason(action: Action) -> str:
    return "tool_calls" if isinstance(action, Call) else "stop"


def completion(action: Action, model: str, number: int) -> dict[str, Any]:
    """The whole response of a non-streaming request."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(action, Call):
        call = _tool_call(action)
        del call["index"]
        message["tool_calls"] = [call]
    else:
        message["content"] = action.text
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(action)}],
        "usage": USAGE,
    }


def chunks(action: Action, model: str, number: int, usage: bool) -> Iterator[dict[str, Any]]:
    """The data of a streaming response's chunks, before ``[DONE]`` (the usage chunk if asked for)."""
    head = {"id": f"chatcmpl-{number}", "object": "chat.completion.chunk", "created": 0, "model": model}
    if isinstance(action, Call):
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [_tool_call(action)]}
    else:
        delta = {"role": "assistant", "content": action.text}
    yield {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": _finish_reason(action)}]}
    if usage:
        yield {**head, "choices": [], "usage": USAGE}


def stream(action: Action, model: str, number: int, usage: bool) -> Reply:
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks(action, model, number, usage)]
    lines.append("data: [DONE]\n\n")
    return Reply(200, "text/event-stream", "".join(lines).encode())


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``role: "tool"`` message, with the name of the tool it answers (a ``tool_call``'s target):
    what the model reads."""
    messages = _messages(body)
    names = {call.get("id"): _target(call) for message in messages for call in _tool_calls(message)}
    return [
        {
            "call_id": message.get("tool_call_id"),
            "tool": names.get(message.get("tool_call_id")),
            "content": message.get("content"),
            "is_error": None,
            "block": message,
        }
        for message in messages
        if message.get("role") == "tool"
    ]


def reply(action: Action, body: Body, number: int, path: str) -> Reply:
    action = _bridged(action, body)
    model = str(body.get("model") or "scripted")
    if body.get("stream"):
        options = body.get("stream_options")
        return stream(action, model, number, isinstance(options, dict) and bool(options.get("include_usage")))
    return json_reply(completion(action, model, number))


DIALECT = Dialect(
    "openai-chat",
    matches,
    parse,
    reply,
    ID_PREFIX,
    tool_results,
)
