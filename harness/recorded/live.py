"""Live mode: a recorded case's cells run against the user's own server instead of a replay.

``run --case-file F --server-cmd CMD`` (with ``--env``/``--cwd``) gives each stdio cell of F's case
a recording pipe (``servers/reference/live_stdio.py``) between the client and a fresh process of the
user's server; ``run --case-file F --server-url URL`` gives each cell a recording reverse proxy on
loopback (``servers/reference/live_http.py``) in front of the user's running Streamable HTTP
server. Either way the client talks to the real server, the proxy journals every frame as the
reference server does, and the cell is classified the same way. What a replay cannot show (the
server's timing, framing, HTTP behaviour and stderr) is then in the evidence. A live server lists
its tools as it does, so a live case runs in the schema mode ``advertised`` (``none`` for a tool
without an outputSchema), on stdio for a command, and over HTTP on the transport whose framing the
server answers with (``http-json`` or ``http-sse``: :func:`server_of` opens one session to find
out, which also checks that the URL serves MCP); its cell keys are the replay's, so ``python -m
harness diff`` compares the two runs.

The server's command, directory and environment (or its URL) go to the cell directory as
``live.json`` for the proxy, and are removed when the cell ends; the run's metadata keeps the
command or URL and the names of the environment variables only.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.layout import Layout
from harness.matrix import catalog
from harness.matrix.cells import LiveServer

from . import record
from .record import parse_command, parse_env

OPEN_TIMEOUT_S = 15.0
"""How long the check of ``--server-url`` waits for the server's answer to its opening request."""
FRAMINGS: dict[str, catalog.Transport] = {
    kind.content_type: kind.name for kind in catalog.TRANSPORT_KINDS.values() if kind.content_type
}
"""The transport of a live HTTP server's cells, by the ``Content-Type`` of its opening answer."""


def server_of(
    layout: Layout,
    server_cmd: str | None,
    server_url: str | None,
    env: list[str],
    cwd: Path | None,
    protocols: Iterable[str],
) -> LiveServer | None:
    """``--server-cmd`` (with ``--env`` and ``--cwd``; the server starts in ``cwd``, else in the
    checkout, as for ``record``) or ``--server-url`` of ``run``, checked; None without either.
    ``protocols``: the revisions of the case files to run, under which a URL must open a session."""
    if server_cmd is not None and server_url is not None:
        raise UsageError("give the live server as --server-cmd or as --server-url, not both")
    if server_url is not None:
        if env or cwd is not None:
            raise UsageError("--env and --cwd apply to --server-cmd only")
        return _http_server(layout, server_url, sorted(set(protocols)))
    if server_cmd is None:
        if env or cwd is not None:
            raise UsageError("--env and --cwd apply to --server-cmd (live mode) only")
        return None
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    directory = (cwd or layout.root).resolve()
    command = parse_command(server_cmd)
    found = (directory / command[0]).is_file() if "/" in command[0] else shutil.which(command[0]) is not None
    if not found:
        raise UsageError(f"--server-cmd: cannot find {command[0]!r} (looked from {directory})")
    return LiveServer(tuple(command), str(directory), tuple(sorted(parse_env(env).items())))


def _http_server(layout: Layout, url: str, protocols: list[str]) -> LiveServer:
    """The server at ``url``, once it has opened a session under each of ``protocols`` (closed
    again at once), with the transport of the framing it answered with."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--server-url {url!r}: expected an http:// or https:// URL")
    if not protocols:
        raise UsageError("--server-url (live mode) needs --case-file: the recorded tool and arguments to call")
    transports: dict[str, catalog.Transport] = {}
    for protocol in protocols:
        found = record.open_session(layout, url, protocol, OPEN_TIMEOUT_S)
        if found.get("stage") != "done":
            raise UsageError(f"--server-url {url}: no session under {protocol}: {found.get('error')}")
        framing = str(found.get("framing") or "").split(";")[0].strip().lower()
        if framing not in FRAMINGS:
            raise UsageError(
                f"--server-url {url}: answered its opening request as {found.get('framing')!r}, "
                f"not {' or '.join(FRAMINGS)}"
            )
        transports[protocol] = FRAMINGS[framing]
    if len(set(transports.values())) > 1:
        shown = ", ".join(f"{transport} under {protocol}" for protocol, transport in transports.items())
        raise UsageError(f"--server-url {url}: frames its answers differently by revision ({shown}); run each apart")
    return LiveServer(url=url, transport=next(iter(transports.values())))


def from_settings(described: dict[str, Any]) -> LiveServer:
    """The live server of a run being resumed (only one whose server needed no environment)."""
    if described.get("env_keys"):
        names = ", ".join(described["env_keys"])
        raise UsageError(f"a live run whose server took --env ({names}) cannot be resumed: the values are not kept")
    return shown(described)


def live_case(case: catalog.Case, server: LiveServer) -> catalog.Case:
    """The live form of a recorded case: the user's server, one schema mode, one transport (its
    cells' source is a :class:`~harness.matrix.cells.Live`)."""
    proxy = "recording pipe" if server.url is None else "recording reverse proxy"
    return dataclasses.replace(
        case,
        clause=f"Live: the user's own server answered, through the harness's {proxy} (bytes unchanged).",
        sends=f"whatever `{server.named}` answers",
        schema_modes=case.schema_modes[:1],
        transports=(server.transport,),
    )


def shown(described: dict[str, Any]) -> LiveServer:
    """The live server a finished run names in its metadata (for its report: no environment)."""
    return LiveServer(
        tuple(described.get("command") or ()),
        described.get("cwd"),
        url=described.get("url"),
        transport=described.get("transport") or "stdio",
    )
