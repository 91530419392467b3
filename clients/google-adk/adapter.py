"""Framework adapter for the Google Agent Development Kit (``google-adk``, ``McpToolset``): what an
``LlmAgent`` hands its model when an MCP tool misbehaves.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view").

Conversion (read in the installed package): ``google/adk/tools/mcp_tool/mcp_tool.py``
``McpTool._run_async_impl`` dumps the whole ``CallToolResult`` with ``_dump_mcp_model``
(``model_dump(exclude_none=True, mode="json", by_alias=True)``, so ``content``,
``structuredContent``, ``isError``, ``_meta`` keep their wire names) and drops ``resultType``; that
dict is the tool's response. ``isError`` is passed through, not raised. With the graceful error
handling that is on by default (``McpTool.run_async``, feature ``_MCP_GRACEFUL_ERROR_HANDLING``) an
exception of the call becomes ``{"error": "MCP tool execution failed: ..."}`` (``McpError``) or
``{"error": "Unexpected error during MCP tool execution: ..."}``. The flow
(``google/adk/flows/llm_flows/tools/_caller.py`` ``_build_function_response_content``) wraps the
response in ``Part.from_function_response(name, response)`` with the call's id inside a ``user``
``Content``; that is what the next ``LlmRequest.contents`` carries to the model. ``FunctionResponse`` has no error field, so
``error_flag`` is null; ``model_view.value`` is ``FunctionResponse.response``.

Driving: ``McpToolset(connection_params=StdioConnectionParams(server_params=StdioServerParameters(
...), timeout=...))``; ``timeout`` is the session's ``read_timeout_seconds`` for stdio (and the
connect timeout), set to ``call_timeout_ms``. The toolset connects lazily: constructing it is the
initialize step (no I/O), its first ``get_tools()`` (the list_tools step) spawns the server and
initializes; the session is pooled and reused by every later call. One ``LlmAgent(model=...,
tools=[toolset])`` runs in one ``InMemoryRunner``; each call and the follow-up is one
``runner.run_async`` on a new session, with a scripted ``BaseLlm`` subclass (the shipped
``google.adk.cli.agent_test_runner.MockModel`` imports pytest, so it is not used): turn one asks
for the tool (function-call id ``call-1``), turn two records ``llm_request.contents`` and answers
``done`` (both with zero token usage, so ADK logs no "missing token usage" line). ``result`` is the ``FunctionResponse.response`` of the run's function-response event.
``runner.close()`` (which closes the toolset) is the close step.

Options: none (fails on any). Facts only; OpenTelemetry stays unconfigured (``OTEL_SDK_DISABLED``).
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the framework imports: the harness's budget runs from process start

import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from collections.abc import AsyncGenerator, Awaitable  # noqa: E402
from typing import Any  # noqa: E402

os.environ["OTEL_SDK_DISABLED"] = "true"
for _variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                  "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"):
    os.environ.pop(_variable, None)  # ADK sets up OTLP exporters when these are present

import observe  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams  # noqa: E402
from google.genai import types  # noqa: E402
from mcp import StdioServerParameters  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

PACKAGE = "google-adk"
OPTIONS: dict[str, type] = {}
# mcp 2.x stdio_client's own shutdown: 0.5 s flush + 2 s grace after stdin closes + 2 s SIGTERM + 2 s reap.
CLOSE_RESERVE_S = 7.0
CALL_ID = "call-1"
APP = "matrix"
USER = "user"
PROMPT = "Use the tool."
FINAL_TEXT = "done"
NO_USAGE = types.GenerateContentResponseUsageMetadata(prompt_token_count=0, candidates_token_count=0, total_token_count=0)


def to_json(value: Any) -> Any:
    """``value`` as JSON: pydantic models by their JSON dump, anything else that is not JSON by its repr."""

    def default(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        if callable(dump):
            try:
                return dump(mode="json", by_alias=True, exclude_none=True)
            except Exception:
                pass
        return repr(obj)

    return json.loads(json.dumps(value, ensure_ascii=False, default=default))


class ScriptedLlm(BaseLlm):
    """Turn one: a function call for the armed call; later turns: text. Records what turn two is given."""

    model: str = "scripted"
    _call: dict[str, Any] = PrivateAttr(default_factory=dict)
    _turns: int = PrivateAttr(default=0)
    _seen: list[types.Content] | None = PrivateAttr(default=None)

    def arm(self, call: dict[str, Any]) -> None:
        self._call, self._turns, self._seen = call, 0, None

    @property
    def seen(self) -> list[types.Content] | None:
        return self._seen

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self._turns += 1
        if self._turns == 1:
            call = types.FunctionCall(id=CALL_ID, name=self._call["name"], args=dict(self._call.get("arguments") or {}))
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]),
                              usage_metadata=NO_USAGE)
            return
        if self._seen is None:
            self._seen = [content.model_copy(deep=True) for content in llm_request.contents]
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=FINAL_TEXT)]),
                          usage_metadata=NO_USAGE)


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


def model_view(seen: list[types.Content]) -> dict[str, Any]:
    carrying = [content for content in seen
                if any(part.function_response is not None and part.function_response.id == CALL_ID
                       for part in content.parts or [])]
    message = carrying[-1] if carrying else seen[-1]
    try:
        serialized = to_json(message)
    except Exception:
        serialized = None
    responses = [part.function_response for part in message.parts or []
                 if part.function_response is not None and part.function_response.id == CALL_ID]
    value = to_json(responses[-1].response) if responses else serialized
    return {"value": value, "error_flag": None, "error_flag_field": None, "message": serialized}


async def run_agent(runner: InMemoryRunner, model: ScriptedLlm, call: dict[str, Any]) -> list[Any]:
    model.arm(call)
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    message = types.Content(role="user", parts=[types.Part(text=PROMPT)])
    responses: list[Any] = []
    async for event in runner.run_async(user_id=USER, session_id=session.id, new_message=message):
        responses.extend(response.response for response in event.get_function_responses() if response.id == CALL_ID)
    return responses


async def one_call(runner: InMemoryRunner, model: ScriptedLlm, obs: observe.Observation, kind: str,
                   call: dict[str, Any], deadline: float) -> bool:
    """One agent run for ``call``; True when the adapter's deadline ended it."""
    name = call["name"]
    watch = obs.begin(kind, name)
    responses, error, late = await attempt(f"{kind} {name}", run_agent(runner, model, call), deadline)
    if late:
        return True
    duration = watch.ms()
    if error is None and model.seen is None:
        error = {"type": "NoSecondTurn", "code": None,
                 "message": "the agent run ended without giving the model a second turn"}
    if error is not None:
        obs.end(kind, obs.call_entry(name, duration, error=error))
        return False
    entry = obs.call_entry(name, duration, to_json(responses[-1]) if responses else None)
    entry["model_view"] = model_view(model.seen)
    obs.end(kind, entry)
    return False


async def drive(cell: dict[str, Any], obs: observe.Observation, budget: observe.Budget) -> None:
    server = cell["server"]
    params = StdioServerParameters(
        command=server["command"],
        args=[str(arg) for arg in server.get("args") or []],
        env={str(k): str(v) for k, v in (server.get("env") or {}).items()} or None,
    )
    watch = obs.begin("initialize")
    try:  # lazy: no I/O until the first get_tools()
        toolset = McpToolset(connection_params=StdioConnectionParams(
            server_params=params, timeout=cell["call_timeout_ms"] / 1000.0))
    except Exception as exc:
        obs.end("initialize", observe.step(watch, exc, protocol_version=None))
        return
    obs.end("initialize", observe.step(watch, protocol_version=None))
    model = ScriptedLlm()
    runner = InMemoryRunner(agent=LlmAgent(name="agent", model=model, tools=[toolset]), app_name=APP)
    pending: BaseException | None = None
    try:
        watch = obs.begin("list_tools")
        tools, error, late = await attempt("list_tools", toolset.get_tools(), budget.steps)
        if not late:
            obs.end("list_tools", observe.step(watch, error, tools=None if error else [tool.name for tool in tools]))
            for call in cell["calls"]:
                late = await one_call(runner, model, obs, "call", call, budget.steps)
                if late:
                    break
        if not late:
            await one_call(runner, model, obs, "followup", cell["followup"], budget.steps)
    except BaseException as exc:  # a bug or an interrupt: record the unfinished steps, then close
        pending = exc
    obs.data.update(obs.snapshot(pending))  # the step the deadline ended, and those never started
    watch = obs.begin("close")
    _, error, late = await attempt("close", runner.close(), budget.close)
    if not late:
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
