"""Framework adapter for LlamaIndex (``llama-index-tools-mcp`` + ``llama-index-core``): what a
``FunctionAgent`` hands its LLM when an MCP tool misbehaves.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view").

Conversion (read in the installed packages): ``llama_index/tools/mcp/base.py``
``McpToolSpec._create_tool_fn`` returns the raw ``mcp.types.CallToolResult`` of
``session.call_tool``; ``llama_index/core/tools/function_tool.py`` ``FunctionTool._parse_tool_output``
is what turns it into content for the model: a ``CallToolResult`` is none of the block or node types
it knows, so it falls through to ``[TextBlock(text=str(raw_output))]``, the pydantic ``str`` of the
whole result (``meta=... content=[TextContent(...)] structured_content={...} is_error=...``). An
exception of the tool is turned into ``ToolOutput(content=str(e), is_error=True)`` by
``llama_index/core/agent/workflow/base_agent.py`` ``BaseWorkflowAgent._call_tool``;
``FunctionAgent.handle_tool_call_results`` (``function_agent.py``) then builds the tool-result
message ``ChatMessage(role="tool", blocks=tool_output.blocks,
additional_kwargs={"tool_call_id": ...})``. That message carries no error marker (``is_error`` stays
on the ``ToolOutput``), so ``error_flag`` is null.

Driving: ``BasicMCPClient`` (the package's MCP client) opens a new stdio session, and so spawns a new
server, for every operation (``list_tools``, each ``call_tool``). To keep one session for the
listing, the calls and the follow-up, the adapter enters ``BasicMCPClient._run_session()`` (the
context manager every ``BasicMCPClient`` operation uses: ``stdio_client`` + ``ClientSession`` with
``read_timeout_seconds`` = the client's ``timeout`` + ``initialize()``) once and hands the session
to ``McpToolSpec(client=session)``, which accepts any ``ClientSession``. ``timeout`` is
``call_timeout_ms``. Each call and the follow-up is one ``FunctionAgent.run`` with
``MockFunctionCallingLLM`` (shipped in ``llama_index/core/llms/mock.py``) driven by a scripted
``response_generator``: turn one asks for the tool (tool-call id ``call-1``), turn two records the
messages it is given and answers ``done``. ``result`` is the ``ToolOutput`` of the
``ToolCallResult`` event; ``model_view.value`` is ``ChatMessage.content`` of the tool message (the
text of its blocks, what a provider sends for a tool message).

Options: none (fails on any). Facts only.
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the framework imports: the harness's budget runs from process start

import asyncio  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Awaitable  # noqa: E402
from typing import Any  # noqa: E402

import observe  # noqa: E402
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec  # noqa: E402

PACKAGE = "llama-index-tools-mcp"
OPTIONS: dict[str, type] = {}
# mcp 2.x stdio_client's own shutdown: 0.5 s flush + 2 s grace after stdin closes + 2 s SIGTERM + 2 s reap.
CLOSE_RESERVE_S = 7.0
CALL_ID = "call-1"
PROMPT = "Use the tool."
FINAL_TEXT = "done"


def to_json(value: Any) -> Any:
    """``value`` as JSON: pydantic models by their JSON dump, anything else that is not JSON by its repr."""

    def default(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        if callable(dump):
            try:
                return dump(mode="json", by_alias=True)
            except Exception:
                try:
                    return dump(by_alias=True)  # python mode; what is left goes through default again
                except Exception:
                    pass
        return repr(obj)

    return json.loads(json.dumps(value, ensure_ascii=False, default=default))


class Script:
    """The scripted LLM's ``response_generator`` for one agent run."""

    def __init__(self, call: dict[str, Any]) -> None:
        self.call = call
        self.turns = 0
        self.seen: list[ChatMessage] | None = None

    def respond(self, messages: list[ChatMessage], **_: Any) -> ChatMessage:
        self.turns += 1
        if self.turns == 1:
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[ToolCallBlock(
                tool_call_id=CALL_ID, tool_name=self.call["name"], tool_kwargs=dict(self.call.get("arguments") or {}))])
        if self.seen is None:
            self.seen = copy.deepcopy(list(messages))
        return ChatMessage(role=MessageRole.ASSISTANT, content=FINAL_TEXT)


def model_view(seen: list[ChatMessage]) -> dict[str, Any]:
    tool_messages = [m for m in seen if m.role == MessageRole.TOOL]
    message = tool_messages[-1] if tool_messages else seen[-1]
    try:
        serialized = to_json(message)
    except Exception:
        serialized = None
    return {"value": message.content, "error_flag": None, "error_flag_field": None, "message": serialized}


async def attempt(what: str, awaitable: Awaitable[Any], deadline: float) -> tuple[Any, dict[str, Any] | None, bool]:
    """``(value, None, False)``, ``(None, Error, False)`` when it raised, ``(None, AdapterTimeout, True)``
    when the deadline passed (then the adapter stops making steps)."""
    watch = observe.Stopwatch()
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        return None, observe.deadline_error(what, None), True
    limit = asyncio.timeout(remaining)
    try:
        async with limit:
            return await awaitable, None, False
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # whatever the framework raised is a fact
        if limit.expired():
            return None, observe.deadline_error(what, watch.ms()), True
        return None, observe.error_record(exc), False


async def run_agent(tools: list[Any], call: dict[str, Any]) -> tuple[Script, list[Any]]:
    script = Script(call)
    agent = FunctionAgent(tools=tools, llm=MockFunctionCallingLLM(response_generator=script.respond))
    handler = agent.run(user_msg=PROMPT)
    outputs: list[Any] = []
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult) and event.tool_id == CALL_ID:
            outputs.append(event.tool_output)
    await handler
    return script, outputs


async def one_call(tools: list[Any], obs: observe.Observation, kind: str, call: dict[str, Any],
                   deadline: float) -> bool:
    """One agent run for ``call``; True when the adapter's deadline ended it."""
    name = call["name"]
    watch = obs.begin(kind, name)
    value, error, late = await attempt(f"{kind} {name}", run_agent(tools, call), deadline)
    duration = watch.ms()
    if error is not None:
        obs.end(kind, obs.call_entry(name, duration, error=error))
        return late
    script, outputs = value
    if script.seen is None:
        error = {"type": "NoSecondTurn", "code": None,
                 "message": "the agent run ended without giving the model a second turn"}
        obs.end(kind, obs.call_entry(name, duration, error=error))
        return False
    entry = obs.call_entry(name, duration, to_json(outputs[-1]) if outputs else None)
    entry["model_view"] = model_view(script.seen)
    obs.end(kind, entry)
    return False


async def drive(cell: dict[str, Any], obs: observe.Observation, budget: observe.Budget) -> None:
    server = cell["server"]
    client = BasicMCPClient(
        server["command"],
        args=[str(arg) for arg in server.get("args") or []],
        env={str(k): str(v) for k, v in (server.get("env") or {}).items()},
        timeout=cell["call_timeout_ms"] / 1000.0,
    )
    opening = client._run_session()  # what every BasicMCPClient operation enters; held open here
    watch = obs.begin("initialize")
    session, error, late = await attempt("initialize", opening.__aenter__(), budget.steps)
    if error is not None:
        if not late:
            obs.end("initialize", observe.step(watch, error, protocol_version=None))
        return
    obs.end("initialize", observe.step(watch, protocol_version=getattr(session, "protocol_version", None)))
    pending: BaseException | None = None
    try:
        watch = obs.begin("list_tools")
        tools, error, late = await attempt("list_tools", McpToolSpec(client=session).to_tool_list_async(), budget.steps)
        if not late:
            names = None if error else [tool.metadata.get_name() for tool in tools]
            obs.end("list_tools", observe.step(watch, error, tools=names))
            for call in cell["calls"]:
                late = await one_call(tools or [], obs, "call", call, budget.steps)
                if late:
                    break
        if not late:
            await one_call(tools or [], obs, "followup", cell["followup"], budget.steps)
    except BaseException as exc:  # a bug or an interrupt: record the unfinished steps, then close
        pending = exc
    obs.data.update(obs.snapshot(pending))  # the step the deadline ended, and those never started
    watch = obs.begin("close")
    _, error, _ = await attempt("close", opening.__aexit__(None, None, None), budget.close)
    obs.end("close", observe.step(watch, error))
    if pending is not None:
        raise pending


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        observe.fail("usage: adapter.py <cell.json> <observation.json>")
    cell = observe.read_cell(argv[1])
    observe.check_options(cell["options"], OPTIONS)
    if cell.get("transport", "stdio") != "stdio":
        observe.fail(f"transport {cell.get('transport')!r} is not supported by this adapter (stdio)")
    out = argv[2]
    obs = observe.Observation(cell, PACKAGE)
    budget = observe.Budget.of(cell, _STARTED, CLOSE_RESERVE_S)
    watchdog = observe.Watchdog(budget.final, lambda: obs.save(out))
    escaped: BaseException | None = None
    try:
        asyncio.run(drive(cell, obs, budget))
    except BaseException as exc:  # the framework crashed the driver: record where, exit 0 anyway
        escaped = exc
        traceback.print_exc()
    killed = observe.kill_children()
    if killed:
        print(f"adapter: killed leftover child process(es) {killed}", file=sys.stderr, flush=True)
    watchdog.cancel()
    obs.save(out, escaped)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
