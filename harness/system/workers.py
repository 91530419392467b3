"""Warm workers: one per Python adapter environment, forking a fresh child per cell.

A cell's cost used to be its client runtime starting and importing the SDK or framework again
(0.5 to 5 s of a Python cell). A :class:`Worker` runs ``clients/_support/fork_worker.py`` in the
adapter's venv: it imports the adapter's modules once, then forks one child per cell. The child
is isolated as a process of its own would be: its own session and process group, its own
stdout/stderr files, its own event loop (the driver starts one per cell), killed and reaped as a
whole group when it ends or its budget runs out (:meth:`Worker.run` returns the same
:class:`~harness.system.process.Finished` as :func:`~harness.system.process.run_bounded`).

An adapter whose manifest says ``fork_safe = false``, every Node adapter (Node cannot fork; see
docs/architecture.md, "Isolation"), and any adapter whose worker refuses to start (a thread
running after import, an import that fails) run one process per cell instead; ``--isolation
process`` does that for every adapter. :class:`WorkerPool` starts workers on first use and stops
them all on :meth:`WorkerPool.close`, so that a run leaves none behind.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import process
from .process import Finished

ISOLATIONS = ("worker", "process")
"""``worker``: each cell starts warm where the adapter allows it (a forked child of a warm worker,
or a Node process from a startup snapshot); ``process``: a fresh process per cell, from its entry."""
WARM = ("worker", "snapshot")
"""How an adapter's cells run (``Backend.isolation_of``) when they start without loading their
runtime's modules: their start-up costs no CPU slot worth keeping."""


@dataclass(frozen=True)
class WarmStart:
    """The prepared warm start of an adapter whose cells each stay a fresh process (a Node startup
    snapshot, :mod:`harness.prepare.snapshots`; a Java ahead-of-time cache, :mod:`harness.prepare.aot_cache`):
    ``file``, what its cells start from, or ``refused``, why there is none."""

    file: Path | None
    refused: str | None


READY_S = 120.0
"""How long a worker may take to import its adapter (a framework's first import, cold)."""
REAP_S = 10.0
"""How long a killed child may take to be reported reaped before the worker is given up on."""


class WorkerError(RuntimeError):
    """A worker did not start, refused to serve, or stopped answering."""


class NotForked(WorkerError):
    """The worker could not start the cell at all (nothing ran: the cell can run as a process)."""


@dataclass
class _Request:
    pid: int | None = None
    exit_code: int | None = None
    error: str | None = None
    forked: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)


class Child:
    """A worker's forked child (:meth:`Worker.child`): its pid (and process group), and how it ended."""

    def __init__(self, pid: int, request: _Request) -> None:
        self.pid = pid
        self._request = request

    def wait(self, timeout_s: float) -> bool:
        """Whether the child ended (the worker reaped it) within ``timeout_s``."""
        return self._request.ended.wait(timeout_s)

    @property
    def exit_code(self) -> int | None:
        """As :mod:`subprocess` says it (negative: killed by that signal); None while it runs."""
        return self._request.exit_code


class Worker:
    """One ``fork_worker.py`` process serving one adapter's cells (thread-safe)."""

    def __init__(self, command: list[str], *, cwd: Path, env: dict[str, str], log: Path) -> None:
        with open(log, "ab") as err:
            self._process = subprocess.Popen(
                command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                start_new_session=True,
            )  # fmt: skip
        self._lock = threading.Lock()
        self._requests: dict[int, _Request] = {}
        self._next_id = 0
        self._dead: str | None = None
        self._ready = threading.Event()
        self._refused: str | None = None
        self._reader = threading.Thread(target=self._read, name=f"worker-{self._process.pid}", daemon=True)
        self._reader.start()
        if not self._ready.wait(READY_S):
            self.close()
            raise WorkerError(f"`{' '.join(command)}` was not ready within {READY_S:.0f} s; see {log}")
        failure = self._failure()
        if failure is not None:
            self.close()
            raise WorkerError(failure)

    def _failure(self) -> str | None:
        """Why the worker cannot serve (it refused, or it exited), or None."""
        return self._refused or self._dead

    def _read(self) -> None:
        stdout: IO[bytes] = self._process.stdout  # type: ignore[assignment]
        for line in stdout:
            try:
                message: dict[str, Any] = json.loads(line)
            except ValueError:
                continue
            if "ready" in message:
                self._ready.set()
                continue
            if "refused" in message:
                self._refused = str(message["refused"])
                self._ready.set()
                continue
            with self._lock:
                request = self._requests.get(int(message.get("id", -1)))
            if request is None:
                continue
            if "pid" in message:
                request.pid = int(message["pid"])
                request.forked.set()
            elif "error" in message:
                request.error = str(message["error"])
                request.forked.set()
                request.ended.set()
            elif "exit_code" in message:
                request.exit_code = int(message["exit_code"])
                request.ended.set()
        self._process.wait()
        with self._lock:
            self._dead = f"the worker exited ({self._process.returncode})"
            pending = list(self._requests.values())
        for request in pending:
            request.error = request.error or self._dead
            request.forked.set()
            request.ended.set()
        self._ready.set()

    @property
    def alive(self) -> bool:
        return self._dead is None

    @contextmanager
    def child(
        self, argv: list[str], *, cwd: Path, stdout: Path, stderr: Path, fork_timeout_s: float
    ) -> Iterator[Child]:
        """``argv`` running in a forked child while inside (:exc:`NotForked` when the worker could not
        fork it within ``fork_timeout_s``); on leaving, the child's group is killed and the child
        reaped (:exc:`WorkerError` when the worker does not report it reaped within :data:`REAP_S`)."""
        request = _Request()
        with self._lock:
            if self._dead is not None:
                raise NotForked(self._dead)
            self._next_id += 1
            request_id = self._next_id
            self._requests[request_id] = request
            line = json.dumps(
                {"id": request_id, "argv": argv, "cwd": str(cwd), "stdout": str(stdout), "stderr": str(stderr)}
            )
            try:
                stdin: IO[bytes] = self._process.stdin  # type: ignore[assignment]
                stdin.write(line.encode() + b"\n")
                stdin.flush()
            except OSError as exc:
                self._requests.pop(request_id, None)
                raise NotForked(f"the worker does not take requests: {exc}") from exc
        try:
            request.forked.wait(fork_timeout_s)
            if request.pid is None:
                raise NotForked(request.error or f"the worker did not fork within {fork_timeout_s:.0f} s")
            pid = request.pid
            process.track_group(pid)
            try:
                yield Child(pid, request)
                process.kill_group(pid)
                if not request.ended.wait(REAP_S):
                    raise WorkerError(f"child {pid} was killed but not reported reaped")
            finally:
                process.kill_group(pid)
                process.untrack_group(pid)
        finally:
            with self._lock:
                self._requests.pop(request_id, None)
        if request.error is not None and request.exit_code is None:
            raise WorkerError(request.error)

    def run(self, argv: list[str], *, cwd: Path, stdout: Path, stderr: Path, timeout_s: float, marker: str,
            spare: tuple[int, ...] = ()) -> Finished:  # fmt: skip
        """Run ``argv`` (the adapter's command line) in a forked child for at most ``timeout_s``."""
        started = time.monotonic()
        with self.child(argv, cwd=cwd, stdout=stdout, stderr=stderr, fork_timeout_s=timeout_s) as child:
            remaining = timeout_s - (time.monotonic() - started)
            timed_out = not child.wait(max(0.0, remaining))
        return Finished(
            exit_code=None if timed_out else child.exit_code,
            timed_out=timed_out,
            wall_ms=round((time.monotonic() - started) * 1000, 1),
            stragglers_killed=process.kill_by_marker(marker, spare),
        )

    def close(self) -> None:
        """Stop the worker: closing its stdin makes it kill and reap its children; then its group is killed."""
        try:
            if self._process.stdin is not None:
                self._process.stdin.close()
        except OSError:
            pass
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        process.kill_group(self._process.pid)
        self._process.wait()
        self._reader.join(5)
        if self._process.stdout is not None:
            self._process.stdout.close()


class WorkerPool:
    """Workers started on first use, one per adapter; an adapter whose worker would not start is
    remembered with the reason (:attr:`refused`) and runs one process per cell."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workers: dict[str, Worker] = {}
        self._starting: dict[str, threading.Lock] = {}
        self.refused: dict[str, str] = {}

    def get(self, name: str, command: list[str], *, cwd: Path, env: dict[str, str], log: Path) -> Worker | None:
        """The running worker for adapter ``name``, started with ``command`` if needed; None when refused."""
        with self._lock:
            starting = self._starting.setdefault(name, threading.Lock())
        with starting:
            with self._lock:
                worker = self._workers.get(name)
                if name in self.refused:
                    return None
            if worker is not None:
                if worker.alive:
                    return worker
                worker.close()  # it died: release its pipes before a new one starts
            try:
                worker = Worker(command, cwd=cwd, env=env, log=log)
            except (WorkerError, OSError) as exc:
                with self._lock:
                    self.refused[name] = str(exc)
                return None
            with self._lock:
                self._workers[name] = worker
            return worker

    def close(self) -> None:
        with self._lock:
            workers = list(self._workers.values())
            self._workers.clear()
        for worker in workers:
            worker.close()
