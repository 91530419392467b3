"""Adapter for LangChain (Python) with ``langchain-mcp-adapters``: what the model reads from an MCP
tool result.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view"; the steps and deadlines are ``_support/framework_driver.py``'s).

- Connect: ``MultiServerMCPClient({"reference": {"transport": "stdio", ...}})`` and one persistent
  session, ``client.session("reference", auto_initialize=False)`` followed by the session's
  ``initialize()`` (exactly what ``auto_initialize=True`` does, but it keeps the negotiated
  protocol version); ``session_kwargs`` sets the mcp ``ClientSession``'s ``read_timeout_seconds``
  to ``call_timeout_ms``. (``client.get_tools()`` without a session would spawn a new server for
  every call.) ``load_mcp_tools(session, ...)`` is the tool loading step.
- One agent run per call: ``langchain.agents.create_agent(model, tools)`` (LangChain 1.x's agent
  loop, a LangGraph graph with a ``ToolNode``), ``ainvoke({"messages": [prompt]})``. The model is
  langchain-core's test model ``FakeMessagesListChatModel`` (subclassed only to accept
  ``bind_tools``, which it does not implement, and to record the messages it is given): response
  one is an ``AIMessage`` whose ``tool_calls`` ask for the call's tool with id ``call-1``,
  response two ``AIMessage("done")``. Turn two captures the ``ToolMessage`` with
  ``tool_call_id`` ``call-1`` from the messages the model is given.
- The conversion of the MCP result for the model: ``langchain_mcp_adapters/tools.py``
  ``_convert_call_tool_result`` (+ ``_convert_mcp_content_to_lc_block``): the content blocks become
  LangChain standard blocks (the ``ToolMessage.content``), ``structuredContent`` goes only into the
  artifact (``MCPToolArtifact``), and ``isError`` raises ``_MCPToolExecutionError``, which the
  tool's ``handle_tool_error`` (``_handle_mcp_tool_error``, when ``handle_tool_errors=True``)
  turns into a ``ToolMessage`` with ``status="error"``. Verified in langchain-mcp-adapters 0.3.2.
- ``model_view.value`` is ``ToolMessage.content``; ``error_flag`` is ``ToolMessage.status ==
  "error"``. The random ids (LangChain's block ids ``lc_<uuid4>``, LangGraph's message ids) are
  normalized to ``lc_id-0``, ``id-1``, ... (``framework_driver.normalize_ids``) in the value, the message
  and the result. ``result`` is the tool's output as the agent's
  final state holds it: ``{"content": ..., "artifact": ...}`` of that ``ToolMessage``.

Options: ``handle_tool_errors`` (bool), passed to ``load_mcp_tools``. LangSmith tracing is off
(``LANGSMITH_TRACING`` / ``LANGCHAIN_TRACING_V2`` set to ``false``).
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the framework imports: the harness's budget runs from process start

import os  # noqa: E402
import sys  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from datetime import timedelta  # noqa: E402
from typing import Any  # noqa: E402

for _name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
    os.environ[_name] = "false"

import framework_driver  # noqa: E402
import observe  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_mcp_adapters.client import MultiServerMCPClient  # noqa: E402
from langchain_mcp_adapters.tools import load_mcp_tools  # noqa: E402
from pydantic import Field  # noqa: E402

PACKAGE = "langchain-mcp-adapters"
CLOSE_RESERVE_S = 7.0  # mcp's stdio_client shutdown: stdin close, 2 s grace, SIGTERM, reap
OPTIONS = {"handle_tool_errors": bool}
SERVER = "reference"


class ScriptedChatModel(FakeMessagesListChatModel):
    """langchain-core's ``FakeMessagesListChatModel``, plus the ``bind_tools`` an agent needs (the
    scripted responses ignore the tools) and a record of the messages of every turn."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def _tool_message(messages: list[BaseMessage]) -> ToolMessage | None:
    found = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == framework_driver.CALL_ID]
    return found[-1] if found else None


class LangChain:
    def __init__(self, cell: dict[str, Any], obs: observe.Observation) -> None:
        async def on_message(message: Any) -> None:
            if isinstance(message, Exception):
                obs.transport_error(message)

        command, args, env = framework_driver.stdio_command(cell)
        connection: dict[str, Any] = {
            "transport": "stdio",
            "command": command,
            "args": args,
            "session_kwargs": {
                "read_timeout_seconds": timedelta(milliseconds=cell["call_timeout_ms"]),
                "message_handler": on_message,
            },
        }
        if env is not None:
            connection["env"] = env
        self.client = MultiServerMCPClient({SERVER: connection})
        self.handle_tool_errors = cell["options"].get("handle_tool_errors", True)
        self.session: Any = None
        self.tools_loaded: list[Any] = []

    async def open(self, stack: AsyncExitStack) -> str | None:
        self.session = await stack.enter_async_context(self.client.session(SERVER, auto_initialize=False))
        initialized = await self.session.initialize()
        version = getattr(initialized, "protocolVersion", None)
        return None if version is None else str(version)

    async def tools(self) -> list[str]:
        self.tools_loaded = await load_mcp_tools(
            self.session, server_name=SERVER, handle_tool_errors=self.handle_tool_errors
        )
        return [tool.name for tool in self.tools_loaded]

    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        request = AIMessage(
            content="",
            tool_calls=[
                {
                    "name": str(call["name"]),
                    "args": call.get("arguments") or {},
                    "id": framework_driver.CALL_ID,
                    "type": "tool_call",
                }
            ],
        )
        model = ScriptedChatModel(responses=[request, AIMessage(content=framework_driver.FINAL_TEXT)])
        agent = create_agent(model, self.tools_loaded)
        state = await agent.ainvoke({"messages": [HumanMessage(framework_driver.PROMPT)]})
        given = _tool_message(model.seen[-1]) if len(model.seen) >= 2 else None
        if given is None:
            raise RuntimeError("adapter: the agent run ended without giving the model a tool result")
        produced = _tool_message(state.get("messages", []))
        message = framework_driver.normalize_ids(given.model_dump(mode="json"))
        result = None
        if produced is not None:
            result = framework_driver.normalize_ids(
                {
                    "content": framework_driver.jsonable(produced.content),
                    "artifact": framework_driver.jsonable(produced.artifact),
                }
            )
        return {
            "result": result,
            "model_view": framework_driver.model_view(
                framework_driver.normalize_ids(framework_driver.jsonable(given.content)),
                given.status == "error",
                "ToolMessage.status",
                message,
            ),
        }


if __name__ == "__main__":
    sys.exit(framework_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, OPTIONS, LangChain))
