"""Framework adapter for smolagents (``smolagents.MCPClient``, built on ``mcpadapt``): what a
``ToolCallingAgent`` hands its model when an MCP tool misbehaves.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view"; the steps and deadlines are ``_support/framework_driver.py``'s).

Conversion (read in the installed packages): ``mcpadapt/smolagents_adapter.py``
``SmolAgentsAdapter.adapt``, the ``forward`` of its inner ``MCPAdaptTool``, turns the
``CallToolResult`` into the tool's return value. It never looks at ``isError``; an empty
``content`` raises ``ValueError``; with ``structured_output=False`` it returns the text of the
**first** content block only (a warning when there are more); with ``structured_output=True`` it
returns ``structuredContent`` when present, else the first text block, JSON-parsed when it parses.
``smolagents/agents.py`` ``ToolCallingAgent.process_tool_calls`` makes the observation
``str(output).strip()`` (so a dict reaches the model as a Python repr), and
``smolagents/memory.py`` ``ActionStep.to_messages`` builds the tool-result message
``ChatMessage(role=TOOL_RESPONSE, content=[{"type": "text", "text": "Observation:\\n" + ...}])``;
a tool that raised becomes, in the same role, ``"Call id: ...\\nError:\\n...\\nNow let's retry: ..."``.
There is no error field on the message, so ``error_flag`` is null.

Driving: ``MCPClient(StdioServerParameters(...), adapter_kwargs=..., structured_output=...)``
connects on construction (``mcpadapt.core.MCPAdapt`` runs the session in a background thread:
spawn, ``initialize``, ``tools/list``): that is the initialize step; ``get_tools()`` is the tool
set; ``disconnect()`` closes. The blocking calls go through ``framework_driver.in_thread``.
``client_session_timeout_seconds`` (mcpadapt's per-request ``read_timeout_seconds``, default 5 s) is
``call_timeout_ms``. Each call and the follow-up is one ``ToolCallingAgent.run`` with a scripted
subclass of ``smolagents.models.Model`` (smolagents ships no test model): turn one asks for the tool
(tool-call id ``call-1``), turn two records the messages it is given and calls ``final_answer``.
``result`` is ``ToolOutput.output`` (the tool's return value) from the run's event stream, null when
the tool raised (then the entry's own field ``tool_error`` holds the ``AgentError`` smolagents put on
the step, with its cause); ``model_view.value`` is the ``content`` of the last message turn two
receives (the tool response).

Options: ``structured_output`` (bool): ``MCPClient(structured_output=...)``. Facts only.
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the framework imports: the harness's budget runs from process start

import copy  # noqa: E402
import dataclasses  # noqa: E402
import sys  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from typing import Any  # noqa: E402

import framework_driver  # noqa: E402
import observe  # noqa: E402
from mcp import StdioServerParameters  # noqa: E402
from smolagents import MCPClient, ToolCallingAgent  # noqa: E402
from smolagents.agents import ToolOutput  # noqa: E402
from smolagents.memory import ActionStep  # noqa: E402
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model  # noqa: E402
from smolagents.monitoring import LogLevel  # noqa: E402

PACKAGE = "smolagents"
OPTIONS: dict[str, type] = {"structured_output": bool}
# mcp 1.x stdio_client's own shutdown: 2 s grace after stdin closes, then SIGTERM and 2 s before SIGKILL.
CLOSE_RESERVE_S = 6.0
FINAL_ID = "call-2"


def _fields(obj: Any) -> Any:
    """A dataclass instance (smolagents' ``ChatMessage``, ``ToolOutput``...) field by field, anything
    else by its repr."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {field.name: getattr(obj, field.name) for field in dataclasses.fields(obj)}
    return repr(obj)


def to_json(value: Any) -> Any:
    """``value`` as JSON: pydantic models by their JSON dump, dataclasses field by field, anything
    else that is not JSON by its repr."""
    return framework_driver.to_json(value, default=_fields)


class ScriptedModel(Model):
    """Turn one: the call's tool; later turns: ``final_answer``. Records what turn two is given."""

    def __init__(self, call: dict[str, Any]) -> None:
        super().__init__(model_id="scripted")
        self.call = call
        self.turns = 0
        self.seen: list[Any] | None = None

    def generate(
        self,
        messages: list[Any],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        self.turns += 1
        if self.turns == 1:
            name, arguments = self.call["name"], dict(self.call.get("arguments") or {})
            call_id = framework_driver.CALL_ID
        else:
            if self.seen is None:
                self.seen = copy.deepcopy(list(messages))
            name, arguments, call_id = "final_answer", {"answer": framework_driver.FINAL_TEXT}, FINAL_ID
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content=None,
            tool_calls=[
                ChatMessageToolCall(
                    id=call_id, type="function", function=ChatMessageToolCallFunction(name=name, arguments=arguments)
                )
            ],
        )


def model_view(seen: list[Any]) -> dict[str, Any]:
    message = seen[-1]
    try:
        serialized = to_json(message)
    except Exception:
        serialized = None
    return framework_driver.model_view(to_json(message.content), None, None, serialized)


class Smolagents:
    def __init__(self, cell: dict[str, Any], obs: observe.Observation) -> None:
        self.params = StdioServerParameters(**observe.stdio_server(cell))
        self.adapter_kwargs = {"client_session_timeout_seconds": cell["call_timeout_ms"] / 1000.0}
        self.structured = cell["options"].get("structured_output", False)
        self.tools_loaded: list[Any] = []

    async def open(self, stack: AsyncExitStack) -> str | None:
        client = await framework_driver.in_thread(
            lambda: MCPClient(self.params, adapter_kwargs=self.adapter_kwargs, structured_output=self.structured)
        )
        self.client = client
        stack.push_async_callback(framework_driver.in_thread, client.disconnect)
        return None

    async def tools(self) -> list[str]:
        self.tools_loaded = await framework_driver.in_thread(self.client.get_tools)
        return [tool.name for tool in self.tools_loaded]

    def _run_agent(self, call: dict[str, Any]) -> tuple[ScriptedModel, list[ToolOutput], list[BaseException]]:
        model = ScriptedModel(call)
        agent = ToolCallingAgent(tools=self.tools_loaded, model=model, max_steps=3, verbosity_level=LogLevel.OFF)
        outputs = [
            event
            for event in agent.run(framework_driver.PROMPT, stream=True)
            if isinstance(event, ToolOutput) and event.id == framework_driver.CALL_ID
        ]
        errors = [
            step.error
            for step in agent.memory.steps
            if isinstance(step, ActionStep)
            and step.error is not None
            and any(
                tool_call.id == framework_driver.CALL_ID
                for tool_call in (step.model_output_message.tool_calls if step.model_output_message else None) or []
            )
        ]
        return model, outputs, errors

    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        model, outputs, errors = await framework_driver.in_thread(lambda: self._run_agent(call))
        if model.seen is None:
            raise framework_driver.NoSecondTurn()
        entry: dict[str, Any] = {"result": to_json(outputs[-1].output) if outputs else None}
        if errors:  # the tool raised: smolagents recorded the error on the step instead of an output
            entry["tool_error"] = observe.error_record(errors[-1])
        entry["model_view"] = model_view(model.seen)
        return entry


if __name__ == "__main__":
    sys.exit(framework_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, OPTIONS, Smolagents))
