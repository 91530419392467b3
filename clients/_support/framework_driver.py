"""The anyio driver shared by the Python agent-framework adapters (pydantic-ai, openai-agents,
langchain-py, fastmcp, llama-index, smolagents, strands, google-adk), Python >= 3.10.

It imports ``anyio``, which every one of those venvs has (the frameworks run on the MCP Python SDK);
:mod:`observe` stays stdlib-only. The step primitives are :mod:`anyio_steps`'s, shared with
``mcp_driver.py``.

Contract (docs/adapters.md, "Framework adapters: the model view"): an adapter holds only what is
specific to its framework, a :class:`Framework`, and ends with
``sys.exit(framework_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, OPTIONS, make))``
(``PACKAGE``: the distribution whose installed version is recorded; ``CLOSE_RESERVE_S``: the
seconds the framework's own shutdown needs). The framework object ``make(cell, obs)`` returns:

- ``open(stack)``: connects, entering the framework's MCP server / toolset / client context on
  ``stack`` (an :class:`contextlib.AsyncExitStack`), which spawns the server; returns the
  negotiated protocol version, or ``None`` when the framework does not expose it. Closing the
  stack is the close step. A framework that connects lazily (google-adk) builds its objects here
  and connects in ``tools()``; one whose close is a call rather than a context pushes it
  (``stack.push_async_callback``);
- ``tools()``: the framework loading its tool set from the server, the tool names it exposed (when
  it raises, the calls are still made: what the agent run then does is the fact recorded);
- ``run(call)``: one run of the framework's own agent loop for one call, with the framework's
  scripted test model; returns ``{"result": ..., "model_view": {...}, ...}`` (extra keys are kept
  in the call's entry, in their order), or raises what the agent run raised (:class:`NoSecondTurn`
  when the run ended without the model's second turn).

A framework whose API blocks (it runs its MCP session on a thread of its own: smolagents, strands)
calls it through :func:`in_thread`, so that the deadlines below still hold.

The steps (initialize, list_tools, the calls, the follow-up, close) run within the cell's
:class:`observe.Budget`: what the framework raises is recorded as a fact, a step past the steps
deadline is ended and recorded as ``AdapterTimeout`` (initialize only has the close deadline: it
enters the stdio client's task groups, whose anyio cancel scopes outlive the step, so it cannot
run in a step scope of its own, as in ``mcp_driver.py``), and the :class:`observe.Watchdog`
writes the observation, kills the spawned server and exits if the framework never returns. A
server still alive after the close (a close the deadline cut short) is killed before exiting.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, Protocol, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import observe
from anyio_steps import attempt, on_anyio_clock

CALL_ID = "call-1"
"""The fixed tool-call id every scripted model uses for its tool request."""
FINAL_TEXT = "done"
"""The scripted model's final answer in turn two."""
PROMPT = "Call the tool."
"""The user prompt of every agent run (the scripted model ignores it)."""


class Framework(Protocol):
    async def open(self, stack: AsyncExitStack) -> str | None: ...

    async def tools(self) -> list[str]: ...

    async def run(self, call: dict[str, Any]) -> dict[str, Any]: ...


MakeFramework = Callable[[dict[str, Any], observe.Observation], Framework]
T = TypeVar("T")


jsonable = observe.jsonable
"""``value`` if it serializes as JSON, else its ``repr`` (the contract's rule for ``result``)."""


class NoSecondTurn(Exception):
    """Raised by ``run(call)`` when the agent run ended without giving the scripted model its second
    turn (no tool-result message to capture); recorded as the call's error, type ``NoSecondTurn``."""

    def __init__(self) -> None:
        super().__init__("the agent run ended without giving the model a second turn")


def to_json(value: Any, default: Callable[[Any], Any] = repr, **dump_options: Any) -> Any:
    """``value`` as JSON (a deep copy): pydantic models by their
    ``model_dump(mode="json", by_alias=True, **dump_options)``, anything else that is not JSON (or
    a model whose JSON dump fails) by ``default(obj)``, whose result is converted in turn."""

    def fallback(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        if callable(dump):
            try:
                return dump(mode="json", by_alias=True, **dump_options)
            except Exception:  # not JSON-dumpable: the adapter's default
                return default(obj)
        return default(obj)

    return json.loads(json.dumps(value, ensure_ascii=False, default=fallback))


async def in_thread(fn: Callable[[], T]) -> T:
    """``fn()`` run on a daemon thread of its own and awaited, for a framework whose API blocks.

    A cancelled wait (a deadline) abandons the thread: being a daemon, it keeps neither the event
    loop nor the process from ending (unlike anyio's worker threads). Needs anyio >= 4.11."""
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # whatever the framework raised is re-raised in the driver
            box["error"] = exc
        with contextlib.suppress(Exception):  # the event loop has ended: the driver went on without us
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=target, name=getattr(fn, "__qualname__", "framework"), daemon=True).start()
    await done.wait()
    if "error" in box:
        raise box.pop("error")
    return box["value"]


normalize_ids = observe.normalize_ids
"""``value`` with every whole string that is a random id replaced by a fixed, numbered one."""


def model_view(value: Any, error_flag: bool | None, error_flag_field: str | None, message: Any) -> dict[str, Any]:
    """The contract's ``model_view`` of a returned call."""
    return {"value": value, "error_flag": error_flag, "error_flag_field": error_flag_field, "message": message}


async def _call(
    fw: Framework,
    obs: observe.Observation,
    kind: str,
    call: dict[str, Any],
    budget: observe.Budget,
    outer: anyio.CancelScope,
) -> None:
    name = str(call["name"])
    watch = obs.begin(kind, name)
    outcome, error = await attempt(f"{kind} {name}", lambda: fw.run(call), budget.steps, outer)
    entry = obs.call_entry(name, watch.ms(), None if error else outcome.get("result"), error)
    if error is None:
        entry.update({key: value for key, value in outcome.items() if key != "result"})
    obs.end(kind, entry)


async def drive(cell: dict[str, Any], obs: observe.Observation, budget: observe.Budget, fw: Framework) -> None:
    cancelled = anyio.get_cancelled_exc_class()
    stack = AsyncExitStack()
    with anyio.CancelScope(deadline=on_anyio_clock(budget.close)) as outer:
        # Not in a step scope of its own: opening enters the stdio client's task groups, whose cancel
        # scopes must stay open after the step (anyio scopes nest); the outer deadline bounds it.
        watch = obs.begin("initialize")
        try:
            version = await fw.open(stack)
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)) or (outer.cancel_called and isinstance(exc, cancelled)):
                raise  # the outer deadline: the scope absorbs it and the snapshot records AdapterTimeout
            obs.end("initialize", observe.step(watch, exc, protocol_version=None))
            try:  # whatever the framework entered before it failed is closed, unrecorded (close is null)
                await stack.aclose()
            except Exception:  # the initialize failure is the fact recorded
                traceback.print_exc()
            return
        obs.end("initialize", observe.step(watch, protocol_version=version))

        pending: BaseException | None = None
        try:
            watch = obs.begin("list_tools")
            names, error = await attempt("list_tools", fw.tools, budget.steps, outer)
            obs.end("list_tools", observe.step(watch, error, tools=names))
            for call in cell["calls"]:
                await _call(fw, obs, "call", call, budget, outer)
            await _call(fw, obs, "followup", cell["followup"], budget, outer)
        except BaseException as exc:  # the outer deadline (or a bug): record the unfinished steps, then close
            pending = exc
            obs.data.update(obs.snapshot(None if isinstance(exc, cancelled) else exc))
        watch = obs.begin("close")
        try:
            await stack.aclose()
        except BaseException as exc:
            if exc is pending or (outer.cancel_called and isinstance(exc, cancelled)):
                raise
            obs.end("close", observe.step(watch, exc))
        else:
            obs.end("close", observe.step(watch))
        if pending is not None:
            raise pending


def main(
    argv: list[str],
    started: float,
    package: str,
    close_reserve_s: float,
    options: Mapping[str, type],
    make: MakeFramework,
) -> int:
    """Run one cell (``argv``: the adapter, the cell file, the observation file); always 0 once written.

    ``package``: the distribution whose version is recorded; ``close_reserve_s``: the seconds the
    framework's shutdown needs; ``options``: the options the adapter understands (any other stops
    it with exit status 2); ``make(cell, obs)``: the :class:`Framework` for the cell."""
    cell, out = observe.cell_from_argv(argv, options)
    transport = cell.get("transport", "stdio")
    if transport != "stdio":
        observe.fail(f"transport {transport!r} is not supported by this adapter (stdio)")
    for call in [*cell["calls"], cell["followup"]]:
        if "cancel_after_ms" in call:
            observe.fail("cancel_after_ms is not supported by the framework adapters (schema family only)")
    obs = observe.Observation(cell, package)
    fw = make(cell, obs)
    budget = observe.Budget.of(cell, started, close_reserve_s)
    observe.run_guarded(out, obs, budget.final, lambda: anyio.run(drive, cell, obs, budget, fw))
    killed = observe.kill_children()  # a server left behind by a close the deadline cut short
    if killed:
        print(f"adapter: killed child process(es) left after close {killed}", file=sys.stderr, flush=True)
    return 0


def stdio_command(cell: dict[str, Any]) -> tuple[str, list[str], dict[str, str] | None]:
    """The cell's server as ``(command, args, env)``; ``env`` is ``None`` when the cell adds nothing
    (the stdio client then builds its default environment). :func:`observe.stdio_server` gives the
    same as ``StdioServerParameters`` keyword arguments."""
    server = observe.stdio_server(cell)
    return str(server["command"]), server["args"], server["env"]
