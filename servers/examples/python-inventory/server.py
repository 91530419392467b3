"""An example MCP server written with the official Python SDK (``mcp`` 2.x, ``MCPServer``): not the
reference server, a server as its users write one, for ``python -m harness record``.

One tool, ``stock_level(sku)``, whose return type gives it an outputSchema; the SDK sends the
result as structuredContent and as its JSON text. ``python server.py`` serves stdio;
``python server.py --http PORT`` serves Streamable HTTP on 127.0.0.1:PORT/mcp.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel


class Stock(BaseModel):
    """Units of one SKU on hand in one warehouse."""

    sku: str
    on_hand: int
    warehouse: str


STOCK = {
    "A-100": Stock(sku="A-100", on_hand=42, warehouse="Basel-2"),
    "B-200": Stock(sku="B-200", on_hand=0, warehouse="Lyon-1"),
}

server = MCPServer("inventory-example")


@server.tool()
def stock_level(sku: str) -> Stock:
    """Units on hand of one SKU."""
    if sku not in STOCK:
        raise ValueError(f"unknown SKU {sku!r}")
    return STOCK[sku]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
