"""``python -m harness record``: one tool of a user's MCP server, recorded once into a case file.

The harness runs ``clients/_support/record_session.py`` (raw JSON-RPC, the ``raw-jsonrpc``
column's wire: nothing validated or altered) as a bounded process group against the server, a
stdio command or a Streamable HTTP URL. It opens a session, lists every tool (every page), calls
the one named with the given arguments, and the harness writes what came back as a case file
(:data:`harness.recorded.case_files.VERSION`; ``run --case-file`` replays it)::

    {"case_file": 1, "name": ..., "recorded_at": ..., "recorded_by": ...,
     "server": {"name", "version", "transport", "command" | "url", "env_keys"},
     "protocol": <the revision the session ran under>,
     "tool": <its tools/list entry, inputSchema and outputSchema exactly as sent>,
     "arguments": {...}, "result": <the tools/call result exactly as sent>, "frame_bytes": N}

Environment values are never written (only their names: they may hold credentials). Every
failure is one line naming what went wrong (a command that does not start or exits, non-JSON on
its stdout, an unreachable URL, a tool that is not listed, arguments the tool rejects, a server that
never answers); nothing is written then. The case file is written whole or not at all.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import UsageError, read_text
from harness.layout import Layout, harness_commit
from harness.matrix.catalog import LEGACY_PROTOCOL
from harness.system import process

from . import case_files

SESSION_SCRIPT = "record_session.py"
GRACE_S = 15.0
"""Beyond the per-request timeouts (open, every tools/list page, the call), what the whole session
may take: starting the server, closing it."""
FAILED_STAGE = {
    "open": "the server did not open a session: ",
    "list": "tools/list failed: ",
    "lookup": "",
    "call": "the tool call failed: ",
}


@dataclass(frozen=True)
class Request:
    """What to record: the server (``command`` or ``url``), the tool and its arguments, where to."""

    command: list[str] | None
    url: str | None
    env: dict[str, str]
    cwd: Path | None
    tool: str
    arguments: dict[str, Any]
    protocol: str
    name: str
    out: Path
    timeout_s: float

    @property
    def server(self) -> str:
        """The server as the user named it, for messages."""
        return shlex.join(self.command) if self.command else str(self.url)


def parse_command(text: str) -> list[str]:
    """``--server-cmd``: a shell-like command line, split (no shell runs it)."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"--server-cmd {text!r}: {exc}") from None
    if not words:
        raise UsageError("--server-cmd: empty command")
    return words


def parse_env(pairs: list[str]) -> dict[str, str]:
    """``--env NAME=VALUE`` (repeatable)."""
    env: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--env {pair!r}: expected NAME=VALUE")
        env[name] = value
    return env


def parse_arguments(text: str) -> dict[str, Any]:
    """``--arguments``: a JSON object, or ``@PATH`` of a file holding one."""
    where = "--arguments"
    if text.startswith("@"):
        path = Path(text[1:])
        where = f"--arguments {text}"
        text = read_text(path, "--arguments")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{where}: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{where}: expected a JSON object (the tool's arguments), got {type(value).__name__}")
    return value


def check_name(name: str) -> str:
    if not case_files.NAME.match(name):
        raise UsageError(f"--name {name!r}: letters, digits, '.', '_' and '-' only (it names the case file)")
    return name


def request_of(
    layout: Layout,
    *,
    server_cmd: str | None,
    server_url: str | None,
    env: list[str],
    cwd: Path | None,
    tool: str,
    arguments: str,
    protocol: str = LEGACY_PROTOCOL,
    name: str | None = None,
    out: Path | None = None,
    timeout_s: float = 30.0,
) -> Request:
    """A validated :class:`Request` from the command line's values (``protocol`` and ``timeout_s``
    come checked by the parser: one of :data:`harness.matrix.catalog.PROTOCOLS`, above 0)."""
    if (server_cmd is None) == (server_url is None):
        raise UsageError("give the server as --server-cmd COMMAND or as --server-url URL (one of them)")
    if server_url is not None and not server_url.startswith(("http://", "https://")):
        raise UsageError(f"--server-url {server_url!r}: expected an http:// or https:// URL")
    if server_url is not None and (env or cwd is not None):
        raise UsageError("--env and --cwd apply to --server-cmd only")
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    case_name = check_name(name or re.sub(r"[^A-Za-z0-9._-]+", "-", tool).strip("-") or "tool")
    return Request(
        command=parse_command(server_cmd) if server_cmd is not None else None,
        url=server_url,
        env=parse_env(env),
        cwd=cwd.resolve() if cwd is not None else None,
        tool=tool,
        arguments=parse_arguments(arguments),
        protocol=protocol,
        name=case_name,
        out=out if out is not None else layout.root / "case-files" / f"{case_name}.json",
        timeout_s=timeout_s,
    )


def _session_input(request: Request) -> dict[str, Any]:
    server: dict[str, Any]
    if request.command is not None:
        command, *args = request.command
        server = {"command": command, "args": args, "env": request.env, "url": None}
        if request.cwd is not None:
            server["cwd"] = str(request.cwd)
    else:
        server = {"command": None, "args": None, "env": {}, "url": request.url}
    return {
        "server": server,
        "protocol": request.protocol,
        "tool": request.tool,
        "arguments": request.arguments,
        "timeout_s": request.timeout_s,
    }


def run_session(layout: Layout, request: Request) -> dict[str, Any]:
    """Run the raw session against the server, bounded; what it found (``record_session.py``)."""
    # open, tools/list (one page at least), call: each may take the per-request timeout
    budget = 3 * request.timeout_s + GRACE_S
    return _session(layout, _session_input(request), request.cwd or layout.root, budget, f"record: {request.server}")


def open_session(layout: Layout, url: str, protocol: str, timeout_s: float) -> dict[str, Any]:
    """Open a session with the Streamable HTTP server at ``url`` under ``protocol`` and close it
    again (live mode's check of ``--server-url``); what the session found, with its ``framing``."""
    server: dict[str, Any] = {"command": None, "args": None, "env": {}, "url": url}
    session_input = {"server": server, "protocol": protocol, "tool": None, "arguments": {}, "timeout_s": timeout_s}
    return _session(layout, session_input, layout.root, timeout_s + GRACE_S, f"--server-url {url}")


def _session(layout: Layout, session_input: dict[str, Any], cwd: Path, budget: float, label: str) -> dict[str, Any]:
    """Run ``record_session.py`` on ``session_input`` as a bounded process group; ``label`` starts
    every error line."""
    with tempfile.TemporaryDirectory(prefix="mcpcm-record-") as scratch:
        directory = Path(scratch)
        (directory / "request.json").write_text(json.dumps(session_input), encoding="utf-8")
        out = directory / "session.json"
        finished = process.run_bounded(
            [sys.executable, str(layout.support / SESSION_SCRIPT), str(directory / "request.json"), str(out)],
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(layout.support)},
            timeout_s=budget,
            stdout=directory / "stdout.txt",
            stderr=directory / "stderr.txt",
            marker=str(directory),
        )
        if finished.timed_out:
            raise UsageError(f"{label}: did not finish the session within {budget:g} s; stopped it")
        try:
            found: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            stderr = (directory / "stderr.txt").read_text(errors="replace").strip().splitlines()
            last = stderr[-1] if stderr else f"exit code {finished.exit_code}"
            raise UsageError(f"{label}: the session failed: {last}") from None
    return found


def case_file(root: Path, request: Request, found: dict[str, Any]) -> dict[str, Any]:
    """The case file of a successful session (``root``: the checkout, whose commit recorded it)."""
    stated = found.get("server_info")
    info: dict[str, Any] = stated if isinstance(stated, dict) else {}
    server: dict[str, Any] = {
        "name": info.get("name"),
        "version": info.get("version"),
        "transport": "stdio" if request.command else "streamable-http",
    }
    if request.command:
        server["command"] = request.command
        server["env_keys"] = sorted(request.env)
    else:
        server["url"] = request.url
    return {
        "case_file": case_files.VERSION,
        "name": request.name,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "recorded_by": f"mcp-client-matrix {__version__} ({harness_commit(root)})",
        "server": server,
        "protocol": found.get("protocol"),
        "tool": found["tool"],
        "arguments": request.arguments,
        "result": found["result"],
        "frame_bytes": found.get("frame_bytes"),
    }


def write_case_file(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, ensure_ascii=False)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def first_text(result: dict[str, Any], limit: int = 200) -> str:
    """The first text block of a result, cut at ``limit`` characters (for a one-line message)."""
    for block in result.get("content") or []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            text = " ".join(block["text"].split())
            return text if len(text) <= limit else text[: limit - 1] + "…"
    return ""


def record(layout: Layout, request: Request) -> tuple[Path, dict[str, Any]]:
    """Record the tool into its case file; the path and the case file (:class:`UsageError` naming
    what went wrong otherwise, with nothing written)."""
    found = run_session(layout, request)
    if found.get("stage") != "done":
        what = FAILED_STAGE.get(str(found.get("stage")), "the session failed: ")
        raise UsageError(f"record: {request.server}: {what}{found.get('error')}")
    if not isinstance(found.get("result"), dict):
        raise UsageError(f"record: {request.server}: tools/call answered with a result that is not an object")
    data = case_file(layout.root, request, found)
    write_case_file(request.out, data)
    return request.out, data
