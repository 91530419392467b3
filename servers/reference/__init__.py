"""The reference MCP server: raw JSON-RPC 2.0, standard library only.

Run it as a script directory (``python servers/reference --case ok --schema advertised``); its
modules import each other as top-level modules so that the directory runs unchanged on the host
and inside any container image. The harness imports only :mod:`servers.reference.elide`, which
imports nothing from its siblings.
"""
