"""Framework adapter for smolagents (``smolagents.MCPClient``, built on ``mcpadapt``): what a
``ToolCallingAgent`` hands its model when an MCP tool misbehaves.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view").

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
spawn, ``initialize``, ``tools/list``); ``get_tools()`` is the tool set; ``disconnect()`` closes.
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
import json  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import observe  # noqa: E402
from mcp import StdioServerParameters  # noqa: E402
from smolagents import MCPClient, ToolCallingAgent  # noqa: E402
from smolagents.agents import ToolOutput  # noqa: E402
from smolagents.memory import ActionStep  # noqa: E402
from smolagents.models import (  # noqa: E402
    ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model)
from smolagents.monitoring import LogLevel  # noqa: E402

PACKAGE = "smolagents"
OPTIONS: dict[str, type] = {"structured_output": bool}
# mcp 1.x stdio_client's own shutdown: 2 s grace after stdin closes, then SIGTERM and 2 s before SIGKILL.
CLOSE_RESERVE_S = 6.0
CALL_ID = "call-1"
FINAL_ID = "call-2"
PROMPT = "Use the tool."
FINAL_TEXT = "done"


def to_json(value: Any) -> Any:
    """``value`` as JSON: pydantic models by their JSON dump, dataclasses field by field, anything
    else that is not JSON by its repr."""

    def default(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        if callable(dump):
            try:
                return dump(mode="json", by_alias=True)
            except Exception:
                pass
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return {field.name: getattr(obj, field.name) for field in dataclasses.fields(obj)}
        return repr(obj)

    return json.loads(json.dumps(value, ensure_ascii=False, default=default))


class ScriptedModel(Model):
    """Turn one: the call's tool; later turns: ``final_answer``. Records what turn two is given."""

    def __init__(self, call: dict[str, Any]) -> None:
        super().__init__(model_id="scripted")
        self.call = call
        self.turns = 0
        self.seen: list[Any] | None = None

    def generate(self, messages: list[Any], stop_sequences: list[str] | None = None,
                 response_format: dict[str, str] | None = None, tools_to_call_from: list[Any] | None = None,
                 **kwargs: Any) -> ChatMessage:
        self.turns += 1
        if self.turns == 1:
            name, arguments, call_id = self.call["name"], dict(self.call.get("arguments") or {}), CALL_ID
        else:
            if self.seen is None:
                self.seen = copy.deepcopy(list(messages))
            name, arguments, call_id = "final_answer", {"answer": FINAL_TEXT}, FINAL_ID
        return ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=[ChatMessageToolCall(
            id=call_id, type="function", function=ChatMessageToolCallFunction(name=name, arguments=arguments))])


def within(what: str, fn: Callable[[], Any], deadline: float) -> tuple[Any, dict[str, Any] | None, bool]:
    """``fn()`` on a daemon thread: ``(value, None, False)``, ``(None, Error, False)`` when it raised,
    ``(None, AdapterTimeout, True)`` when the deadline passed first (the thread is abandoned)."""
    watch = observe.Stopwatch()
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None, observe.deadline_error(what, None), True
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # whatever the framework raised is a fact
            box["error"] = exc

    thread = threading.Thread(target=target, name=what, daemon=True)
    thread.start()
    thread.join(remaining)
    if thread.is_alive():
        return None, observe.deadline_error(what, watch.ms()), True
    if "error" in box:
        return None, observe.error_record(box["error"]), False
    return box.get("value"), None, False


def model_view(seen: list[Any]) -> dict[str, Any]:
    message = seen[-1]
    try:
        serialized = to_json(message)
    except Exception:
        serialized = None
    return {"value": to_json(message.content), "error_flag": None, "error_flag_field": None, "message": serialized}


def run_agent(tools: list[Any], call: dict[str, Any]) -> tuple[ScriptedModel, list[ToolOutput], list[BaseException]]:
    model = ScriptedModel(call)
    agent = ToolCallingAgent(tools=tools, model=model, max_steps=3, verbosity_level=LogLevel.OFF)
    outputs = [event for event in agent.run(PROMPT, stream=True)
               if isinstance(event, ToolOutput) and event.id == CALL_ID]
    errors = [step.error for step in agent.memory.steps
              if isinstance(step, ActionStep) and step.error is not None
              and any(tool_call.id == CALL_ID for tool_call in
                      (step.model_output_message.tool_calls if step.model_output_message else None) or [])]
    return model, outputs, errors


def one_call(tools: list[Any], obs: observe.Observation, kind: str, call: dict[str, Any], deadline: float) -> bool:
    """One agent run for ``call``; True when the adapter's deadline ended it."""
    name = call["name"]
    watch = obs.begin(kind, name)
    value, error, late = within(f"{kind} {name}", lambda: run_agent(tools, call), deadline)
    if late:
        return True
    duration = watch.ms()
    if error is None and value[0].seen is None:
        error = {"type": "NoSecondTurn", "code": None,
                 "message": "the agent run ended without giving the model a second turn"}
    if error is not None:
        obs.end(kind, obs.call_entry(name, duration, error=error))
        return False
    model, outputs, errors = value
    entry = obs.call_entry(name, duration, to_json(outputs[-1].output) if outputs else None)
    if errors:  # the tool raised: smolagents recorded the error on the step instead of an output
        entry["tool_error"] = observe.error_record(errors[-1])
    entry["model_view"] = model_view(model.seen)
    obs.end(kind, entry)
    return False


def drive(cell: dict[str, Any], obs: observe.Observation, budget: observe.Budget) -> None:
    server = cell["server"]
    params = StdioServerParameters(
        command=server["command"],
        args=[str(arg) for arg in server.get("args") or []],
        env={str(k): str(v) for k, v in (server.get("env") or {}).items()} or None,
    )
    adapter_kwargs = {"client_session_timeout_seconds": cell["call_timeout_ms"] / 1000.0}
    structured = cell["options"].get("structured_output", False)
    watch = obs.begin("initialize")
    client, error, late = within("initialize", lambda: MCPClient(
        params, adapter_kwargs=adapter_kwargs, structured_output=structured), budget.steps)
    if late:
        return
    obs.end("initialize", observe.step(watch, error, protocol_version=None))
    if error is not None:
        return
    watch = obs.begin("list_tools")
    tools, error, late = within("list_tools", client.get_tools, budget.steps)
    if not late:
        obs.end("list_tools", observe.step(watch, error, tools=None if error else [tool.name for tool in tools]))
        for call in cell["calls"]:
            late = one_call(tools or [], obs, "call", call, budget.steps)
            if late:
                break
    if not late:
        one_call(tools or [], obs, "followup", cell["followup"], budget.steps)
    obs.data.update(obs.snapshot())  # the step the deadline ended, and those never started
    watch = obs.begin("close")
    _, error, late = within("close", client.disconnect, budget.close)
    if not late:
        obs.end("close", observe.step(watch, error))


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
        drive(cell, obs, budget)
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
