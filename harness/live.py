"""Live mode: a recorded case's cells run against the user's own server instead of a replay.

``run --case-file F --server-cmd CMD`` (with ``--env``/``--cwd``) gives each stdio cell of F's case
a recording pipe (``servers/reference/live_stdio.py``) between the client and a fresh process of the
user's server: the client talks to the real server, the pipe journals every frame as the reference
server does, and the cell is classified the same way. What a replay cannot show (the server's
timing, framing and stderr) is then in the evidence. A live server lists its tools as it does, so
a live case runs in the schema mode ``advertised`` (``none`` for a tool without an outputSchema) and
on stdio only; its cell keys are the replay's, so ``python -m harness diff`` compares the two runs.

The server's command, directory and environment go to the cell directory as ``live.json`` for the
pipe, and are removed when the cell ends; the run's metadata keeps the command and the names of
the environment variables only.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import catalog
from .errors import UsageError
from .record import parse_command, parse_env


@dataclass(frozen=True)
class LiveServer:
    """The user's stdio server: its command line, working directory and extra environment."""

    command: tuple[str, ...]
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()

    def file(self) -> str:
        """The ``live.json`` the recording pipe reads."""
        return json.dumps({"command": list(self.command), "cwd": self.cwd, "env": dict(self.env)})

    def described(self) -> dict[str, Any]:
        """What the run's metadata keeps (environment names, never values)."""
        return {"command": list(self.command), "cwd": self.cwd, "env_keys": sorted(name for name, _ in self.env)}


def server_of(server_cmd: str | None, env: list[str], cwd: Path | None, root: Path) -> LiveServer | None:
    """``--server-cmd``, ``--env`` and ``--cwd`` of ``run`` (the server starts in ``cwd``, else in
    the checkout ``root``, as for ``record``); None without ``--server-cmd``."""
    if server_cmd is None:
        if env or cwd is not None:
            raise UsageError("--env and --cwd apply to --server-cmd (live mode) only")
        return None
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    directory = (cwd or root).resolve()
    command = parse_command(server_cmd)
    found = (directory / command[0]).is_file() if "/" in command[0] else shutil.which(command[0]) is not None
    if not found:
        raise UsageError(f"--server-cmd: cannot find {command[0]!r} (looked from {directory})")
    return LiveServer(tuple(command), str(directory), tuple(sorted(parse_env(env).items())))


def from_settings(described: dict[str, Any]) -> LiveServer:
    """The live server of a run being resumed (only one whose server needed no environment)."""
    if described.get("env_keys"):
        names = ", ".join(described["env_keys"])
        raise UsageError(f"a live run whose server took --env ({names}) cannot be resumed: the values are not kept")
    return shown(described)


def live_case(case: catalog.Case, server: LiveServer) -> catalog.Case:
    """The live form of a recorded case: the user's server, one schema mode, stdio."""
    return dataclasses.replace(
        case,
        clause="Live: the user's own server answered, through the harness's recording pipe (bytes unchanged).",
        sends=f"whatever `{shlex.join(server.command)}` answers",
        schema_modes=case.schema_modes[:1],
        transports=("stdio",),
        replay=None,
        live=server,
    )


def shown(described: dict[str, Any]) -> LiveServer:
    """The live server a finished run names in its metadata (for its report: no environment)."""
    return LiveServer(tuple(described["command"]), described.get("cwd"))
