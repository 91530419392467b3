"""The anyio step primitives shared by ``mcp_driver.py`` (the MCP Python SDK adapters) and
``framework_driver.py`` (the Python agent-framework adapters), Python >= 3.10.

It imports ``anyio``, which every venv of those adapters has; :mod:`observe` stays stdlib-only.

- :func:`on_anyio_clock` turns an :class:`observe.Budget` deadline (``time.monotonic()``) into
  one on anyio's clock, for a :class:`anyio.CancelScope`.
- :func:`attempt` runs one step in a cancel scope of its own that ends at a deadline: what the
  client raises is returned as a fact (an Error object), the deadline as an ``AdapterTimeout``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import observe


def on_anyio_clock(monotonic_deadline: float) -> float:
    """A ``time.monotonic()`` deadline on anyio's clock."""
    return anyio.current_time() + (monotonic_deadline - time.monotonic())


async def attempt(
    what: str, fn: Callable[[], Awaitable[Any]], deadline: float, outer: anyio.CancelScope
) -> tuple[Any, dict[str, Any] | None]:
    """``(value, None)`` when ``fn()`` returned, ``(None, Error)`` when it raised or ``deadline`` (a
    ``time.monotonic()`` value) passed, then recorded as ``AdapterTimeout`` for ``what``.

    ``outer`` is the driver's scope: its cancellation (the close deadline), ``KeyboardInterrupt``
    and ``SystemExit`` propagate."""
    cancelled = anyio.get_cancelled_exc_class()
    error: dict[str, Any] | None = None
    watch = observe.Stopwatch()
    with anyio.CancelScope(deadline=on_anyio_clock(deadline)) as scope:
        try:
            return await fn(), None
        except BaseException as exc:  # every failure of the client is a fact to record
            if outer.cancel_called or isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            if scope.cancel_called and isinstance(exc, cancelled):
                raise  # our deadline: the scope absorbs it
            error = observe.error_record(exc)
    if scope.cancelled_caught:
        error = observe.deadline_error(what, watch.ms())
    return None, error
