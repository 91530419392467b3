"""Adapter for the official MCP Python SDK 1.x (``stdio_client`` / ``streamable_http_client`` +
``ClientSession``).

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md).

The client is used the way a 1.x application uses it: ``async with stdio_client(params) as (read,
write)`` or, for the ``http-*`` transports, ``async with streamable_http_client(url) as (read, write,
get_session_id)`` (``mcp.client.streamable_http``; the older ``streamablehttp_client`` is a
deprecated wrapper around it in 1.30), ``async with ClientSession(read, write, ...) as session``,
``await session.initialize()``, ``session.list_tools()`` when the variant asks for it,
``session.call_tool(name, arguments)``; a call with ``cancel_after_ms`` is cancelled by an anyio
cancel scope (``_support/mcp_driver.py``; 1.x has no cancellation API and sends no
``notifications/cancelled`` for it).
``read_timeout_seconds`` (the session's per-request timeout) is ``call_timeout_ms``. Exceptions
the session delivers to ``message_handler`` are the transport errors. Facts only: what each call
returned or raised. The steps, deadlines and the observation are ``_support/mcp_driver.py``'s.
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the SDK imports: the harness's budget runs from process start

import sys  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from datetime import timedelta  # noqa: E402
from types import TracebackType  # noqa: E402
from typing import Any  # noqa: E402

import mcp_driver  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

try:  # the name in later 1.x releases; earlier ones (a version sweep runs them) call it streamablehttp_client
    from mcp.client.streamable_http import streamable_http_client
except ImportError:
    from mcp.client.streamable_http import streamablehttp_client as streamable_http_client

PACKAGE = "mcp"
# stdio_client's own shutdown: 2 s grace after stdin closes, then SIGTERM and 2 s before SIGKILL.
CLOSE_RESERVE_S = 6.0


class Connection:
    """The nesting ``async with stdio_client(...)`` (or ``streamable_http_client(...)``) /
    ``async with ClientSession(...)`` + ``initialize()``, entered and exited as a unit, so the driver
    can tell connect, calls and close apart."""

    def __init__(self, params: StdioServerParameters | str, **session_options: Any) -> None:
        self._params = params
        self._session_options = session_options
        self._stack = AsyncExitStack()
        self.protocol_version: str | int | None = None

    async def __aenter__(self) -> ClientSession:
        try:
            if isinstance(self._params, str):
                read, write, _session_id = await self._stack.enter_async_context(streamable_http_client(self._params))
            else:
                read, write = await self._stack.enter_async_context(stdio_client(self._params))
            session = await self._stack.enter_async_context(ClientSession(read, write, **self._session_options))
            result = await session.initialize()
        except BaseException as exc:
            # What propagates out of the `async with` blocks is what the application sees.
            await self._stack.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self.protocol_version = result.protocolVersion
        return session

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._stack.__aexit__(exc_type, exc, tb)


def connect(cell: dict[str, Any], on_message: mcp_driver.MessageHandler) -> Connection:
    """The connection, not yet entered: entering it spawns the server (stdio) or opens the HTTP
    client, and initializes the session."""
    return Connection(
        mcp_driver.server_url(cell)
        if mcp_driver.is_http(cell)
        else StdioServerParameters(**mcp_driver.stdio_server(cell)),
        read_timeout_seconds=timedelta(milliseconds=cell["call_timeout_ms"]),
        message_handler=on_message,
    )


if __name__ == "__main__":
    sys.exit(mcp_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, connect))
