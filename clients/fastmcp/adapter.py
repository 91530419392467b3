"""Adapter for FastMCP's client (``fastmcp.Client``): the parsed value FastMCP hands an application.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view"; the steps and deadlines are ``_support/framework_driver.py``'s).

FastMCP's ``Client`` is not an agent framework: it has no agent loop and no model (pydantic-ai's
``MCPToolset`` is the agent built on it, see the ``pydantic-ai`` adapter). This adapter records the
layer FastMCP adds on top of the MCP SDK, the value an application built on FastMCP hands its model:

- Connect: ``fastmcp.Client(StdioTransport(command, args, env, keep_alive=False),
  timeout=call_timeout_ms, init_timeout=call_timeout_ms)``, entered as an async context manager
  (spawns the server, initializes). ``Client.list_tools()`` is the tool loading step (FastMCP
  caches the output schemas it needs to parse results).
- Each call: ``Client.call_tool(name, arguments, raise_on_error=...)`` (the application's call; no
  model turn is involved).
- The conversion: ``fastmcp/client/mixins/tools.py`` ``_parse_call_tool_result`` (the module-level
  function, called by ``Client._parse_call_tool_result``): ``CallToolResult.data`` is
  ``structuredContent`` validated and coerced through the tool's ``outputSchema`` (a
  ``json_schema_to_type_adapter`` type, e.g. a dataclass; ``x-fastmcp-wrap-result`` unwrapped), or
  the raw ``structuredContent`` without a schema, or ``None`` without structured content, on
  ``isError``, or when the parse fails (FastMCP logs the parse error and keeps going). With
  ``raise_on_error=True`` (the default) an ``isError`` result raises ``ToolError(first text)``,
  recorded as a raised call. Verified in fastmcp 4.2.3.
- The model view is a choice, stated here: ``model_view.value`` is ``CallToolResult.data``, the
  parsed value FastMCP exposes as *the* result of a tool call, in its JSON form
  (``pydantic_core.to_jsonable_python``: a dataclass becomes an object; the Python ``repr`` of
  ``data`` is kept in ``message.data_repr``). ``error_flag`` is ``CallToolResult.is_error``.
  ``result`` and ``message`` are the whole ``CallToolResult`` (content blocks as mcp dumps them,
  structured_content, meta, data, is_error).

Options: ``raise_on_error`` (bool), passed to ``Client.call_tool``. FastMCP's OpenTelemetry spans
need an SDK and exporter, which are not installed: nothing is exported.
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the framework imports: the harness's budget runs from process start

import sys  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from typing import Any  # noqa: E402

import framework_driver  # noqa: E402
import observe  # noqa: E402
import pydantic_core  # noqa: E402
from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StdioTransport  # noqa: E402

PACKAGE = "fastmcp"
CLOSE_RESERVE_S = 7.0  # mcp's stdio_client shutdown: stdin close, 2 s grace, SIGTERM, reap
OPTIONS = {"raise_on_error": bool}


def _json_form(value: Any) -> Any:
    try:
        return pydantic_core.to_jsonable_python(value)
    except Exception:
        return repr(value)


class FastMCP:
    def __init__(self, cell: dict[str, Any], obs: observe.Observation) -> None:
        async def on_message(message: Any) -> None:
            if isinstance(message, Exception):
                obs.transport_error(message)

        command, args, env = framework_driver.stdio_command(cell)
        timeout = cell["call_timeout_ms"] / 1000.0
        self.client = Client(
            StdioTransport(command=command, args=args, env=env, keep_alive=False),
            timeout=timeout,
            init_timeout=timeout,
            message_handler=on_message,
        )
        self.raise_on_error = cell["options"].get("raise_on_error", True)

    async def open(self, stack: AsyncExitStack) -> str | None:
        await stack.enter_async_context(self.client)
        version = self.client.protocol_version
        return None if version is None else str(version)

    async def tools(self) -> list[str]:
        return [tool.name for tool in await self.client.list_tools()]

    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(
            str(call["name"]), call.get("arguments") or {}, raise_on_error=self.raise_on_error
        )
        whole = {
            "content": [block.model_dump(mode="json", by_alias=True) for block in result.content],
            "structured_content": _json_form(result.structured_content),
            "meta": _json_form(result.meta),
            "data": _json_form(result.data),
            "is_error": result.is_error,
        }
        return {
            "result": whole,
            "model_view": framework_driver.model_view(
                _json_form(result.data),
                bool(result.is_error),
                "CallToolResult.is_error",
                {**whole, "data_repr": repr(result.data)},
            ),
        }


if __name__ == "__main__":
    sys.exit(framework_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, OPTIONS, FastMCP))
