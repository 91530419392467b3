"""Bounded execution of one adapter process and everything it starts.

The adapter runs in a new session (its own process group). When it exits or its budget runs out
the whole group is killed and reaped; processes that left the group (an SDK may start the server
in a session of its own) are found by a marker on their command line (the cell's directory, which
appears in the server's ``--journal`` argument) and killed too. Nothing outlives the cell.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Collection, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_live_groups: dict[int, Hashable | None] = {}
"""The running cells' process groups, each with the owner its thread ran for (:func:`owned_by`)."""
_live_lock = threading.Lock()
_owner = threading.local()
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Finished:
    """How an adapter process ended."""

    exit_code: int | None
    timed_out: bool
    wall_ms: float
    stragglers_killed: int


def kill_group(pgid: int) -> None:
    """SIGKILL the process group ``pgid``; nothing when it is already gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_by_marker(marker: str, spare: Collection[int] = ()) -> int:
    """SIGKILL every process whose command line contains ``marker``, except ``spare``; returns how many."""
    proc = Path("/proc")
    if not proc.is_dir():
        return 0
    killed = 0
    needle = marker.encode()
    skip = {os.getpid(), *spare}
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    return killed


@contextmanager
def owned_by(owner: Hashable) -> Iterator[None]:
    """While inside, the process groups this thread starts belong to ``owner`` (:func:`cpu_seconds`)."""
    _owner.value = owner
    try:
        yield
    finally:
        _owner.value = None


def track_group(pgid: int) -> None:
    """Count ``pgid`` among the running cells' groups (:func:`kill_all_running` kills it), e.g. a
    worker's forked child; it belongs to this thread's owner, if any (:func:`owned_by`)."""
    with _live_lock:
        _live_groups[pgid] = getattr(_owner, "value", None)


def untrack_group(pgid: int) -> None:
    with _live_lock:
        _live_groups.pop(pgid, None)


def stat_fields(stat: bytes) -> list[bytes]:
    """The fields of a ``/proc/<pid>/stat`` line after ``pid (comm)`` (a command may hold spaces and
    parentheses): ``[0]`` the state, ``[2]`` the process group, ``[11:13]`` the user and system CPU
    ticks (:data:`CLOCK_TICKS` a second), ``[13:15]`` those of the children it reaped."""
    return stat[stat.rindex(b")") + 2 :].split()


def cpu_seconds() -> dict[Hashable, float]:
    """The CPU time (user and system, with that of the children they reaped) of the live processes
    in each owner's groups, by owner; an owner none of whose processes is found is absent."""
    with _live_lock:
        owners = {pgid: owner for pgid, owner in _live_groups.items() if owner is not None}
    if not owners:
        return {}
    ticks: dict[Hashable, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue
        fields = stat_fields(stat)
        owner = owners.get(int(fields[2]))
        if owner is not None:
            ticks[owner] = ticks.get(owner, 0) + sum(int(field) for field in fields[11:15])  # utime .. cstime
    return {owner: count / CLOCK_TICKS for owner, count in ticks.items()}


def kill_all_running() -> None:
    """Kill every process group started by :func:`run_bounded` that is still running."""
    with _live_lock:
        groups = list(_live_groups)
    for pgid in groups:
        kill_group(pgid)


@contextmanager
def interruptible(kill: Callable[[], None] = kill_all_running) -> Iterator[threading.Event]:
    """While inside, SIGINT/SIGTERM call ``kill`` (stop every running cell) and set the yielded event."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()
        kill()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_bounded(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    stdout: Path,
    stderr: Path,
    marker: str,
    spare: Collection[int] = (),
) -> Finished:
    """Run ``command`` in its own process group for at most ``timeout_s`` seconds.

    Afterwards every process whose command line contains ``marker`` is killed, except the pids in
    ``spare`` (a service the caller started for the cell and stops itself, gracefully).
    """
    started = time.monotonic()
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        track_group(process.pid)
        try:
            process.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            kill_group(process.pid)
            process.wait()
            untrack_group(process.pid)
    stragglers = kill_by_marker(marker, spare)
    return Finished(
        exit_code=None if timed_out else process.returncode,
        timed_out=timed_out,
        wall_ms=round((time.monotonic() - started) * 1000, 1),
        stragglers_killed=stragglers,
    )


class ServiceError(RuntimeError):
    """A service the harness starts (the HTTP reference server) did not come up."""


def start_service(command: list[str], *, stderr: Path, ready_timeout_s: float) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``command`` in its own process group; return it and the first line it prints."""
    with open(stderr, "wb") as err:
        service = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, start_new_session=True
        )
    track_group(service.pid)
    lines: list[bytes] = []
    reader = threading.Thread(target=lambda: lines.append(service.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(ready_timeout_s)
    if not lines or not lines[0].strip():
        stop_service(service)
        raise ServiceError(
            f"`{' '.join(command)}` printed nothing within {ready_timeout_s} s "
            f"(exit code {service.returncode}); see {stderr}"
        )
    return service, lines[0].decode("utf-8", "replace").strip()


SERVICE_GRACE_S = 2.0
"""How long a service has, once signalled, to journal its exit before it is killed."""


def stop_service(service: subprocess.Popen[bytes], grace_s: float = SERVICE_GRACE_S) -> None:
    """SIGTERM the service's group (so it can journal its exit), then SIGKILL, and reap it."""
    try:
        os.killpg(service.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        service.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    kill_group(service.pid)
    service.wait()
    if service.stdout is not None:
        service.stdout.close()
    untrack_group(service.pid)
