"""Framework adapter for the Google Agent Development Kit (``google-adk``, ``McpToolset``): what an
``LlmAgent`` hands its model when an MCP tool misbehaves.

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md, "Framework
adapters: the model view"; the steps and deadlines are ``_support/framework_driver.py``'s).

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
``Content``; that is what the next ``LlmRequest.contents`` carries to the model.
``FunctionResponse`` has no error field, so ``error_flag`` is null; ``model_view.value`` is
``FunctionResponse.response``.

Driving: ``McpToolset(connection_params=StdioConnectionParams(server_params=StdioServerParameters(
...), timeout=...))``; ``timeout`` is the session's ``read_timeout_seconds`` for stdio (and the
connect timeout), set to ``call_timeout_ms``. The toolset connects lazily: constructing it (with the
agent and its runner) is the initialize step (no I/O), its first ``get_tools()`` (the list_tools
step) spawns the server and initializes; the session is pooled and reused by every later call. One
``LlmAgent(model=..., tools=[toolset])`` runs in one ``InMemoryRunner``; each call and the follow-up
is one ``runner.run_async`` on a new session, with a scripted ``BaseLlm`` subclass (the shipped
``google.adk.cli.agent_test_runner.MockModel`` imports pytest, so it is not used): turn one asks
for the tool (function-call id ``call-1``), turn two records ``llm_request.contents`` and answers
``done`` (both with zero token usage, so ADK logs no "missing token usage" line). ``result`` is the
``FunctionResponse.response`` of the run's function-response event.
``runner.close()`` (which closes the toolset) is the close step.

Options: none (fails on any). Facts only; OpenTelemetry stays unconfigured (``OTEL_SDK_DISABLED``).
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the framework imports: the harness's budget runs from process start

import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import AsyncGenerator  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from typing import Any  # noqa: E402

os.environ["OTEL_SDK_DISABLED"] = "true"
for _variable in (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
):
    os.environ.pop(_variable, None)  # ADK sets up OTLP exporters when these are present

import framework_driver  # noqa: E402
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
APP = "matrix"
USER = "user"
NO_USAGE = types.GenerateContentResponseUsageMetadata(
    prompt_token_count=0, candidates_token_count=0, total_token_count=0
)


def to_json(value: Any) -> Any:
    """``value`` as JSON: pydantic models by their JSON dump without ``None`` fields (as ADK dumps a
    ``CallToolResult``), anything else that is not JSON by its repr."""
    return framework_driver.to_json(value, exclude_none=True)


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

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self._turns += 1
        if self._turns == 1:
            call = types.FunctionCall(
                id=framework_driver.CALL_ID, name=self._call["name"], args=dict(self._call.get("arguments") or {})
            )
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)]), usage_metadata=NO_USAGE
            )
            return
        if self._seen is None:
            self._seen = [content.model_copy(deep=True) for content in llm_request.contents]
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=framework_driver.FINAL_TEXT)]),
            usage_metadata=NO_USAGE,
        )


def _mine(content: types.Content) -> list[types.FunctionResponse]:
    """The function responses to the scripted call (id ``call-1``) in ``content``."""
    return [
        part.function_response
        for part in content.parts or []
        if part.function_response is not None and part.function_response.id == framework_driver.CALL_ID
    ]


def model_view(seen: list[types.Content]) -> dict[str, Any]:
    carrying = [content for content in seen if _mine(content)]
    message = carrying[-1] if carrying else seen[-1]
    try:
        serialized = to_json(message)
    except Exception:
        serialized = None
    responses = _mine(message)
    value = to_json(responses[-1].response) if responses else serialized
    return framework_driver.model_view(value, None, None, serialized)


class GoogleAdk:
    def __init__(self, cell: dict[str, Any], obs: observe.Observation) -> None:
        self.params = StdioServerParameters(**observe.stdio_server(cell))
        self.timeout = cell["call_timeout_ms"] / 1000.0

    async def open(self, stack: AsyncExitStack) -> str | None:
        # Lazy: no I/O until the first get_tools(); closing the runner closes the toolset.
        self.toolset = McpToolset(
            connection_params=StdioConnectionParams(server_params=self.params, timeout=self.timeout)
        )
        self.model = ScriptedLlm()
        self.runner = InMemoryRunner(agent=LlmAgent(name="agent", model=self.model, tools=[self.toolset]), app_name=APP)
        stack.push_async_callback(self.runner.close)
        return None

    async def tools(self) -> list[str]:
        return [tool.name for tool in await self.toolset.get_tools()]

    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        self.model.arm(call)
        session = await self.runner.session_service.create_session(app_name=APP, user_id=USER)
        message = types.Content(role="user", parts=[types.Part(text=framework_driver.PROMPT)])
        responses: list[Any] = []
        async for event in self.runner.run_async(user_id=USER, session_id=session.id, new_message=message):
            responses.extend(
                response.response
                for response in event.get_function_responses()
                if response.id == framework_driver.CALL_ID
            )
        if self.model.seen is None:
            raise framework_driver.NoSecondTurn()
        return {"result": to_json(responses[-1]) if responses else None, "model_view": model_view(self.model.seen)}


if __name__ == "__main__":
    sys.exit(framework_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, OPTIONS, GoogleAdk))
