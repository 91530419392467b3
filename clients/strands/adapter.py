"""Framework adapter for Strands Agents (``strands-agents``, ``strands.tools.mcp.MCPClient``): what an
``Agent`` hands its model when an MCP tool misbehaves.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view").

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
background thread: spawn, ``initialize``), ``list_tools_sync()`` for the tool set, ``stop()`` to
close. ``MCPAgentTool.timeout`` (the per-call ``read_timeout_seconds``; the client has no
client-wide request timeout) is set to ``call_timeout_ms`` on every listed tool. Each call and the
follow-up is one ``Agent(model=..., tools=..., callback_handler=None)`` invocation with a scripted
subclass of ``strands.models.model.Model`` (strands ships no test model): turn one streams a
``toolUse`` (id ``call-1``), turn two records the messages it is given and ends with text.
``result`` is ``AfterToolCallEvent.result`` (the tool execution's result, from a hook).

Options: none (fails on any). Facts only; OpenTelemetry stays unconfigured (no exporter).
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the framework imports: the harness's budget runs from process start

import copy  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
from collections.abc import AsyncIterator, Callable  # noqa: E402
from datetime import timedelta  # noqa: E402
from typing import Any  # noqa: E402

os.environ["OTEL_SDK_DISABLED"] = "true"

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
                pass
        return repr(obj)

    return json.loads(json.dumps(value, ensure_ascii=False, default=default))


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

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None,
                          **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None,
                     **kwargs: Any) -> AsyncIterator[Any]:
        self.turns += 1
        yield {"messageStart": {"role": "assistant"}}
        if self.turns == 1:
            yield {"contentBlockStart": {"start": {"toolUse": {"name": self.call["name"], "toolUseId": CALL_ID}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(self.call.get("arguments") or {})}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        if self.seen is None:
            self.seen = copy.deepcopy(list(messages))
        yield {"contentBlockDelta": {"delta": {"text": FINAL_TEXT}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


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
    blocks = [block["toolResult"] for block in message.get("content") or []
              if isinstance(block, dict) and "toolResult" in block]
    mine = [result for result in blocks if result.get("toolUseId") == CALL_ID] or blocks
    if not mine:  # no tool result in the last message: show what it holds
        return {"value": to_json(message.get("content")), "error_flag": None, "error_flag_field": None,
                "message": serialized}
    result = mine[-1]
    return {"value": to_json(result.get("content")), "error_flag": result.get("status") == "error",
            "error_flag_field": "toolResult.status", "message": serialized}


def run_agent(tools: list[Any], call: dict[str, Any]) -> tuple[ScriptedModel, list[Any]]:
    model = ScriptedModel(call)
    results: list[Any] = []

    def after_tool(event: AfterToolCallEvent) -> None:
        if event.tool_use.get("toolUseId") == CALL_ID:
            results.append(event.result)

    agent = Agent(model=model, tools=tools, callback_handler=None)
    agent.add_hook(after_tool, AfterToolCallEvent)
    agent(PROMPT)
    return model, results


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
    model, results = value
    entry = obs.call_entry(name, duration, to_json(results[-1]) if results else None)
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
    client = MCPClient(lambda: stdio_client(params))
    watch = obs.begin("initialize")
    _, error, late = within("initialize", client.start, budget.steps)
    if late:
        return
    obs.end("initialize", observe.step(watch, error, protocol_version=None))
    if error is not None:
        return
    timeout = timedelta(milliseconds=cell["call_timeout_ms"])

    def list_tools() -> list[Any]:
        tools = list(client.list_tools_sync())
        for tool in tools:
            tool.timeout = timeout
        return tools

    watch = obs.begin("list_tools")
    tools, error, late = within("list_tools", list_tools, budget.steps)
    if not late:
        obs.end("list_tools", observe.step(watch, error, tools=None if error else [tool.tool_name for tool in tools]))
        for call in cell["calls"]:
            late = one_call(tools or [], obs, "call", call, budget.steps)
            if late:
                break
    if not late:
        one_call(tools or [], obs, "followup", cell["followup"], budget.steps)
    obs.data.update(obs.snapshot())  # the step the deadline ended, and those never started
    watch = obs.begin("close")
    _, error, late = within("close", lambda: client.stop(None, None, None), budget.close)
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
