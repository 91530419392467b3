"""A warm worker for one Python adapter: import the adapter's modules once, fork one child per cell.

Usage (the harness starts it, ``harness/system/workers.py``)::

    <adapter venv>/bin/python fork_worker.py <adapter entry file> [module ...]

Stdlib only, Python >= 3.10, run in the adapter's own environment. It runs the ``import``
statements at the top level of the entry file once (:func:`preload`; nothing else of the adapter
runs in the worker), then imports each ``module`` named after it (modules the entry imports
lazily, inside a function: the reference server's HTTP stack, which its stdio runs never load),
refuses to serve when a thread is running after that (forking a process
with threads is not safe; such an adapter declares ``fork_safe = false`` in its manifest and runs
one process per cell), and then answers requests, one JSON object per line on stdin, with JSON
lines on stdout (its own stdout is moved to stderr, the log, so that nothing an import prints can
garble them):

- ``{"ready": pid}`` once the adapter's modules are imported, or ``{"refused": why}`` and exit 1;
- request ``{"id": N, "argv": [...], "cwd": DIR, "stdout": PATH, "stderr": PATH}``:
  ``{"id": N, "pid": CHILD}`` once forked (or ``{"id": N, "error": why}``), and
  ``{"id": N, "exit_code": C}`` (``C`` negative: killed by signal ``-C``, as :mod:`subprocess`
  says it) when the child has ended.

Each child is what ``python <entry> <cell> <observation>`` would be, minus the imports: a new
session (its own process group, which the harness kills as a whole), stdin from ``/dev/null``,
stdout and stderr to the cell's files, default signal dispositions, ``sys.argv`` and ``sys.path[0]``
as the interpreter sets them for a script, the entry executed again as ``__main__`` (its imports
are already loaded, its module-level code such as ``_STARTED`` runs afresh), and at the end what
the interpreter does on exit: non-daemon threads joined, ``atexit`` handlers run, streams flushed.

When a child ends, the rest of its process group is killed while the child is still a zombie (so
its group id cannot be reused), then the child is reaped: the same as the harness does for a
process it started. When stdin closes (the harness is done, or died), every child still running is
killed with its group, reaped, and the worker exits.
"""

from __future__ import annotations

import ast
import atexit
import importlib
import json
import os
import runpy
import select
import signal
import sys
import threading
import traceback
from typing import Any

PRELOAD_NAME = "__mcpcm_preload__"
_REPLIES = 1
"""The descriptor the replies go to (stdout at start; moved off fd 1 by :func:`serve`)."""
_PRIVATE: list[int] = []
"""The worker's own descriptors (replies, wakeup pipe), closed in every child."""


def _send(message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(_REPLIES, data) :]


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter makes of ``sys.exit(code)``."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _child(entry: str, request: dict[str, Any]) -> None:
    """Become the cell's adapter process; never returns."""
    code = 1
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        for fd in _PRIVATE:
            os.close(fd)
        # The dispositions the interpreter starts a script with.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for source, target in ((null, 0), (out, 1), (err, 2)):
            os.dup2(source, target)
            os.close(source)
        os.chdir(request["cwd"])
        sys.argv = [str(arg) for arg in request["argv"]]
        sys.path[0] = os.path.dirname(os.path.abspath(entry))
        try:
            runpy.run_path(entry, run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException:  # what an uncaught exception does to a script: traceback, status 1
            traceback.print_exc()
            code = 1
        shutdown = getattr(threading, "_shutdown", None)  # the interpreter's own join of non-daemon threads
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _fork(entry: str, request: dict[str, Any]) -> int:
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(entry, request)
    return pid


def _status_code(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _reap(children: dict[int, int]) -> None:
    """Report every child that has ended: kill the rest of its group first, then reap it."""
    while children:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == 0:
            return
        pid = info.si_pid
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _, status = os.waitpid(pid, 0)
        request_id = children.pop(pid, None)
        if request_id is not None:
            _send({"id": request_id, "exit_code": _status_code(status)})


def _kill_all(children: dict[int, int]) -> None:
    for pid in list(children):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in list(children):
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        children.pop(pid, None)


def preload(entry: str, modules: list[str]) -> None:
    """Run the top-level ``import`` / ``from ... import`` statements of ``entry``, in order, in a
    namespace of their own, then import ``modules``: the modules the adapter imports are loaded,
    none of its code runs."""
    with open(entry, encoding="utf-8") as source:
        tree = ast.parse(source.read(), filename=entry)
    imports = ast.Module(
        body=[node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))], type_ignores=[]
    )
    exec(compile(imports, entry, "exec"), {"__name__": PRELOAD_NAME, "__file__": entry})
    for module in modules:
        importlib.import_module(module)


def serve(entry: str, modules: list[str]) -> int:
    """Preload ``entry`` and ``modules``, then fork a child per request until stdin closes."""
    global _REPLIES
    _REPLIES = os.dup(1)  # replies keep the pipe; whatever the adapter's imports print goes to the log
    os.dup2(2, 1)
    _PRIVATE.append(_REPLIES)
    sys.path[0] = os.path.dirname(os.path.abspath(entry))
    try:
        preload(entry, modules)
    except BaseException as exc:  # the adapter does not even import: each cell will show it in process mode
        _send({"refused": f"importing {entry} failed: {type(exc).__name__}: {exc}"})
        return 1
    running = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if running:
        _send({"refused": f"thread(s) running after importing the adapter, not safe to fork: {', '.join(running)}"})
        return 1
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    _PRIVATE.extend((wake_r, wake_w))
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a Python handler, so that the wakeup fd is written
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness stops the worker by closing stdin
    children: dict[int, int] = {}
    _send({"ready": os.getpid()})
    pending = b""
    try:
        while True:
            try:
                readable, _, _ = select.select([0, wake_r], [], [])
            except InterruptedError:
                continue
            if wake_r in readable:
                os.read(wake_r, 4096)
                _reap(children)
            if 0 not in readable:
                continue
            chunk = os.read(0, 65536)
            if not chunk:
                return 0
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                request = json.loads(line)
                try:
                    pid = _fork(entry, request)
                except OSError as exc:
                    _send({"id": request["id"], "error": f"fork failed: {exc}"})
                    continue
                children[pid] = request["id"]
                _send({"id": request["id"], "pid": pid})
            _reap(children)
    finally:
        _kill_all(children)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: fork_worker.py <adapter entry file> [module ...]", file=sys.stderr)
        sys.exit(2)
    sys.exit(serve(sys.argv[1], sys.argv[2:]))
