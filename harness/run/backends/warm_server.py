"""The reference server of an HTTP cell, forked from a warm worker.

A fresh interpreter that imports the reference server and its HTTP stack costs about 0.1 s of CPU
before it listens; every HTTP cell the harness starts a server for paid it. Under ``--isolation
worker`` one ``fork_worker.py`` process per run (:mod:`harness.system.workers`) imports the server's
modules, the HTTP stack among them, once, and forks the server of each HTTP cell. The child is the
server a fresh ``python -S servers/reference/__main__.py ...`` would be: the same program run as
``__main__`` with the same ``sys.argv``, in a session of its own, stdin from ``/dev/null``, stderr to
the cell's ``server-stderr.txt``, stdout to a FIFO in the cell directory from which the harness reads
its ready line (and which it holds open until the server stops, as it holds a fresh server's
pipe), stopped the same way (SIGTERM to its group so that it journals its exit, SIGKILL after
:data:`~harness.system.process.SERVICE_GRACE_S`) and reaped. Where the worker cannot start or fork, the
caller starts the server as a process (:exc:`~harness.system.workers.NotForked`).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.layout import SERVER_ENTRY, CellFiles, Layout
from harness.system import workers
from harness.system.process import SERVICE_GRACE_S, ServiceError
from harness.system.reference_server import READY_S, parse_url_line

WORKER_NAME = "(reference server)"
"""The server's worker in the :class:`~harness.system.workers.WorkerPool` (no adapter directory has this name)."""
HTTP_MODULES = ("http_sessions", "http_transport")
"""What ``servers/reference/__main__.py`` imports only for HTTP: preloaded in the worker as well."""
STDOUT_FIFO = "server-stdout.fifo"
"""The forked server's stdout in the cell directory while it runs (removed when it stops)."""
POLL_S = 0.05
"""How often the wait for the ready line looks whether the server has ended without one."""


def worker_command(layout: Layout) -> list[str]:
    """The server's worker: this interpreter with ``-S`` (as a fresh server runs) on ``fork_worker.py``."""
    return [
        sys.executable,
        "-S",
        str(layout.support / "fork_worker.py"),
        str(layout.server / SERVER_ENTRY),
        *HTTP_MODULES,
    ]


def _ready_line(fifo_fd: int, child: workers.Child, timeout_s: float) -> bytes:
    """The first line the server writes, or b"" when it ends or ``timeout_s`` passes first."""
    deadline = time.monotonic() + timeout_s
    data = b""
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        readable, _, _ = select.select([fifo_fd], [], [], min(POLL_S, remaining))
        if readable:
            data += os.read(fifo_fd, 65536)
        elif child.wait(0):
            break
    return data.split(b"\n", 1)[0]


@contextmanager
def serve(worker: workers.Worker, options: list[str], files: CellFiles, layout: Layout) -> Iterator[tuple[str, int]]:
    """A forked reference server with ``options`` (:meth:`~harness.matrix.cells.Cell.server_options`) while
    inside: yields its URL and pid. Raises :exc:`~harness.system.workers.NotForked` before yielding when the
    worker could not fork it, :exc:`~harness.system.process.ServiceError` when it printed no ready line."""
    fifo = files.directory / STDOUT_FIFO
    os.mkfifo(fifo)
    # Read and write: opening never waits for the server, and reading never sees an end of file
    # before the server has opened its end (the server's end-of-file is its exit, watched apart).
    fifo_fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        argv = [str(layout.server / SERVER_ENTRY), *options]
        with worker.child(
            argv, cwd=Path.cwd(), stdout=fifo, stderr=files.server_stderr, fork_timeout_s=READY_S
        ) as child:
            line = _ready_line(fifo_fd, child, READY_S).decode("utf-8", "replace").strip()
            try:
                if not line:
                    raise ServiceError(
                        f"the reference server (forked, pid {child.pid}) printed nothing within {READY_S} s "
                        f"(exit code {child.exit_code}); see {files.server_stderr}"
                    )
                yield parse_url_line(line), child.pid
            finally:
                try:
                    os.killpg(child.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
                child.wait(SERVICE_GRACE_S)
    finally:
        os.close(fifo_fd)
        fifo.unlink()
