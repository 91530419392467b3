"""The local backend: adapters run as host processes, in their own process groups.

Python adapters run on their venv (``.envs/<name>``), Node adapters on the host's ``node`` with
their ``node_modules`` (:mod:`harness.environments`); HTTP cells get a reference server on
127.0.0.1 started by the harness.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .. import environments, process
from ..cells import Cell
from ..environments import Layout
from ..manifest import Adapter
from ..process import Finished
from . import CELL_FILE, JOURNAL, RAW_OBSERVATION

HTTP_READY_S = 10.0


def parse_url_line(line: str) -> str:
    """The URL from the reference server's ready line ``{"url": ...}``."""
    try:
        return str(json.loads(line)["url"])
    except (ValueError, KeyError, TypeError) as exc:
        raise process.ServiceError(f"reference server printed {line[:200]!r}, not {{\"url\": ...}}") from exc


class LocalBackend:
    name = "local"

    def __init__(self, layout: Layout) -> None:
        self.layout = layout

    def prepare(self, adapter: Adapter) -> bool:
        return environments.prepare(self.layout, adapter)

    def check(self, adapter: Adapter) -> None:
        return None  # a run prepares local environments itself

    @contextmanager
    def _reference_server(self, cell: Cell, directory: Path) -> Iterator[str | None]:
        """For an HTTP cell, run the reference server while inside and yield its URL; else None.

        On leaving, the server is stopped (and has journaled its exit) before the journal is read.
        """
        if not cell.is_http:
            yield None
            return
        command = [sys.executable, *cell.server_args(self.layout.server, directory / JOURNAL)]
        service, line = process.start_service(command, stderr=directory / "server-stderr.txt",
                                              ready_timeout_s=HTTP_READY_S)
        try:
            yield parse_url_line(line)
        finally:
            process.stop_service(service)

    def run(self, cell: Cell, directory: Path) -> Finished:
        with self._reference_server(cell, directory) as url:
            cell_file = directory / CELL_FILE
            cell_file.write_text(json.dumps(
                cell.to_file(self.layout.server, directory / JOURNAL, url, python=sys.executable), indent=2))
            return process.run_bounded(
                environments.command(self.layout, cell.adapter, cell_file, directory / RAW_OBSERVATION),
                cwd=cell.adapter.directory,
                env=environments.process_env(self.layout),
                timeout_s=cell.budget_s,
                stdout=directory / "stdout.txt",
                stderr=directory / "stderr.txt",
                marker=str(directory),
            )

    def kill_all(self) -> None:
        process.kill_all_running()

    def describe(self, adapters: list[Adapter]) -> dict[str, Any]:
        return {
            "backend": self.name,
            "adapters": {adapter.name: {
                "runtime_version": environments.runtime_version(adapter.runtime),
                "package_version": environments.installed_version(self.layout, adapter),
            } for adapter in adapters},
        }

    def close(self) -> None:
        return None
