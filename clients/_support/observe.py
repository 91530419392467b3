"""Helpers shared by the Python client adapters (stdlib only, Python >= 3.10).

The adapter contract is ``docs/adapters.md``: an adapter reads one cell file, drives one real
client, and writes one observation of facts. This module holds the parts every Python adapter
needs and that do not depend on the client under test:

- :func:`read_cell` reads and sanity-checks the cell file (:func:`cell_problem`); :func:`check_options`
  stops the adapter (exit 2, message on stderr) on an option it does not understand or of the wrong
  type (:func:`option_problems`); :func:`cell_from_argv` does both for an adapter's command line;
  :func:`check_cancel_after` checks the calls' ``cancel_after_ms``. :func:`stdio_server` is the cell's stdio server as
  the keyword arguments of an SDK's ``StdioServerParameters``.
- :func:`jsonable` is a value as JSON, or its ``repr`` when it is not JSON; :func:`normalize_ids`
  replaces the random ids a framework puts into messages by fixed ones.
- :func:`error_record` turns any exception into the contract's Error object: ``type`` (class
  name), ``code`` (the JSON-RPC code when the exception carries an ``error.code``, as mcp's
  ``McpError``/``MCPError`` do), ``sdk_code`` (a string ``code`` attribute), ``message``
  (``str(exc)``), ``data`` (the JSON-RPC error data, when present and not null) and ``chain`` (the
  causes and exception-group members, flattened depth-first, innermost last, at most
  :data:`MAX_CHAIN` entries).
- :class:`Stopwatch` measures durations in milliseconds on the monotonic clock.
- :func:`write_observation` writes JSON (UTF-8, ``ensure_ascii=False``) to a temporary file in the
  target's directory and renames it into place, so a killed adapter never leaves half a file.
- :class:`Budget` carves the cell's ``budget_ms`` into deadlines (steps, close, watchdog) so the
  adapter finishes before the harness kills it.
- :class:`Observation` builds the observation step by step; :meth:`Observation.snapshot` is a
  complete, contract-shaped object at any moment: a step still running, or never reached because
  a deadline passed, is recorded as raised with an ``AdapterTimeout`` error (the adapter's own
  deadline, not the client's); out-of-band errors are kept once each, at most
  :data:`MAX_TRANSPORT_ERRORS`, then an ``AdapterTruncated`` entry counts the rest.
- :class:`Watchdog` is the last-resort guard: at a deadline it runs a final callback (which
  writes whatever was observed), kills this process's children (the clients spawn stdio servers
  in their own session, beyond the harness's process-group kill) and exits with status 0.
  :func:`run_guarded` runs an adapter's driver under it and writes the observation, whatever the
  driver raised.

Nothing here classifies what a client did; that is the harness's job. ``observe.mjs`` is the same
contract for the Node adapters; ``tests/test_support_contract.py`` holds the two to the same
fixtures (docs/adapters.md, "Support libraries: one contract, two runtimes").
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

CONTRACT = 1
MAX_CHAIN = 10
"""How many causes / group members an Error's ``chain`` holds at most."""
MAX_TRANSPORT_ERRORS = 1000
"""How many out-of-band errors an observation keeps; further reports are counted (``AdapterTruncated``)."""
ADAPTER_TIMEOUT = "AdapterTimeout"
ADAPTER_TRUNCATED = "AdapterTruncated"
CELL_KEYS = ("cell_id", "options", "server", "calls", "followup", "call_timeout_ms", "budget_ms")
"""The keys a cell file must have (both runtimes check the same ones)."""
OPTION_TYPES: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}
"""An option's Python type and its name in messages (observe.mjs's names: one contract, two runtimes)."""


def fail(message: str, status: int = 2) -> NoReturn:
    """Stop the adapter with ``message`` on stderr (a usage or contract error, not a client fact)."""
    print(f"adapter: {message}", file=sys.stderr, flush=True)
    raise SystemExit(status)


def _json_text(value: Any) -> str:
    """``value`` as compact JSON text (as ``JSON.stringify`` writes it), for messages."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)


def cell_problem(cell: Any, path: str) -> str | None:
    """Why ``cell`` (the parsed cell file at ``path``) is not a contract-1 cell, or ``None``."""
    if not isinstance(cell, dict):
        return f"{path}: the cell is not a JSON object"
    contract = cell.get("contract")
    if not isinstance(contract, (int, float)) or isinstance(contract, bool) or contract != CONTRACT:
        return f"{path}: contract {_json_text(contract)} is not supported (expected {CONTRACT})"
    missing = [key for key in CELL_KEYS if key not in cell]
    if missing:
        return f"{path}: missing key(s): {', '.join(missing)}"
    return None


def read_cell(path: str) -> dict[str, Any]:
    """The cell file at ``path``, parsed; stops the adapter when it is not a contract-1 cell
    (:func:`cell_problem`)."""
    try:
        with open(path, encoding="utf-8") as handle:
            cell = json.load(handle)
    except (OSError, ValueError) as exc:
        fail(f"cannot read cell file {path}: {exc}")
    problem = cell_problem(cell, path)
    if problem:
        fail(problem)
    return cell


def option_problems(options: Any, known: Mapping[str, type]) -> list[str]:
    """What is wrong with the cell's ``options`` for an adapter that understands ``known`` (name ->
    ``bool``, ``int``, ``float`` or ``str``), in the options' order: an unknown option, a value of
    the wrong type (a ``float`` option also takes an integer, as JSON does not tell them apart)."""
    if not isinstance(options, dict):
        return [f"options: expected an object, got {_json_text(options)}"]
    problems = []
    for name, value in options.items():
        expected = known.get(name)
        if expected is None:
            understood = ", ".join(sorted(known)) or "none"
            problems.append(f"unknown option {_json_text(name)} (this adapter understands: {understood})")
            continue
        allowed = (int, float) if expected is float else (expected,)
        if type(value) not in allowed:
            problems.append(f"option {_json_text(name)}: expected {OPTION_TYPES[expected]}, got {_json_text(value)}")
    return problems


def check_options(options: Any, known: Mapping[str, type]) -> None:
    """Stop the adapter, naming every problem (:func:`option_problems`), unless ``options`` fit ``known``."""
    problems = option_problems(options, known)
    if problems:
        fail("; ".join(problems))


def check_cancel_after(calls: list[dict[str, Any]]) -> None:
    """Stop the adapter on a call whose ``cancel_after_ms`` is set but not a non-negative integer."""
    for call in calls:
        after = call.get("cancel_after_ms")
        if after is not None and (type(after) is not int or after < 0):
            fail(f"cancel_after_ms: expected a non-negative integer, got {_json_text(after)}")


def cell_from_argv(argv: list[str], options: Mapping[str, type]) -> tuple[dict[str, Any], str]:
    """``(cell, observation path)`` from an adapter's ``argv`` (the adapter, the cell file, the
    observation file), the cell's options checked against ``options`` (:func:`check_options`);
    stops the adapter on a wrong command line or cell."""
    if len(argv) != 3:
        fail("usage: adapter.py <cell.json> <observation.json>")
    cell = read_cell(argv[1])
    check_options(cell["options"], options)
    return cell, argv[2]


def stdio_server(cell: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of an SDK's ``StdioServerParameters`` for the cell's server: ``command``,
    ``args`` (strings) and ``env`` (``None`` when the cell adds nothing: the stdio client then builds
    its default environment)."""
    server = cell["server"]
    return {
        "command": server["command"],
        "args": [str(arg) for arg in server.get("args") or []],
        "env": {str(k): str(v) for k, v in (server.get("env") or {}).items()} or None,
    }


def jsonable(value: Any) -> Any:
    """``value`` if it serializes as JSON, else its ``repr``."""
    try:
        json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
    return value


_RANDOM_ID = re.compile(
    r"^(lc_|run-|lc_run-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE
)


def normalize_ids(value: Any) -> Any:
    """``value`` with every string that is a random id (a UUID, optionally prefixed ``lc_`` /
    ``run-`` / ``lc_run-``: LangChain's content-block ids and LangGraph's message ids) replaced by
    ``<prefix>id-0``, ``<prefix>id-1``, ... in order of appearance, so that two runs of one cell
    compare equal. Only whole strings are replaced, never text inside a string."""
    seen: dict[str, str] = {}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: walk(item) for key, item in node.items()}
        if isinstance(node, list):
            return [walk(item) for item in node]
        if isinstance(node, str):
            match = _RANDOM_ID.fullmatch(node)
            if match:
                return seen.setdefault(node, f"{match.group(1) or ''}id-{len(seen)}")
        return node

    return walk(value)


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a broken __str__ must not lose the record
        return repr(exc)


def _links(exc: BaseException) -> list[BaseException]:
    """What ``exc`` directly leads to: group members, then its cause (or unsuppressed context)."""
    links: list[BaseException] = []
    members = getattr(exc, "exceptions", None)  # ExceptionGroup, or the 3.10 backport
    if isinstance(members, (tuple, list)):
        links.extend(m for m in members if isinstance(m, BaseException))
    cause = exc.__cause__
    if cause is None and not exc.__suppress_context__:
        cause = exc.__context__
    if cause is not None:
        links.append(cause)
    return links


def _flat(exc: BaseException) -> dict[str, Any]:
    record: dict[str, Any] = {"type": type(exc).__name__, "code": None, "message": _text(exc)}
    sdk_code = getattr(exc, "code", None)
    if isinstance(sdk_code, str):
        record["sdk_code"] = sdk_code
    error = getattr(exc, "error", None)  # mcp's McpError (1.x) / MCPError (2.x) carry ErrorData
    code = getattr(error, "code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        record["code"] = code
        data = getattr(error, "data", None)
        if data is not None:
            record["data"] = jsonable(data)
    return record


def error_record(exc: BaseException, limit: int = MAX_CHAIN) -> dict[str, Any]:
    """The contract's Error object for ``exc``, with its causes and group members in ``chain``."""
    record = _flat(exc)
    chain: list[dict[str, Any]] = []
    seen = {id(exc)}

    def visit(parent: BaseException) -> None:
        for link in _links(parent):
            if len(chain) >= limit:
                return
            if id(link) in seen:
                continue
            seen.add(id(link))
            chain.append(_flat(link))
            visit(link)

    visit(exc)
    if chain:
        record["chain"] = chain
    return record


class Stopwatch:
    """Milliseconds elapsed on the monotonic clock since construction."""

    __slots__ = ("started",)

    def __init__(self) -> None:
        self.started = time.monotonic()

    def ms(self) -> float:
        return round((time.monotonic() - self.started) * 1000.0, 3)


def step(started: Stopwatch, error: BaseException | dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A contract step: ``status`` ok (no error) or raised, ``error``, ``duration_ms``, plus ``extra``."""
    if isinstance(error, BaseException):
        error = error_record(error)
    return {"status": "ok" if error is None else "raised", "error": error, "duration_ms": started.ms(), **extra}


def write_observation(path: str, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (temporary file in the same directory, fsync,
    rename). UTF-8; a lone surrogate (a client may decode one from a ``\\ud800`` escape) is written
    as its JSON escape, as ``JSON.stringify`` does, rather than failing the write."""
    directory = os.path.dirname(os.path.abspath(path))
    payload = json.dumps(obj, ensure_ascii=False, default=repr).encode("utf-8", "backslashreplace")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".observation-", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the observation is an ordinary result file
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def kill_children() -> list[int]:
    """SIGKILL the process group of every live child of this process (Linux ``/proc``); their pids.

    The clients spawn stdio servers in a new session, out of reach of the harness's kill of the
    adapter's process group; the watchdog uses this so that giving up on a client leaks no server.
    """
    me, killed = os.getpid(), []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return killed
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[0] != "Z" and int(fields[1]) == me:
            pid = int(entry)
            try:
                if os.getpgid(pid) == pid:  # a group leader: take its own children with it
                    os.killpg(pid, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except OSError:
                pass
    return killed


class Watchdog:
    """Runs ``final`` at ``deadline`` (a ``time.monotonic()`` value), kills this process's children
    (:func:`kill_children`), then exits the process with 0.

    For a client that will not return control in time (a shielded wait, a blocked thread): the
    adapter's own deadlines should normally fire first and :meth:`cancel` it.
    """

    def __init__(self, deadline: float, final: Callable[[], None]) -> None:
        self._final = final
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()

    def _fire(self) -> None:
        try:
            print(
                "adapter: watchdog deadline reached; writing the observation and exiting", file=sys.stderr, flush=True
            )
            for _ in range(3):  # the main thread may be mutating the observation meanwhile
                try:
                    self._final()
                    break
                except RuntimeError:
                    time.sleep(0.01)
            killed = kill_children()
            if killed:
                print(f"adapter: watchdog killed child process(es) {killed}", file=sys.stderr, flush=True)
        finally:
            os._exit(0)


def run_guarded(out: str, obs: Observation, deadline: float, driver: Callable[[], object]) -> None:
    """Run ``driver()`` under a :class:`Watchdog` at ``deadline`` that writes ``obs`` to ``out``,
    then write ``obs`` to ``out``; what escaped the driver (the client crashed it) is recorded as
    the step it interrupted (:meth:`Observation.snapshot`) and its traceback printed on stderr."""
    watchdog = Watchdog(deadline, lambda: obs.save(out, reason="watchdog at the budget's final deadline"))
    escaped: BaseException | None = None
    try:
        driver()
    except BaseException as exc:  # the client crashed the driver: record where, exit 0 anyway
        escaped = exc
        traceback.print_exc()
    watchdog.cancel()
    obs.save(out, escaped)


def deadline_error(what: str, elapsed_ms: float | None, reason: str | None = None) -> dict[str, Any]:
    """The Error recorded for a step that the adapter's own deadline ended (``elapsed_ms``) or never
    let start (``None``); ``reason``: what stopped the adapter, when it is not the step's deadline."""
    if elapsed_ms is None:
        message = f"adapter deadline: {what} not started, the adapter's deadline had passed"
    else:
        message = f"adapter deadline: {what} ended by the adapter after {elapsed_ms} ms"
    if reason:
        message = f"{message} ({reason})"
    return {"type": ADAPTER_TIMEOUT, "code": None, "message": message}


def truncated_error(dropped: int) -> dict[str, Any]:
    """The ``AdapterTruncated`` entry that ends ``transport_errors`` when ``dropped`` reports were not kept."""
    return {
        "type": ADAPTER_TRUNCATED,
        "code": None,
        "message": f"{dropped} further out-of-band error reports were not recorded",
    }


@dataclass(frozen=True)
class Budget:
    """Deadlines on the ``time.monotonic()`` clock, carved out of the cell's ``budget_ms``.

    ``steps``: connect, listing and calls end here. ``close``: closing ends here (the client's
    shutdown gets ``close_reserve_s`` of its own). ``final``: the watchdog writes and exits here,
    shortly before the harness kills the process group.
    """

    steps: float
    close: float
    final: float

    @classmethod
    def of(cls, cell: Mapping[str, Any], started: float, close_reserve_s: float) -> Budget:
        total = float(cell["budget_ms"]) / 1000.0
        final = started + total - min(1.5, max(0.5, 0.05 * total))
        close = final - min(0.5, 0.05 * total)
        return cls(steps=close - min(close_reserve_s, 0.15 * total), close=close, final=final)


class Observation:
    """The observation of one cell, built step by step (``begin`` then ``end``)."""

    def __init__(self, cell: Mapping[str, Any], package: str) -> None:
        version: str | None = None
        if package:
            try:
                version = importlib.metadata.version(package)
            except importlib.metadata.PackageNotFoundError:
                version = None
        self.data: dict[str, Any] = {
            "contract": CONTRACT,
            "package_version": version,
            "runtime_version": platform.python_version(),
            "initialize": None,
            "list_tools": None,
            "calls": [],
            "followup": None,
            "transport_errors": [],
            "close": None,
        }
        self._call_tools = [str(call["name"]) for call in cell["calls"]]
        self._followup_tool = str(cell["followup"]["name"])
        self._current: tuple[str, str | None, Stopwatch] | None = None
        self._lock = threading.Lock()
        self._errors: dict[int, tuple[BaseException, dict[str, Any]]] = {}  # by id: kept alive, so ids stay unique
        self._dropped = 0

    def begin(self, step_name: str, tool: str | None = None) -> Stopwatch:
        """Mark ``step_name`` (initialize, list_tools, call, followup, close) as running."""
        watch = Stopwatch()
        self._current = (step_name, tool, watch)
        return watch

    def end(self, step_name: str, entry: dict[str, Any]) -> None:
        """Record the finished step's entry (a call is appended to ``calls``)."""
        if step_name == "call":
            self.data["calls"].append(entry)
        else:
            self.data[step_name] = entry
        self._current = None

    def transport_error(self, exc: BaseException) -> None:
        """Record an out-of-band error: once per exception object, at most :data:`MAX_TRANSPORT_ERRORS`
        (further reports are counted and end the list as one ``AdapterTruncated`` entry)."""
        if id(exc) in self._errors:
            return
        if len(self._errors) >= MAX_TRANSPORT_ERRORS:
            self._dropped += 1
            return
        self._errors[id(exc)] = (exc, error_record(exc))

    @staticmethod
    def call_entry(
        tool: str, duration_ms: float, result: Any = None, error: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A contract call: ``returned`` with ``result`` when ``error`` is None, else ``raised``."""
        return {
            "tool": tool,
            "status": "returned" if error is None else "raised",
            "result": result if error is None else None,
            "error": error,
            "duration_ms": duration_ms,
        }

    def _unfinished(self, name: str, tool: str | None, watch: Stopwatch, error: dict[str, Any]) -> dict[str, Any]:
        if name in ("call", "followup"):
            return self.call_entry(tool or "", watch.ms(), error=error)
        extra: dict[str, Any] = {}
        if name == "initialize":
            extra["protocol_version"] = None
        elif name == "list_tools":
            extra["tools"] = None
        return step(watch, error, **extra)

    def snapshot(self, interrupted_by: BaseException | None = None, reason: str | None = None) -> dict[str, Any]:
        """The observation as it stands, with every step the contract requires present.

        The step still running is recorded as raised: with ``interrupted_by`` when an exception
        escaped the adapter's driver, else with an ``AdapterTimeout`` (naming ``reason``, what
        stopped the adapter). Calls and the follow-up that were never started after a successful
        initialize are recorded as raised ``AdapterTimeout``.
        """
        data = dict(self.data)
        data["calls"] = list(data["calls"])
        data["transport_errors"] = [record for _, record in self._errors.values()]
        if self._dropped:
            data["transport_errors"].append(truncated_error(self._dropped))
        current = self._current
        if current is not None:
            name, tool, watch = current
            if interrupted_by is not None and not isinstance(interrupted_by, (KeyboardInterrupt, SystemExit)):
                error = error_record(interrupted_by)
            else:
                error = deadline_error(name if tool is None else f"{name} {tool}", watch.ms(), reason)
            entry = self._unfinished(name, tool, watch, error)
            if name == "call":
                data["calls"].append(entry)
            else:
                data[name] = entry
        if data["initialize"] is None:
            not_started = deadline_error("initialize", None)
            data["initialize"] = self._unfinished("initialize", None, Stopwatch(), not_started)
        if data["initialize"]["status"] != "ok":
            data["calls"], data["followup"] = [], None
            return data
        for tool in self._call_tools[len(data["calls"]) :]:
            data["calls"].append(self.call_entry(tool, 0.0, error=deadline_error(f"call {tool}", None)))
        if data["followup"] is None:
            tool = self._followup_tool
            data["followup"] = self.call_entry(tool, 0.0, error=deadline_error(f"followup {tool}", None))
        return data

    def save(self, path: str, interrupted_by: BaseException | None = None, reason: str | None = None) -> None:
        """Write :meth:`snapshot` to ``path`` atomically (serialized against the watchdog)."""
        with self._lock:
            write_observation(path, self.snapshot(interrupted_by, reason))
