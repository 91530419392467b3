"""What the scripted model does next, whatever API a host speaks to it.

A host cell's conversation is fixed: the model calls the cell's tool with the cell's arguments,
then the follow-up tool (``echo``), then ends the run with a plain answer. Each dialect module
turns a host's request into a :class:`Request` (the tool names the host offers, the calls already
made, the request as text) and :func:`next_action` into the host's response format.

A host may expose an MCP tool under its own name (``mcp__ref__get_account_balance``,
``ref__get_account_balance``, ``get_account_balance``): a step's tool is the offered name equal to
it or ending in it after a separator (:func:`exposed_name`). A host may also defer MCP tools
behind a loader tool the model must call first (Claude Code's ``ToolSearch``, Qwen Code's
``tool_search``): when the step's tool is not offered but a loader is, the model calls the loader
for the name the request mentions (:data:`LOADERS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

SEPARATORS = ("__", "_", ".", "-", "/", ":")
"""What a host may put between its prefix (the server's name) and the tool's own name."""


@dataclass(frozen=True)
class Step:
    """One tool call the model makes."""

    tool: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Script:
    """The whole conversation: the steps in order, then the answer that ends the run."""

    steps: tuple[Step, ...]
    answer: str = "Done."

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Script:
        steps = tuple(Step(str(s["tool"]), dict(s.get("arguments") or {})) for s in data["steps"])
        return cls(steps, str(data.get("answer") or "Done."))


@dataclass(frozen=True)
class Request:
    """A host's request, in the terms the script decides on."""

    tools: tuple[str, ...]
    """The tool names offered, as the host exposes them."""
    called: tuple[str, ...]
    """The tools the model already called in this conversation, in order (exposed names)."""
    text: str
    """The whole request as text (where a deferred tool's name is mentioned)."""


@dataclass(frozen=True)
class Call:
    name: str
    arguments: Mapping[str, Any]
    call_id: str
    step: int | None = None
    """The script's step this call makes (its index); None for a loader's call."""


@dataclass(frozen=True)
class Answer:
    text: str
    reason: str = "the script is done"


Action = Call | Answer

LOADERS: dict[str, Callable[[list[str]], dict[str, Any]]] = {
    "ToolSearch": lambda names: {"query": "select:" + ",".join(names), "max_results": len(names)},
    "tool_search": lambda names: {"query": "select:" + ",".join(names), "max_results": len(names)},
}
"""Deferred-tool loaders a host may offer instead of the tools themselves, and their arguments for
the names to load (the model loads every deferred tool of the script in one call)."""


def _is(name: str, tool: str) -> bool:
    return name == tool or any(name.endswith(sep + tool) for sep in SEPARATORS)


def exposed_name(tool: str, offered: tuple[str, ...]) -> str | None:
    """The offered name for ``tool``: itself, or a name ending in a separator and ``tool``."""
    if tool in offered:
        return tool
    found = [name for name in offered if _is(name, tool)]
    return min(found, key=len) if found else None


def mentioned_name(tool: str, text: str) -> str | None:
    """The longest name ending in ``tool`` that the request mentions (a deferred tool's listing)."""
    names = set(re.findall(r"[A-Za-z0-9_.:/-]*" + re.escape(tool) + r"\b", text))
    return max(names, key=len) if names else None


def next_action(script: Script, request: Request, id_prefix: str) -> Action:
    """The model's next move: the first step not made yet (through its loader when deferred), else the answer."""
    call_id = f"{id_prefix}{len(request.called) + 1}"
    for number, step in enumerate(script.steps):
        earlier = sum(1 for s in script.steps[:number] if s.tool == step.tool)
        if sum(1 for name in request.called if _is(name, step.tool)) > earlier:
            continue  # made (a tool the script calls twice: its second step once it was called twice)
        name = exposed_name(step.tool, request.tools)
        if name is not None:
            return Call(name, step.arguments, call_id, number)
        for loader, arguments in LOADERS.items():
            if loader in request.tools and loader not in request.called:
                deferred = list(
                    dict.fromkeys(s.tool for s in script.steps if exposed_name(s.tool, request.tools) is None)
                )
                return Call(loader, arguments([mentioned_name(t, request.text) or t for t in deferred]), call_id)
        return Answer(script.answer, f"the host does not offer {step.tool!r}: {', '.join(request.tools) or 'no tools'}")
    return Answer(script.answer)


def as_text(body: Any) -> str:
    """Every string in a request (keys and values), one per line: where a name is mentioned."""
    if isinstance(body, str):
        return body
    if isinstance(body, dict):
        return "\n".join(f"{key}\n{as_text(value)}" for key, value in body.items())
    if isinstance(body, list):
        return "\n".join(as_text(value) for value in body)
    return ""
