"""Backends: where a cell's adapter (and, for HTTP cells, the reference server) runs.

A :class:`Backend` prepares each adapter's environment and runs one cell bounded by its budget,
leaving the cell directory with ``cell.json``, ``stdout.txt``, ``stderr.txt``, the server's
``journal.jsonl`` and (when the adapter wrote one) ``observation.raw.json``. Everything else (the
record, validation, classification) is the runner's and is the same for every backend.

- ``local`` (:mod:`.local`): the host's processes, a venv or ``npm ci`` per adapter (the default).
- ``docker`` (:mod:`.docker`): one image per adapter, one container per cell.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ..cells import Cell
from ..environments import Layout
from ..manifest import Adapter
from ..process import Finished

NAMES = ("local", "docker")

JOURNAL = "journal.jsonl"
RAW_OBSERVATION = "observation.raw.json"
CELL_FILE = "cell.json"


class Backend(Protocol):
    """Runs cells somewhere; see the module docstring for the cell-directory contract."""

    name: str
    layout: Layout

    def prepare(self, adapter: Adapter) -> bool:
        """Make the adapter's environment ready; True when something was built. Raises PrepareError."""
        ...

    def check(self, adapter: Adapter) -> None:
        """Raise PrepareError when the adapter cannot run yet (e.g. its image was never built)."""
        ...

    def run(self, cell: Cell, directory: Path) -> Finished:
        """Run ``cell`` into ``directory`` within ``cell.budget_s``; kill and reap everything it started."""
        ...

    def kill_all(self) -> None:
        """Kill every cell still running (the run was interrupted). Safe to call from a signal handler."""
        ...

    def describe(self, adapters: list[Adapter]) -> dict[str, Any]:
        """Run metadata: ``backend`` and, per adapter, its runtime and package versions (and image)."""
        ...

    def close(self) -> None:
        """Release what the backend holds; afterwards nothing it started is left."""
        ...


def create(name: str, layout: Layout, **options: Any) -> Backend:
    """The backend called ``name`` (options: the docker backend's settings)."""
    if name == "local":
        from .local import LocalBackend

        if options:
            raise ValueError(f"the local backend takes no options (got {', '.join(sorted(options))})")
        return LocalBackend(layout)
    if name == "docker":
        from .docker import DockerBackend

        return DockerBackend(layout, **options)
    raise ValueError(f"unknown backend {name!r}; known: {', '.join(NAMES)}")
