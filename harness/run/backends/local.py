"""The local backend: adapters run as host processes, in their own process groups.

Python adapters run on their venv (``.envs/<name>``), Node adapters on their pinned Node release
with their ``node_modules``, Go, Rust and Java adapters as what their build left in ``.envs/<name>``
(:mod:`harness.prepare.environments`, :mod:`harness.prepare.toolchains`); HTTP cells get a reference server on
127.0.0.1 started by the harness.

Isolation ``worker`` (the default) starts cells warm: a Python adapter's cells are forked children
of its warm worker (:mod:`harness.system.workers`) unless its manifest says ``fork_safe = false`` or its
worker refused to start; a Node adapter's cells are fresh processes started from its startup
snapshot (:mod:`harness.prepare.snapshots`) unless the snapshot was refused; a Java adapter's cells are
fresh JVMs on its pinned JDK that map its ahead-of-time cache (:mod:`harness.prepare.aot_cache`) unless that
was refused.
Everything else (a Go or Rust binary starts in milliseconds), and every cell under ``process``, is
a fresh process started from the adapter's entry.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from harness.errors import PrepareError
from harness.layout import CellFiles, Layout
from harness.matrix.cells import Cell, Live
from harness.matrix.manifest import Adapter
from harness.prepare import aot_cache, environments, snapshots, toolchains
from harness.system import loopback, process, workers
from harness.system.process import Finished
from harness.system.reference_server import fresh_server

from . import warm_server

WARM_STARTS = {"node": "snapshot", "java": "ahead-of-time cache"}
"""The runtimes whose cells each stay a fresh process but start warm, and from what."""


class LocalBackend:
    name = "local"

    def __init__(self, layout: Layout, isolation: str = "worker") -> None:
        if isolation not in workers.ISOLATIONS:
            raise ValueError(f"isolation {isolation!r}: expected one of {', '.join(workers.ISOLATIONS)}")
        self.layout = layout
        self.isolation = isolation
        self._workers = workers.WorkerPool()
        self._warm_starts: dict[str, workers.WarmStart] = {}
        """Per Node or Java adapter (``WARM_STARTS``), its snapshot or ahead-of-time caches (once prepared)."""

    def _why_cold(self, adapter: Adapter) -> str | None:
        """Why the adapter's cells cannot start warm (forked from a worker, or from a snapshot or an
        ahead-of-time cache), or None when they can."""
        if self.isolation != "worker":
            return "--isolation process"
        what = WARM_STARTS.get(adapter.runtime)
        if what is not None:
            start = self._warm_starts.get(adapter.name)
            if start is None:
                return f"no {what}: not prepared"
            return f"{what} refused: {start.refused}" if start.refused else None
        if adapter.runtime in toolchains.COMPILED:
            return f"a native {adapter.runtime} binary starts as a process of its own"
        if not adapter.fork_safe:
            return "fork_safe = false in adapter.toml"
        refused = self._workers.refused.get(adapter.name)
        return f"worker refused: {refused}" if refused else None

    def _worker(self, adapter: Adapter) -> workers.Worker | None:
        """The adapter's warm worker (started on first use), or None when its cells run as processes."""
        if adapter.runtime != "python" or self._why_cold(adapter) is not None:
            return None
        log = self.layout.envs / f"{adapter.name}.worker.log"
        command = environments.worker_command(self.layout, adapter)
        env = environments.process_env(self.layout)
        return self._workers.get(adapter.name, command, cwd=adapter.directory, env=env, log=log)

    def isolation_of(self, adapter: Adapter) -> str:
        """How the adapter's cells run: ``worker`` (Python), ``snapshot`` (Node), ``aot-cache`` (Java),
        or ``process (why)``."""
        why = self._why_cold(adapter)
        if why is not None:
            return f"process ({why})"
        return {"python": "worker", "node": "snapshot", "java": "aot-cache"}[adapter.runtime]

    def prepare(self, adapter: Adapter) -> bool:
        """The adapter's environment and, under ``worker`` isolation, a Node adapter's snapshot or a
        Java adapter's ahead-of-time caches."""
        if adapter.kind == "host":
            try:
                loopback.check()
            except loopback.LoopbackUnavailable as exc:
                raise PrepareError(f"{adapter.name}: {exc}") from exc
        built = environments.prepare(self.layout, adapter)
        if adapter.runtime in WARM_STARTS and self.isolation == "worker":
            ensure = snapshots.ensure if adapter.runtime == "node" else aot_cache.ensure
            self._warm_starts[adapter.name], made = ensure(self.layout, adapter)
            built = built or made
        return built

    def inputs(self, adapter: Adapter) -> str:
        """The environment's fingerprint (lockfile, runtime or toolchain, the build recipe), the
        isolation and the warm start's recipe (a snapshot's or ahead-of-time cache's)."""
        start = ""
        if self.isolation == "worker" and adapter.runtime in WARM_STARTS:
            start = snapshots.recipe() if adapter.runtime == "node" else aot_cache.recipe()
        return f"{environments.fingerprint(adapter)}; isolation {self.isolation}; {start}"

    def _command(self, cell: Cell, files: CellFiles) -> list[str]:
        """The cell's command line: from the adapter's snapshot or ahead-of-time cache (the one
        of the cell's transport) where it starts warm, else its entry."""
        adapter = cell.adapter
        warm = self._warm_starts.get(adapter.name) if self._why_cold(adapter) is None else None
        if warm is None or warm.file is None:
            return environments.command(self.layout, adapter, files.cell, files.raw_observation)
        if adapter.runtime == "node":
            start = snapshots.command(environments.node_for(self.layout, adapter), warm.file, adapter.entry_path)
        else:
            env_dir = environments.env_dir(self.layout, adapter)
            java = environments.java_for(self.layout, adapter)
            cache = aot_cache.cache_file(warm, cell.transport)
            start = toolchains.run_command(adapter, env_dir, java=java, archive=cache)
        return [*start, str(files.cell), str(files.raw_observation)]

    def check(self, adapter: Adapter) -> None:
        return None  # a run prepares local environments itself

    @contextmanager
    def _reference_server(self, cell: Cell, files: CellFiles) -> Iterator[tuple[str | None, tuple[int, ...]]]:
        """For an HTTP cell, run the reference server while inside; yield its URL and its pid (which the
        cell's cleanup must spare), or ``(None, ())`` where the adapter starts it (:attr:`Cell.starts_server`).

        Under ``worker`` isolation the server is forked from the run's warm server worker
        (:mod:`.warm_server`), else (and for live mode's proxy) started as a process. On leaving, the
        server is stopped (and has journaled its exit) before the journal is read.
        """
        if cell.starts_server:
            yield None, ()
            return
        with ExitStack() as stack:
            url, pid = self._start_server(stack, cell, files)
            yield url, (pid,)

    def _start_server(self, stack: ExitStack, cell: Cell, files: CellFiles) -> tuple[str, int]:
        """Start the cell's reference server, its stop pushed onto ``stack``: its URL and pid."""
        worker = self._server_worker() if not isinstance(cell.source, Live) else None
        if worker is not None:
            try:
                return stack.enter_context(
                    warm_server.serve(worker, cell.server_options(files.directory), files, self.layout)
                )
            except workers.NotForked:
                pass  # the worker is gone and nothing ran: this server starts as a process
        command = [sys.executable, *cell.server_args(self.layout.server, files.directory)]
        return stack.enter_context(fresh_server(command, files.server_stderr))

    def _server_worker(self) -> workers.Worker | None:
        """The run's warm reference server worker (started on first use), or None under ``process``
        isolation or when it would not start."""
        if self.isolation != "worker":
            return None
        log = self.layout.envs / "reference-server.worker.log"
        command = warm_server.worker_command(self.layout)
        return self._workers.get(warm_server.WORKER_NAME, command, cwd=Path.cwd(), env=dict(os.environ), log=log)

    def run(self, cell: Cell, files: CellFiles) -> Finished:
        with self._reference_server(cell, files) as (url, spare):
            files.cell.write_text(
                json.dumps(cell.to_file(self.layout.server, files.directory, url, python=sys.executable), indent=2)
            )
            command = self._command(cell, files)
            worker = self._worker(cell.adapter)
            if worker is not None:
                try:
                    return worker.run(
                        command[1:],
                        cwd=cell.adapter.directory,
                        stdout=files.stdout,
                        stderr=files.stderr,
                        timeout_s=cell.budget_s,
                        marker=str(files.directory),
                        spare=spare,
                    )
                except workers.NotForked:
                    pass  # the worker is gone and nothing ran: this cell runs as a process
            return process.run_bounded(
                loopback.command(command) if cell.adapter.kind == "host" else command,
                cwd=cell.adapter.directory,
                env=environments.process_env(self.layout, cell.adapter),
                timeout_s=cell.budget_s,
                stdout=files.stdout,
                stderr=files.stderr,
                marker=str(files.directory),
                spare=spare,
            )

    def server_start(self) -> str:
        if self.isolation != "worker":
            return "process (--isolation process)"
        refused = self._workers.refused.get(warm_server.WORKER_NAME)
        return f"process (worker refused: {refused})" if refused else "worker"

    def kill_all(self) -> None:
        process.kill_all_running()

    def describe(self, adapters: list[Adapter]) -> dict[str, Any]:
        return {
            "backend": self.name,
            "adapters": {
                adapter.name: {
                    "runtime_version": environments.adapter_runtime_version(adapter),
                    "package_version": environments.installed_version(self.layout, adapter),
                    "isolation": self.isolation_of(adapter),
                }
                for adapter in adapters
            },
        }

    def close(self) -> None:
        self._workers.close()
