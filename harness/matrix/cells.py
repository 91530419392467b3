"""Cells: one adapter variant x one case x one schema mode x one transport x one protocol revision.

:func:`build` expands the manifests and the catalog into cells, filtered and sharded;
:meth:`Cell.to_file` is the cell file handed to an adapter (``docs/adapters.md``).
"""

from __future__ import annotations

import difflib
import json
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from harness.errors import UsageError
from harness.layout import (
    JOURNAL_FILE,
    LIVE_FILE,
    LIVE_PIPE,
    LIVE_PROXY,
    MODEL_DIRECTORY,
    MODEL_JOURNAL_FILE,
    REPLAY_FILE,
    SENT_RESULTS_DIRECTORY,
    SERVER_ENTRY,
)
from harness.records import CONTRACT, CellFile, ModelSpec, SelectionSettings, ToolCall

from . import catalog
from .manifest import Adapter, Variant

TOOL_CALL: ToolCall = {"name": "get_account_balance", "arguments": {"account_id": "ACC-4471"}}
FOLLOWUP_TEXT = "follow-up"
FOLLOWUP_CALL: ToolCall = {"name": "echo", "arguments": {"text": FOLLOWUP_TEXT}}

BUDGET_S = {"schema": 30.0, "size": 60.0, "transport": 20.0, "protocol": 20.0}
"""Seconds the harness gives one adapter run, by family."""
HOST_BUDGET_SCALE = 3.0
"""An agent host's cell is a whole host run (its start-up, a title turn, a tool-search turn, the
calls, the answer): opencode takes 27 s for a schema cell on two loaded cores, Gemini CLI 15 s."""
CLIENT_TIMEOUT_SHARE = 0.6
"""The client's own request timeout, as a share of the budget, so that it fires first."""


def server_program(server_dir: Path, script: str = SERVER_ENTRY) -> list[str]:
    """The interpreter's arguments that start a program of ``servers/reference/`` (the reference
    server, or a live proxy): ``-S``, as it is standard library only and the site's imports (the
    editable install's finder among them) would be a third of its start, which every cell pays;
    the script itself rather than the directory, which would go through ``runpy``."""
    return ["-S", str(server_dir / script)]


@dataclass(frozen=True)
class LiveServer:
    """The user's server: a stdio command with its working directory and extra environment, or a
    Streamable HTTP URL with the transport its answers' framing makes it."""

    command: tuple[str, ...] = ()
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    url: str | None = None
    transport: catalog.Transport = "stdio"

    @property
    def named(self) -> str:
        """The server as the user gave it."""
        return self.url if self.url is not None else shlex.join(self.command)

    def file(self) -> str:
        """The ``live.json`` the recording proxy reads."""
        return json.dumps({"command": list(self.command), "cwd": self.cwd, "env": dict(self.env), "url": self.url})

    def described(self) -> dict[str, Any]:
        """What the run's metadata keeps (environment names, never values)."""
        return {
            "command": list(self.command),
            "cwd": self.cwd,
            "env_keys": sorted(name for name, _ in self.env),
            "url": self.url,
            "transport": self.transport,
        }


@dataclass(frozen=True)
class Replayed:
    """A recorded case: the reference server replays its case file byte for byte, and the adapter
    calls the recorded tool with the recorded arguments."""

    case_file: str
    tool_call: ToolCall


@dataclass(frozen=True)
class Live:
    """A recorded case run against the user's own server, behind the harness's recording pipe or
    proxy, instead of the reference server (:mod:`harness.recorded.live`)."""

    server: LiveServer
    tool_call: ToolCall


CaseSource = Replayed | Live | None
"""Where a cell's case comes from: None for the catalog's (the reference server serves it)."""


@dataclass(frozen=True)
class Cell:
    """One cell of the matrix."""

    adapter: Adapter
    variant: Variant
    case: catalog.Case
    schema: catalog.SchemaMode
    transport: catalog.Transport
    budget_scale: float = 1.0
    protocol: catalog.Protocol = catalog.LEGACY_PROTOCOL
    """The revision the reference server speaks, and the one the client is asked for."""
    source: CaseSource = field(default=None, compare=False)
    """Where the case comes from (the catalog's: None); decided by the case, so not part of the cell's identity."""

    @property
    def column(self) -> str:
        return self.adapter.column(self.variant)

    @property
    def key(self) -> str:
        """A stable id, safe as a directory name."""
        return "--".join((self.adapter.name, self.variant.id, self.case.id, self.schema, self.transport, self.protocol))

    @property
    def budget_s(self) -> float:
        """The family's budget (half as much again per further call), or the case's own (``Case.budget_s``),
        scaled (and by ``HOST_BUDGET_SCALE`` for an agent host)."""
        base = self.case.budget_s or BUDGET_S[self.case.family]
        host = HOST_BUDGET_SCALE if self.adapter.kind == "host" else 1.0
        return host * self.budget_scale * (base + (self.case.calls - 1) * base / 2)

    @property
    def is_http(self) -> bool:
        return catalog.TRANSPORT_KINDS[self.transport].http

    @property
    def starts_server(self) -> bool:
        """Whether the adapter (or the client it drives) starts the reference server: every stdio cell,
        and an agent host's HTTP cell (inside the cell's loopback-only network namespace, where the host
        can reach it). The harness starts every other HTTP cell's server and hands the adapter its URL."""
        return not self.is_http or self.adapter.kind == "host"

    def server_args(self, server_dir: Path, cell_dir: Path) -> list[str]:
        """The reference server's arguments (for HTTP the harness starts it; for stdio the client),
        with the paths of the server's directory and the cell's as the server process sees them."""
        if isinstance(self.source, Live):
            proxy = [
                *server_program(server_dir, LIVE_PROXY if self.is_http else LIVE_PIPE),
                "--live",
                str(cell_dir / LIVE_FILE),
            ]
            proxy += ["--journal", str(cell_dir / JOURNAL_FILE)]
            proxy += ["--transport", self.transport, "--port", "0"] if self.is_http else []
            return [*proxy, "--case", self.case.id, "--schema", self.schema, "--protocol", self.protocol]
        return [*server_program(server_dir), *self.server_options(cell_dir)]

    def server_options(self, cell_dir: Path) -> list[str]:
        """The reference server's options (not live mode's proxy's), after its program."""
        served = (
            ["--case-file", str(cell_dir / REPLAY_FILE)]
            if isinstance(self.source, Replayed)
            else ["--case", self.case.id]
        )
        options = [*served, "--schema", self.schema, "--protocol", self.protocol]
        options += ["--journal", str(cell_dir / JOURNAL_FILE)]
        if self.adapter.kind == "host":
            options += ["--results-dir", str(cell_dir / SENT_RESULTS_DIRECTORY)]
        return options + (["--transport", self.transport, "--port", "0"] if self.is_http else [])

    def calls(self) -> list[ToolCall]:
        call = ToolCall(**(self.source.tool_call if self.source is not None else TOOL_CALL))
        if self.case.cancel_after_ms is not None:
            call["cancel_after_ms"] = self.case.cancel_after_ms
        return [call] * self.case.calls

    def to_file(self, server_dir: Path, cell_dir: Path, url: str | None = None, *, python: str) -> CellFile:
        """The cell file an adapter receives, with paths as the adapter sees them.

        ``url``: the HTTP server the harness started; ``python``: the interpreter that runs the
        reference server for stdio cells.
        """
        budget_ms = int(self.budget_s * 1000)
        file: CellFile = {
            "contract": CONTRACT,
            "cell_id": self.key,
            "adapter": self.adapter.name,
            "variant": self.variant.id,
            "options": dict(self.variant.options),
            "case": self.case.id,
            "transport": self.transport,
            "protocol": self.protocol,
            "server": {
                "command": python if self.starts_server else None,
                "args": self.server_args(server_dir, cell_dir) if self.starts_server else None,
                "env": {},
                "url": url,
            },
            "calls": self.calls(),
            "followup": FOLLOWUP_CALL,
            "call_timeout_ms": int(budget_ms * CLIENT_TIMEOUT_SHARE / self.case.calls),
            "budget_ms": budget_ms,
        }
        if self.adapter.kind == "host":
            file["model"] = self.model(server_dir, cell_dir, python)
        return file

    def model(self, server_dir: Path, cell_dir: Path, python: str) -> ModelSpec:
        """An agent host's scripted model (``servers/model``): how to start it and where it journals;
        the adapter adds ``--script`` (the cell's calls and follow-up) and ``--port``."""
        return {
            "command": python,
            "args": ["-S", str(server_dir.parent / MODEL_DIRECTORY), "--journal", str(cell_dir / MODEL_JOURNAL_FILE)],
            "journal": str(cell_dir / MODEL_JOURNAL_FILE),
        }


@dataclass(frozen=True)
class Selection:
    """Filters over the cell space; empty tuples select everything."""

    adapters: tuple[str, ...] = ()
    cases: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    shard: tuple[int, int] = (1, 1)
    transports: tuple[str, ...] = ()
    protocols: tuple[str, ...] = ()

    FILTERS: ClassVar[tuple[str, ...]] = ("adapters", "cases", "families", "transports", "protocols")
    """The filters, as a run's settings name them (and ``shard``)."""

    def __post_init__(self) -> None:
        index, count = self.shard
        if not 1 <= index <= count:
            raise UsageError(f"shard {index}/{count}: expected 1 <= index <= count")

    def settings(self) -> SelectionSettings:
        """The selection as a run's settings keep it (``meta.json``)."""
        return {
            "adapters": list(self.adapters),
            "cases": list(self.cases),
            "families": list(self.families),
            "transports": list(self.transports),
            "protocols": list(self.protocols),
            "shard": list(self.shard),
        }

    @classmethod
    def from_settings(cls, settings: SelectionSettings) -> Selection:
        """The selection a run's settings keep (a filter an older run did not keep selects everything)."""
        index, count = settings["shard"]
        return cls(
            tuple(settings["adapters"]),
            tuple(settings["cases"]),
            tuple(settings["families"]),
            (index, count),
            tuple(settings.get("transports", ())),
            tuple(settings.get("protocols", ())),
        )


def _matches(value: str, wanted: Iterable[str]) -> bool:
    wanted = tuple(wanted)
    return not wanted or value in wanted


def unknown(what: str, value: str, known: Iterable[str], where: str) -> UsageError:
    """The error for a name that is not among ``known``: close matches first, then where to look."""
    close = difflib.get_close_matches(value, list(known), n=3, cutoff=0.6)
    maybe = f"; did you mean {' or '.join(repr(name) for name in close)}?" if close else ""
    return UsageError(f"unknown {what} {value!r}{maybe} ({where})")


def check(adapters: list[Adapter], selection: Selection, cases: tuple[catalog.Case, ...] = catalog.CASES) -> None:
    """Raise :class:`UsageError` for an adapter, column, case or family the selection names that does not exist."""
    columns = {a.name for a in adapters} | {a.column(v) for a in adapters for v in a.variants}
    for name in selection.adapters:
        if name not in columns:
            raise unknown("adapter", name, columns, "`python -m harness list` shows the adapters and columns")
    known = [case.id for case in cases]
    for case_id in selection.cases:
        if case_id not in known:
            where = (
                f"`python -m harness catalog` lists the {len(cases)} cases"
                if cases is catalog.CASES
                else f"the case files give {', '.join(known)}"
            )
            raise unknown("case", case_id, known, where)
    for family in selection.families:
        if family not in catalog.FAMILIES:
            raise unknown("family", family, catalog.FAMILIES, f"families: {', '.join(catalog.FAMILIES)}")
    for protocol in selection.protocols:
        if protocol not in catalog.PROTOCOLS:
            raise unknown("protocol", protocol, catalog.PROTOCOLS, f"protocols: {', '.join(catalog.PROTOCOLS)}")


def runs_under(declared: Iterable[str], case: catalog.Case, protocol: str) -> bool:
    """Whether a column whose manifest declares the revisions ``declared`` runs the case under
    ``protocol``: every case that means something there when the column declares it, else only the
    era cases (:data:`catalog.ERA_CASES`)."""
    if protocol not in case.protocols:
        return False
    return protocol in declared or case.id in catalog.ERA_CASES


def not_asked(declared: Iterable[str], case: catalog.Case, protocol: str) -> bool:
    """Whether the case means something under ``protocol`` but a column declaring ``declared`` is not
    asked it there (it runs only the era cases under a revision it does not declare)."""
    return protocol in case.protocols and protocol not in declared


def build(
    adapters: list[Adapter],
    selection: Selection = Selection(),
    budget_scale: float = 1.0,
    cases: tuple[catalog.Case, ...] = catalog.CASES,
    sources: Mapping[str, CaseSource] | None = None,
) -> list[Cell]:
    """All selected cells of ``cases`` (the catalog, or recorded cases with their ``sources`` by
    case id), in a stable order (case-major, so that slow families spread out; a case's cells under
    each revision next to each other).

    ``budget_scale`` multiplies every cell's time budget (for slow machines, or fast tests).
    Unknown names are a :class:`UsageError` (:func:`check`); an empty result is not an error here.
    """
    if budget_scale <= 0:
        raise UsageError(f"budget scale {budget_scale}: expected a positive number")
    check(adapters, selection, cases)
    sources = sources or {}
    cells = [
        Cell(adapter, variant, case, schema, transport, budget_scale, protocol, sources.get(case.id))
        for case in cases
        if _matches(case.id, selection.cases) and _matches(case.family, selection.families)
        for protocol in catalog.PROTOCOLS
        if _matches(protocol, selection.protocols)
        for schema in case.schema_modes
        for adapter in adapters
        for variant in adapter.variants
        if not selection.adapters or adapter.name in selection.adapters or adapter.column(variant) in selection.adapters
        if adapter.families is None or case.family in adapter.families
        if runs_under(adapter.protocols, case, protocol)
        for transport in (variant.transports or adapter.transports)
        if transport in case.transports and _matches(transport, selection.transports)
    ]
    return by_count(cells, *selection.shard)


def by_count(cells: list[Cell], index: int, count: int) -> list[Cell]:
    """Shard ``index`` of ``count`` by count: every ``count``-th cell (``harness/run/shards.py`` splits by cost)."""
    return [cell for position, cell in enumerate(cells) if position % count == index - 1]
