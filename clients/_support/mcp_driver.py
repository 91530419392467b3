"""The anyio driver shared by the MCP Python SDK adapters (Python >= 3.10).

It imports ``anyio``, which every Python SDK adapter's venv has; :mod:`observe` stays stdlib-only.
The step primitives (a step in a cancel scope that ends at a deadline) are :mod:`anyio_steps`'s,
shared with ``framework_driver.py``.

Contract: an adapter holds only what is specific to its SDK version and ends with
``sys.exit(mcp_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, connect))``, where

- ``_STARTED`` is ``time.monotonic()`` taken before the SDK imports (the harness's budget runs
  from process start), ``PACKAGE`` the distribution whose installed version is recorded and
  ``CLOSE_RESERVE_S`` the seconds the SDK's own shutdown needs;
- ``connect(cell, on_message)`` returns a :class:`Connection`, not yet entered, to the cell's server
  with ``on_message`` as the SDK's message handler and ``call_timeout_ms`` as its per-request
  timeout: for ``stdio`` through the SDK's stdio client (:func:`stdio_server`), for ``http-json`` /
  ``http-sse`` through its Streamable HTTP client to ``server.url`` (:func:`server_url`). Entering
  it is the initialize step and returns a :class:`Session`; ``protocol_version`` is then the
  negotiated version. Exiting it is the close.

The driver runs the steps of docs/adapters.md (initialize, list_tools when the variant asks for it,
the calls, the follow-up, close) within the cell's :class:`observe.Budget`: what the client raises
is recorded as a fact, a step past the steps deadline is ended and recorded as ``AdapterTimeout``,
and the :class:`observe.Watchdog` writes the observation and exits if the client never returns.

A call with ``cancel_after_ms`` runs inside an anyio cancel scope whose deadline is that many
milliseconds after the call starts: the structured cancellation an anyio application uses
(``anyio.move_on_after``). Neither SDK has a cancellation API of its own; what each then puts on
the wire is its own business (mcp 2.x sends ``notifications/cancelled`` from its dispatcher, mcp 1.x
sends nothing). When the client raises nothing but the cancellation itself, the call is recorded as
raised with the reserved type ``Cancelled``; the entry carries ``cancelled_after_ms``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol

import anyio
import observe
from anyio_steps import attempt, on_anyio_clock

OPTIONS = {"list_tools": bool}
TRANSPORTS = ("stdio", "http-json", "http-sse")
HTTP_TRANSPORTS = ("http-json", "http-sse")


class Cancelled(Exception):
    """Recorded (type ``Cancelled``) for a call the adapter cancelled when the client raised nothing
    of its own: anyio's cancellation is absorbed by the adapter's scope, the call just ends."""


class MessageHandler(Protocol):
    """The SDK's ``message_handler``: server requests, notifications and transport exceptions."""

    async def __call__(self, message: Any) -> None: ...


class Session(Protocol):
    """What entering a :class:`Connection` returns; results are pydantic models."""

    async def list_tools(self) -> Any: ...

    async def call_tool(self, name: str, arguments: dict[str, Any] | None, /) -> Any: ...


class Connection(Protocol):
    """An SDK's client connection, entered and exited as an async context manager."""

    @property
    def protocol_version(self) -> str | int | None: ...  # mcp 1.x types it ``str | int``

    async def __aenter__(self) -> Session: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None: ...


Connect = Callable[[dict[str, Any], MessageHandler], Connection]


stdio_server = observe.stdio_server
"""The keyword arguments of the SDK's ``StdioServerParameters`` for the cell's server."""


def is_http(cell: dict[str, Any]) -> bool:
    """Whether the cell's transport is one of the Streamable HTTP ones."""
    return cell.get("transport", "stdio") in HTTP_TRANSPORTS


def server_url(cell: dict[str, Any]) -> str:
    """The URL of the (already running) reference server of an ``http-*`` cell."""
    return str(cell["server"]["url"])


async def _call(
    session: Session,
    obs: observe.Observation,
    kind: str,
    call: dict[str, Any],
    budget: observe.Budget,
    outer: anyio.CancelScope,
) -> None:
    name = call["name"]
    watch = obs.begin(kind, name)
    arguments = call.get("arguments")
    after_ms = call.get("cancel_after_ms")
    issued: list[float] = []

    async def invoke() -> Any:
        if after_ms is None:
            return await session.call_tool(name, arguments)
        # The application's cancellation: a cancel scope around the call, cancelled after_ms later.
        scope = anyio.CancelScope(deadline=anyio.current_time() + after_ms / 1000.0)
        try:
            with scope:
                return await session.call_tool(name, arguments)
        finally:
            if scope.cancel_called:
                issued.append(float(after_ms))
        raise Cancelled(
            f"the adapter cancelled the call after {after_ms} ms (anyio cancel scope); "
            "the client raised nothing but the cancellation"
        )

    result, error = await attempt(f"{kind} {name}", invoke, budget.steps, outer)
    duration = watch.ms()
    dumped = None if error else result.model_dump(mode="json", by_alias=True)
    entry = obs.call_entry(name, duration, dumped, error)
    if after_ms is not None:
        entry["cancelled_after_ms"] = issued[0] if issued else None
    obs.end(kind, entry)


async def drive(cell: dict[str, Any], obs: observe.Observation, budget: observe.Budget, connect: Connect) -> None:
    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            obs.transport_error(message)

    connection = connect(cell, on_message)
    cancelled = anyio.get_cancelled_exc_class()
    with anyio.CancelScope(deadline=on_anyio_clock(budget.close)) as outer:
        watch = obs.begin("initialize")
        try:
            session = await connection.__aenter__()
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)) or (outer.cancel_called and isinstance(exc, cancelled)):
                raise  # the outer deadline: the scope absorbs it and the snapshot records AdapterTimeout
            obs.end("initialize", observe.step(watch, exc, protocol_version=None))
            return
        obs.end("initialize", observe.step(watch, protocol_version=connection.protocol_version))

        pending: BaseException | None = None
        try:
            if cell["options"].get("list_tools", False):
                watch = obs.begin("list_tools")
                listing, error = await attempt("list_tools", session.list_tools, budget.steps, outer)
                tools = None if error else [tool.name for tool in listing.tools]
                obs.end("list_tools", observe.step(watch, error, tools=tools))
            for call in cell["calls"]:
                await _call(session, obs, "call", call, budget, outer)
            await _call(session, obs, "followup", cell["followup"], budget, outer)
        except BaseException as exc:  # the outer deadline (or a bug): record the unfinished steps, then close
            pending = exc
            obs.data.update(obs.snapshot(None if isinstance(exc, cancelled) else exc))
        watch = obs.begin("close")
        try:
            if pending is None:
                await connection.__aexit__(None, None, None)
            else:
                await connection.__aexit__(type(pending), pending, pending.__traceback__)
        except BaseException as exc:
            if exc is pending or (outer.cancel_called and isinstance(exc, cancelled)):
                raise
            obs.end("close", observe.step(watch, exc))
        else:
            obs.end("close", observe.step(watch))
        if pending is not None:
            raise pending


def main(argv: list[str], started: float, package: str, close_reserve_s: float, connect: Connect) -> int:
    """Run one cell (``argv``: the adapter, the cell file, the observation file); always 0 once written."""
    cell, out = observe.cell_from_argv(argv, OPTIONS)
    transport = cell.get("transport", "stdio")
    if transport not in TRANSPORTS:
        observe.fail(f"transport {transport!r} is not supported by this adapter ({', '.join(TRANSPORTS)})")
    if transport in HTTP_TRANSPORTS and not isinstance(cell["server"].get("url"), str):
        observe.fail(f"transport {transport!r} needs server.url")
    observe.check_cancel_after(cell["calls"])
    obs = observe.Observation(cell, package)
    budget = observe.Budget.of(cell, started, close_reserve_s)
    observe.run_guarded(out, obs, budget.final, lambda: anyio.run(drive, cell, obs, budget, connect))
    return 0
