"""Framework adapter for LlamaIndex (``llama-index-tools-mcp`` + ``llama-index-core``): what a
``FunctionAgent`` hands its LLM when an MCP tool misbehaves.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view"; the steps and deadlines are ``_support/framework_driver.py``'s).

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
``read_timeout_seconds`` = the client's ``timeout`` + ``initialize()``) once, as the initialize
step, and hands the session to ``McpToolSpec(client=session)``, which accepts any
``ClientSession``; ``McpToolSpec.to_tool_list_async()`` is the tool loading step. ``timeout`` is
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

import copy  # noqa: E402
import sys  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from typing import Any  # noqa: E402

import framework_driver  # noqa: E402
import observe  # noqa: E402
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec  # noqa: E402

PACKAGE = "llama-index-tools-mcp"
OPTIONS: dict[str, type] = {}
# mcp 2.x stdio_client's own shutdown: 0.5 s flush + 2 s grace after stdin closes + 2 s SIGTERM + 2 s reap.
CLOSE_RESERVE_S = 7.0


def _python_dump(obj: Any) -> Any:
    """A pydantic model whose JSON dump failed (a ``ToolOutput`` holding an exception): its Python
    dump, whose members go through :func:`to_json` again; anything else: its repr."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            return dump(by_alias=True)
        except Exception:
            return repr(obj)
    return repr(obj)


def to_json(value: Any) -> Any:
    """``value`` as JSON: pydantic models by their JSON dump (else their Python dump), anything else
    that is not JSON by its repr."""
    return framework_driver.to_json(value, default=_python_dump)


class Script:
    """The scripted LLM's ``response_generator`` for one agent run."""

    def __init__(self, call: dict[str, Any]) -> None:
        self.call = call
        self.turns = 0
        self.seen: list[ChatMessage] | None = None

    def respond(self, messages: list[ChatMessage], **_: Any) -> ChatMessage:
        self.turns += 1
        if self.turns == 1:
            return ChatMessage(
                role=MessageRole.ASSISTANT,
                blocks=[
                    ToolCallBlock(
                        tool_call_id=framework_driver.CALL_ID,
                        tool_name=self.call["name"],
                        tool_kwargs=dict(self.call.get("arguments") or {}),
                    )
                ],
            )
        if self.seen is None:
            self.seen = copy.deepcopy(list(messages))
        return ChatMessage(role=MessageRole.ASSISTANT, content=framework_driver.FINAL_TEXT)


def model_view(seen: list[ChatMessage]) -> dict[str, Any]:
    tool_messages = [m for m in seen if m.role == MessageRole.TOOL]
    message = tool_messages[-1] if tool_messages else seen[-1]
    try:
        serialized = to_json(message)
    except Exception:
        serialized = None
    return framework_driver.model_view(message.content, None, None, serialized)


class LlamaIndex:
    def __init__(self, cell: dict[str, Any], obs: observe.Observation) -> None:
        command, args, env = framework_driver.stdio_command(cell)
        self.client = BasicMCPClient(command, args=args, env=env or {}, timeout=cell["call_timeout_ms"] / 1000.0)
        self.session: Any = None
        self.tools_loaded: list[Any] = []

    async def open(self, stack: AsyncExitStack) -> str | None:
        # What every BasicMCPClient operation enters, held open for the whole cell.
        self.session = await stack.enter_async_context(self.client._run_session())
        return getattr(self.session, "protocol_version", None)

    async def tools(self) -> list[str]:
        self.tools_loaded = await McpToolSpec(client=self.session).to_tool_list_async()
        return [tool.metadata.get_name() for tool in self.tools_loaded]

    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        script = Script(call)
        agent = FunctionAgent(tools=self.tools_loaded, llm=MockFunctionCallingLLM(response_generator=script.respond))
        handler = agent.run(user_msg=framework_driver.PROMPT)
        outputs: list[Any] = []
        async for event in handler.stream_events():
            if isinstance(event, ToolCallResult) and event.tool_id == framework_driver.CALL_ID:
                outputs.append(event.tool_output)
        await handler
        if script.seen is None:
            raise framework_driver.NoSecondTurn()
        return {"result": to_json(outputs[-1]) if outputs else None, "model_view": model_view(script.seen)}


if __name__ == "__main__":
    sys.exit(framework_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, OPTIONS, LlamaIndex))
