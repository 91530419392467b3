"""Case files: one tool's result recorded from a user's server, read back as cases of the matrix.

``python -m harness record`` writes them (:mod:`harness.recorded.record`); ``run --case-file PATH`` reads
them here. A case file (:data:`VERSION`) holds the tool's ``tools/list`` entry and the
``tools/call`` result exactly as the server sent them, the arguments of the call and the revision
the session ran under. :func:`load` checks one and makes it a :class:`~harness.matrix.catalog.Case`:

- id ``rec-<name>``, family ``schema`` (every column that runs the schema family runs it), every
  transport;
- schema modes ``advertised`` (the tool listed as the server listed it) and ``hidden`` (its
  ``outputSchema`` left out) when the tool has an outputSchema, else ``none``;
- the protocol revision of the axis that the recorded one belongs to (a handshake-era version:
  2025-11-25; 2026-07-28): the result is replayed as it was sent, so under that revision only;
- the adapter calls the recorded tool with the recorded arguments, and the reference server
  (``--case-file``, ``servers/reference/replay.py``) answers with the recorded result.

Every problem is one :class:`~harness.errors.UsageError` line naming the file and the field.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UsageError, read_text
from harness.matrix import catalog, cells
from harness.matrix.cells import BUDGET_S, FOLLOWUP_CALL
from harness.records import ToolCall

VERSION = 1
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
CASE_PREFIX = "rec-"
FOLLOWUP_TOOL = FOLLOWUP_CALL["name"]
"""The harness's follow-up tool, which a replayed tool cannot be named."""
LARGE_FRAME_BYTES = 1024 * 1024
"""A recorded frame above this gets the size family's budget instead of the schema family's."""


@dataclass(frozen=True)
class CaseFile:
    """A case file as read: where from, its text (replayed byte for byte) and its fields."""

    path: Path
    text: str
    data: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def case_id(self) -> str:
        return CASE_PREFIX + self.name

    @property
    def tool(self) -> dict[str, Any]:
        tool: dict[str, Any] = self.data["tool"]
        return tool

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def case(self) -> catalog.Case:
        """The case of the matrix that replays this file."""
        data = self.data
        server = data["server"]
        modes: tuple[catalog.SchemaMode, ...] = ("advertised", "hidden") if "outputSchema" in self.tool else ("none",)
        large = isinstance(data.get("frame_bytes"), int) and data["frame_bytes"] > LARGE_FRAME_BYTES
        return catalog.Case(
            self.case_id,
            "schema",
            f"{self.tool['name']} of {server.get('name') or 'a server'} {server.get('version') or ''}".strip()
            + f", recorded {data.get('recorded_at') or '(no date)'}",
            "The recorded result, replayed exactly as the server sent it.",
            "unspecified",
            modes,
            sends=f"the result recorded in {self.path.name}",
            budget_s=BUDGET_S["size"] if large else None,
            budget_why="a recorded frame over 1 MiB gets the size family's budget" if large else None,
            protocols=(axis_revision(str(data["protocol"])),),
        )

    def tool_call(self) -> ToolCall:
        """The recorded call: the tool's name and the arguments it was called with."""
        return {"name": str(self.tool["name"]), "arguments": dict(self.data["arguments"])}

    def source(self) -> cells.Replayed:
        """The case's source: this file, replayed, and the recorded call."""
        return cells.Replayed(self.text, self.tool_call())


def axis_revision(protocol: str) -> catalog.Protocol:
    """The revision of the protocol axis a negotiated version belongs to."""
    return "2026-07-28" if protocol == "2026-07-28" else catalog.LEGACY_PROTOCOL


def _field(where: str, data: dict[str, Any], name: str, kind: type, what: str) -> Any:
    if name not in data:
        raise UsageError(f"{where}: field {name!r} is missing")
    value = data[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise UsageError(f"{where}: field {name!r}: expected {what}, got {type(value).__name__}")
    return value


def parse(path: Path, text: str) -> CaseFile:
    """A case file from its text; :class:`UsageError` naming ``path`` and the field otherwise."""
    where = str(path)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{where}: not a case file: not JSON ({exc})") from None
    if not isinstance(data, dict) or "case_file" not in data:
        raise UsageError(f"{where}: not a case file (no 'case_file' version; `python -m harness record` writes them)")
    if data["case_file"] != VERSION:
        raise UsageError(f"{where}: case_file version {data['case_file']!r}: this harness reads version {VERSION}")
    name = _field(where, data, "name", str, "a string")
    if not NAME.match(name):
        raise UsageError(f"{where}: field 'name' {name!r}: letters, digits, '.', '_' and '-' only")
    _field(where, data, "server", dict, "an object")
    _field(where, data, "protocol", str, "a protocol version string")
    _field(where, data, "arguments", dict, "an object (the call's arguments)")
    _field(where, data, "result", dict, "an object (the tools/call result)")
    tool = _field(where, data, "tool", dict, "an object (the tools/list entry)")
    tool_name = _field(f"{where}: tool", tool, "name", str, "a string")
    _field(f"{where}: tool", tool, "inputSchema", dict, "an object")
    if tool_name == FOLLOWUP_TOOL:
        raise UsageError(
            f"{where}: tool {FOLLOWUP_TOOL!r} cannot be replayed: the harness's follow-up call uses that name"
        )
    return CaseFile(path, text, data)


def load(path: Path) -> CaseFile:
    """Read and check one case file."""
    return parse(path, read_text(path, "--case-file"))


def load_all(paths: list[Path]) -> list[CaseFile]:
    """The case files named: files as they are, a directory's ``*.json`` files in name order.

    Two case files with the same name are an error (the name is the case's id)."""
    found: list[CaseFile] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.glob("*.json") if p.is_file())
            if not inside:
                raise UsageError(f"--case-file {path}: a directory with no *.json case files")
            found += [load(p) for p in inside]
        elif path.exists():
            found.append(load(path))
        else:
            raise UsageError(f"--case-file {path}: no such file or directory")
    seen: dict[str, Path] = {}
    for case_file in found:
        if case_file.name in seen:
            raise UsageError(
                f"--case-file: {seen[case_file.name]} and {case_file.path} are both named {case_file.name!r}"
            )
        seen[case_file.name] = case_file.path
    return found


def store(directory: Path, case_files: list[CaseFile]) -> None:
    """Keep a run's case files in its directory (``results/<run>/case-files/NAME.json``), byte for byte."""
    directory.mkdir(parents=True, exist_ok=True)
    for case_file in case_files:
        (directory / f"{case_file.name}.json").write_text(case_file.text, encoding="utf-8")


def of_run(directory: Path) -> list[CaseFile]:
    """The case files a run was started with (none for a run of the catalog)."""
    return [parse(path, path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.json"))]
