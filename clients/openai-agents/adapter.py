"""Adapter for the OpenAI Agents SDK (``openai-agents``): what the model reads from an MCP tool result.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view"; the steps and deadlines are ``_support/framework_driver.py``'s).

- Connect: ``agents.mcp.MCPServerStdio(params, use_structured_content=...,
  client_session_timeout_seconds=call_timeout_ms / 1000)``, entered as an async context manager
  (``connect()``: spawns the server, initializes the mcp ``ClientSession``); ``server.list_tools()``
  is the tool loading step (the agent lists again at each run, ``cache_tools_list`` is off by
  default, as in an application).
- One agent run per call: ``Runner.run(Agent(model=ScriptedModel(...), mcp_servers=[server]))``
  with the SDK's own test model ``agents.testing.ScriptedModel``: step one is
  ``agents.testing.function_call(tool, arguments, call_id="call-1")``, step two
  ``assistant_message("done")``. The runner executes the call through the MCP function tool
  (``MCPUtil.to_function_tool`` -> ``MCPUtil.invoke_mcp_tool``); turn two captures the
  ``function_call_output`` item with ``call_id`` ``call-1`` from ``ScriptedModel.last_call.input``,
  the Responses-API input the model is given.
- The conversion of the MCP result for the model: ``agents/mcp/util.py`` ``MCPUtil.invoke_mcp_tool``
  (``json.dumps(structuredContent)`` when ``server.use_structured_content`` and not ``isError``,
  else each content block as a text/image output dict, a single block unwrapped); the runner then
  turns that ``ToolOutput`` into the ``function_call_output`` item's ``output``. Tool failures
  that are exceptions (``AgentsException``, ``MCPError``) go to the agent's
  ``failure_error_function`` (default: a model-visible error string). Verified in openai-agents 0.24.0.
- ``model_view.value`` is that item's ``output`` (a string, or a list of ``input_text`` /
  ``input_image`` parts); the item has no error field, so ``error_flag`` is null. ``result`` is the
  ``ToolCallOutputItem.output`` of the run (what the tool execution produced). When
  ``MCPServerStdio.call_tool`` raised (and the failure function turned that into the model's
  text), the entry's ``tool_raised`` records the exception: the server object is a subclass whose
  ``call_tool`` only records what the original raises.

Options: ``use_structured_content`` (bool), passed to ``MCPServerStdio``. Tracing is disabled
(``agents.set_tracing_disabled(True)`` and ``RunConfig(tracing_disabled=True)``).
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the framework imports: the harness's budget runs from process start

import os  # noqa: E402
import sys  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from typing import Any  # noqa: E402

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

import framework_driver  # noqa: E402
import observe  # noqa: E402
from agents import Agent, RunConfig, Runner, set_tracing_disabled  # noqa: E402
from agents.items import ToolCallOutputItem  # noqa: E402
from agents.mcp import MCPServerStdio  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

PACKAGE = "openai-agents"
CLOSE_RESERVE_S = 7.0  # mcp's stdio_client shutdown: stdin close, 2 s grace, SIGTERM, reap
OPTIONS = {"use_structured_content": bool}


def _plain(value: Any) -> Any:
    """A pydantic model as its JSON form, anything else as is."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", by_alias=True, exclude_unset=True) if callable(dump) else value


class _RecordingServer(MCPServerStdio):
    """``MCPServerStdio`` unchanged, except that an exception ``call_tool`` raises is also recorded
    (the agent's ``failure_error_function`` replaces it by a generic message before the model)."""

    raised: list[dict[str, Any]]

    async def call_tool(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().call_tool(*args, **kwargs)
        except BaseException as exc:
            self.raised.append(observe.error_record(exc))
            raise


class OpenAIAgents:
    def __init__(self, cell: dict[str, Any], obs: observe.Observation) -> None:
        set_tracing_disabled(True)

        async def on_message(message: Any) -> None:
            if isinstance(message, Exception):
                obs.transport_error(message)

        command, args, env = framework_driver.stdio_command(cell)
        params: dict[str, Any] = {"command": command, "args": args}
        if env is not None:
            params["env"] = env
        self.server = _RecordingServer(
            params,
            name="reference",
            client_session_timeout_seconds=cell["call_timeout_ms"] / 1000.0,
            use_structured_content=cell["options"].get("use_structured_content", False),
            message_handler=on_message,
        )
        self.server.raised = []

    async def open(self, stack: AsyncExitStack) -> str | None:
        await stack.enter_async_context(self.server)
        session = self.server.session
        version = getattr(session, "protocol_version", None)
        if version is None and self.server.server_initialize_result is not None:
            version = self.server.server_initialize_result.protocol_version
        return None if version is None else str(version)

    async def tools(self) -> list[str]:
        return [tool.name for tool in await self.server.list_tools()]

    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        model = ScriptedModel(
            [
                [function_call(str(call["name"]), call.get("arguments") or {}, call_id=framework_driver.CALL_ID)],
                [assistant_message(framework_driver.FINAL_TEXT)],
            ]
        )
        agent = Agent(name="adapter", model=model, mcp_servers=[self.server])
        self.server.raised.clear()
        result = await Runner.run(agent, framework_driver.PROMPT, run_config=RunConfig(tracing_disabled=True))
        last = model.last_call
        items = last.input if last is not None and isinstance(last.input, list) else []
        outputs = [_plain(item) for item in items]
        outputs = [
            item
            for item in outputs
            if isinstance(item, dict)
            and item.get("type") == "function_call_output"
            and item.get("call_id") == framework_driver.CALL_ID
        ]
        if len(model.calls) < 2 or not outputs:
            raise RuntimeError("adapter: the agent run ended without giving the model a tool result")
        message = outputs[-1]
        produced = [item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)]
        entry = {
            "result": framework_driver.jsonable(_plain(produced[-1])) if produced else None,
            "model_view": framework_driver.model_view(
                message.get("output"), None, None, framework_driver.jsonable(message)
            ),
        }
        if self.server.raised:
            entry["tool_raised"] = self.server.raised[-1]
        return entry


if __name__ == "__main__":
    sys.exit(framework_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, OPTIONS, OpenAIAgents))
