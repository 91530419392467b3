"""Adapter for pydantic-ai (``pydantic-ai-slim[mcp]``): what the model reads from an MCP tool result.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view"; the steps and deadlines are ``_support/framework_driver.py``'s).

- Connect: ``pydantic_ai.mcp.MCPToolset`` (pydantic-ai 2.x removed the v1 ``MCPServerStdio``; the
  toolset is built on FastMCP's ``Client``) over ``fastmcp.client.transports.StdioTransport``
  (``keep_alive=False``: leaving the toolset ends the server), ``read_timeout`` =
  ``call_timeout_ms``. Entering the toolset is the initialize step; ``MCPToolset.list_tools()`` is
  the tool loading step (the agent's runs then use that cached list, as in an application).
- One agent run per call: ``Agent(FunctionModel(script), toolsets=[toolset]).run(...)`` with
  pydantic-ai's own test model ``pydantic_ai.models.function.FunctionModel``. Turn one asks for the
  call's tool (``ToolCallPart``, tool-call id ``call-1``); pydantic-ai executes it through
  ``MCPToolset.call_tool``; turn two captures the ``ToolReturnPart`` with id ``call-1`` from the
  request the model is given, then answers ``done``.
- The conversion of the MCP result for the model: ``pydantic_ai/mcp.py``
  ``_map_mcp_call_tool_result`` (helpers ``_map_mcp_tool_results`` / ``_map_mcp_tool_result``),
  called from ``MCPToolset.direct_call_tool``; an ``isError`` result goes through
  ``MCPToolset._call_tool_checked``, which maps it with ``prefer_structured=True`` and raises per
  ``tool_error_behavior`` (default ``'retry'``: ``ModelRetry``, which the agent turns into a
  ``ToolReturnPart`` with ``outcome='retried'``). Verified in pydantic-ai-slim 2.68.0.
- ``model_view.value`` is ``ToolReturnPart.content``, the Python value the framework puts in the
  tool-result message (providers send it as JSON text, see ``model_response_str``, which is kept in
  ``message``); ``error_flag`` is whether ``ToolReturnPart.outcome`` is one of pydantic-ai's
  ``ERROR_OUTCOMES`` (``failed``/``retried``: the outcomes a provider sends on its native error
  channel). ``result`` is what ``MCPToolset.call_tool`` returned, recorded by a
  ``process_tool_call`` hook (pydantic-ai's hook for wrapping tool calls) that calls the original
  function unchanged; when that raised (the ``isError`` path), the entry's ``tool_raised`` records
  it and ``result`` is null.

Options: ``tool_error_behavior`` (``retry`` | ``error`` | ``failed``), passed to ``MCPToolset``.
Telemetry: pydantic-ai instruments nothing unless asked (no logfire); nothing is switched on.
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the framework imports: the harness's budget runs from process start

import sys  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from typing import Any  # noqa: E402

import framework_driver  # noqa: E402
import observe  # noqa: E402
from fastmcp.client.transports import StdioTransport  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.mcp import MCPToolset  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ERROR_OUTCOMES,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

PACKAGE = "pydantic-ai-slim"
CLOSE_RESERVE_S = 7.0  # mcp's stdio_client shutdown under FastMCP: stdin close, 2 s grace, SIGTERM, reap
OPTIONS = {"tool_error_behavior": str}
BEHAVIOURS = ("retry", "error", "failed")


class PydanticAI:
    def __init__(self, cell: dict[str, Any], obs: observe.Observation) -> None:
        behaviour = cell["options"].get("tool_error_behavior", "retry")
        if behaviour not in BEHAVIOURS:
            observe.fail(f"option 'tool_error_behavior': expected one of {', '.join(BEHAVIOURS)}, got {behaviour!r}")

        async def on_message(message: Any) -> None:
            if isinstance(message, Exception):
                obs.transport_error(message)

        command, args, env = framework_driver.stdio_command(cell)
        self._produced: list[dict[str, Any]] = []
        self.toolset = MCPToolset(
            StdioTransport(command=command, args=args, env=env, keep_alive=False),
            tool_error_behavior=behaviour,
            read_timeout=cell["call_timeout_ms"] / 1000.0,
            message_handler=on_message,
            process_tool_call=self._record,
        )

    async def _record(self, ctx: Any, call_tool: Any, name: str, args: dict[str, Any]) -> Any:
        """pydantic-ai's ``process_tool_call`` hook: calls the toolset's function as is, records the outcome."""
        try:
            value = await call_tool(name, args)
        except BaseException as exc:
            self._produced.append({"raised": observe.error_record(exc)})
            raise
        self._produced.append({"returned": value})
        return value

    async def open(self, stack: AsyncExitStack) -> str | None:
        await stack.enter_async_context(self.toolset)
        version = self.toolset.client.protocol_version
        return None if version is None else str(version)

    async def tools(self) -> list[str]:
        return [tool.name for tool in await self.toolset.list_tools()]

    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        name, arguments = str(call["name"]), call.get("arguments") or {}
        seen: list[Any] = []

        def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            last = messages[-1]
            parts = (
                [p for p in last.parts if getattr(p, "tool_call_id", None) == framework_driver.CALL_ID]
                if isinstance(last, ModelRequest)
                else []
            )
            if not parts:  # turn one
                return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=framework_driver.CALL_ID)])
            seen.extend(parts)  # turn two: the tool-result message the model is given
            return ModelResponse(parts=[TextPart(framework_driver.FINAL_TEXT)])

        self._produced.clear()
        await Agent(FunctionModel(script), toolsets=[self.toolset]).run(framework_driver.PROMPT)
        if not seen:
            raise RuntimeError("adapter: the agent run ended without giving the model a tool result")
        part = seen[-1]
        content = getattr(part, "content", None)
        outcome = getattr(part, "outcome", None)
        message = TypeAdapter(type(part)).dump_python(part, mode="json")
        message.pop("timestamp", None)  # the only non-deterministic field
        if hasattr(part, "model_response_str"):
            message["model_response_str"] = part.model_response_str()
        entry: dict[str, Any] = {
            "result": None,
            "model_view": framework_driver.model_view(
                framework_driver.jsonable(content),
                None if outcome is None else outcome in ERROR_OUTCOMES,
                "ToolReturnPart.outcome" if outcome is not None else None,
                message,
            ),
        }
        produced = self._produced[-1] if self._produced else {}
        if "returned" in produced:
            entry["result"] = framework_driver.jsonable(produced["returned"])
        elif "raised" in produced:
            entry["tool_raised"] = produced["raised"]
        return entry


if __name__ == "__main__":
    sys.exit(framework_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, OPTIONS, PydanticAI))
