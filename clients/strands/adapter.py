"""Framework adapter for Strands Agents (``strands-agents``, ``strands.tools.mcp.MCPClient``): what an
``Agent`` hands its model when an MCP tool misbehaves.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view"; the steps and deadlines are ``_support/framework_driver.py``'s).

Conversion (read in the installed package): ``strands/tools/mcp/mcp_client.py``
``MCPClient._handle_tool_result`` (with ``map_mcp_content_to_tool_result_content``) turns the
``CallToolResult`` into an ``MCPToolResult``: ``status`` ``"error"`` when ``isError`` else
``"success"``, ``toolUseId``, ``content`` (text blocks as ``{"text": ...}``, images, embedded
resources; other block types dropped), plus ``structuredContent``, ``metadata`` (``_meta``) and
``isError`` when present. An exception of the call (``MCPClient.call_tool_async``) becomes
``_handle_tool_execution_error``: ``status "error"``, ``content [{"text": "Tool execution failed:
..."}]``. The agent loop puts that dict unchanged into the next ``user`` message as
``{"toolResult": ...}`` and hands the conversation to ``Model.stream``. ``ToolResult.content`` is the
tool output every bundled provider formatter sends (``models/bedrock.py``, ``anthropic.py``,
``openai.py``...; none of them reads ``structuredContent``, ``metadata`` or ``isError``), so
``model_view.value`` is ``toolResult["content"]``, the whole ``toolResult`` is in
``model_view.message``, and the error marker is ``toolResult.status``.

Driving: ``MCPClient(lambda: stdio_client(StdioServerParameters(...)))`` with ``start()`` (a
background thread: spawn, ``initialize``) as the initialize step, ``list_tools_sync()`` for the tool
set, ``stop()`` to close; the blocking calls go through ``framework_driver.in_thread``.
``MCPAgentTool.timeout`` (the per-call ``read_timeout_seconds``; the client has no client-wide
request timeout) is set to ``call_timeout_ms`` on every listed tool. Each call and the follow-up is
one ``Agent(model=..., tools=..., callback_handler=None)`` invocation with a scripted subclass of
``strands.models.model.Model`` (strands ships no test model): turn one streams a ``toolUse`` (id
``call-1``), turn two records the messages it is given and ends with text. ``result`` is
``AfterToolCallEvent.result`` (the tool execution's result, from a hook).

Options: none (fails on any). Facts only; OpenTelemetry stays unconfigured (no exporter).
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the framework imports: the harness's budget runs from process start

import copy  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import AsyncIterator  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from datetime import timedelta  # noqa: E402
from typing import Any  # noqa: E402

os.environ["OTEL_SDK_DISABLED"] = "true"

import framework_driver  # noqa: E402
import observe  # noqa: E402
from mcp import StdioServerParameters, stdio_client  # noqa: E402
from strands import Agent  # noqa: E402
from strands.hooks import AfterToolCallEvent  # noqa: E402
from strands.models.model import Model  # noqa: E402
from strands.tools.mcp import MCPClient  # noqa: E402

PACKAGE = "strands-agents"
OPTIONS: dict[str, type] = {}
# mcp 2.x stdio_client's own shutdown: 0.5 s flush + 2 s grace after stdin closes + 2 s SIGTERM + 2 s reap.
CLOSE_RESERVE_S = 7.0


class ScriptedModel(Model):
    """Turn one streams a ``toolUse`` for the call; later turns end with text. Records what turn two
    is given."""

    def __init__(self, call: dict[str, Any]) -> None:
        self.call = call
        self.turns = 0
        self.seen: list[Any] | None = None

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        self.turns += 1
        yield {"messageStart": {"role": "assistant"}}
        if self.turns == 1:
            tool_use = {"name": self.call["name"], "toolUseId": framework_driver.CALL_ID}
            yield {"contentBlockStart": {"start": {"toolUse": tool_use}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(self.call.get("arguments") or {})}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        if self.seen is None:
            self.seen = copy.deepcopy(list(messages))
        yield {"contentBlockDelta": {"delta": {"text": framework_driver.FINAL_TEXT}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def model_view(seen: list[Any]) -> dict[str, Any]:
    message = seen[-1]
    try:
        serialized = framework_driver.to_json(message)
    except Exception:
        serialized = None
    blocks = [
        block["toolResult"]
        for block in message.get("content") or []
        if isinstance(block, dict) and "toolResult" in block
    ]
    mine = [result for result in blocks if result.get("toolUseId") == framework_driver.CALL_ID] or blocks
    if not mine:  # no tool result in the last message: show what it holds
        return framework_driver.model_view(framework_driver.to_json(message.get("content")), None, None, serialized)
    result = mine[-1]
    return framework_driver.model_view(
        framework_driver.to_json(result.get("content")),
        result.get("status") == "error",
        "toolResult.status",
        serialized,
    )


class Strands:
    def __init__(self, cell: dict[str, Any], obs: observe.Observation) -> None:
        params = StdioServerParameters(**observe.stdio_server(cell))
        self.client = MCPClient(lambda: stdio_client(params))
        self.timeout = timedelta(milliseconds=cell["call_timeout_ms"])
        self.tools_loaded: list[Any] = []

    async def open(self, stack: AsyncExitStack) -> str | None:
        await framework_driver.in_thread(self.client.start)
        stack.push_async_callback(framework_driver.in_thread, lambda: self.client.stop(None, None, None))
        return None

    def _list_tools(self) -> list[Any]:
        tools = list(self.client.list_tools_sync())
        for tool in tools:
            tool.timeout = self.timeout
        return tools

    async def tools(self) -> list[str]:
        self.tools_loaded = await framework_driver.in_thread(self._list_tools)
        return [tool.tool_name for tool in self.tools_loaded]

    def _run_agent(self, call: dict[str, Any]) -> tuple[ScriptedModel, list[Any]]:
        model = ScriptedModel(call)
        results: list[Any] = []

        def after_tool(event: AfterToolCallEvent) -> None:
            if event.tool_use.get("toolUseId") == framework_driver.CALL_ID:
                results.append(event.result)

        agent = Agent(model=model, tools=self.tools_loaded, callback_handler=None)
        agent.add_hook(after_tool, AfterToolCallEvent)
        agent(framework_driver.PROMPT)
        return model, results

    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        model, results = await framework_driver.in_thread(lambda: self._run_agent(call))
        if model.seen is None:
            raise framework_driver.NoSecondTurn()
        return {
            "result": framework_driver.to_json(results[-1]) if results else None,
            "model_view": model_view(model.seen),
        }


if __name__ == "__main__":
    sys.exit(framework_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, OPTIONS, Strands))
