"""Adapter for the official MCP Python SDK 2.x (``mcp.Client`` over stdio or Streamable HTTP).

Usage: ``python adapter.py <cell.json> <observation.json>`` (see docs/adapters.md).

The client is used the way an application uses it: ``Client(StdioServerParameters(...))`` (spawns
the server through ``mcp.client.stdio.stdio_client``) or, for the ``http-*`` transports,
``Client(url)`` (given a URL string, ``Client`` uses
``mcp.client.streamable_http.streamable_http_client``), as an async context manager (probes
``server/discover`` and falls back to ``initialize``), ``client.list_tools()`` when the variant
asks for it, ``client.call_tool(name, arguments)``; a call with ``cancel_after_ms`` is cancelled by
an anyio cancel scope (``_support/mcp_driver.py``), on which the SDK's dispatcher sends
``notifications/cancelled`` itself. ``read_timeout_seconds`` (the SDK's per-request timeout) is
``call_timeout_ms``. Exceptions the SDK delivers to ``message_handler`` are the transport errors.
Protocol revisions (the cell's ``protocol``): the client keeps its default ``mode="auto"`` under both,
the SDK's dual-era setting, which reaches a 2025-11-25 server through its ``initialize`` fallback
and a 2026-07-28 server through ``server/discover``; which revision it spoke is read from the
server's journal. Facts only: what each call returned or raised. The steps, deadlines and the observation are
``_support/mcp_driver.py``'s.
"""

from __future__ import annotations

import time

_STARTED = time.monotonic()  # before the SDK imports: the harness's budget runs from process start

import sys  # noqa: E402
from typing import Any  # noqa: E402

import mcp_driver  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

PACKAGE = "mcp"
# stdio_client's own shutdown: 0.5 s flush + 2 s grace after stdin closes + 2 s SIGTERM + 2 s reap.
CLOSE_RESERVE_S = 7.0


def connect(cell: dict[str, Any], on_message: mcp_driver.MessageHandler) -> Client:
    """The client, not yet entered: entering it spawns the server (stdio) or opens the HTTP client,
    and negotiates the protocol."""
    server = (
        mcp_driver.server_url(cell)
        if mcp_driver.is_http(cell)
        else StdioServerParameters(**mcp_driver.stdio_server(cell))
    )
    return Client(
        server,
        read_timeout_seconds=cell["call_timeout_ms"] / 1000.0,
        message_handler=on_message,
    )


if __name__ == "__main__":
    sys.exit(mcp_driver.main(sys.argv, _STARTED, PACKAGE, CLOSE_RESERVE_S, connect))
