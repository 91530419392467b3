"""Backends: where a cell's adapter (and, for HTTP cells, the reference server) runs.

A :class:`Backend` prepares each adapter's environment and runs one cell bounded by its budget,
leaving the cell directory (:class:`harness.layout.CellFiles`) with the cell file, the captured
stdout and stderr, the server's journal and (when the adapter wrote one) the raw observation.
Everything else (the record, validation, classification) is the runner's and is the same for
every backend. A backend that cannot make an adapter ready raises :class:`PrepareError`.

- ``local`` (:mod:`.local`): the host's processes, a venv or ``npm ci`` per adapter (the default).
- ``docker`` (:mod:`.docker`): one image per adapter, one container per cell.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from harness.errors import PrepareError
from harness.layout import CellFiles, Layout
from harness.matrix.cells import Cell
from harness.matrix.manifest import Adapter
from harness.system.process import Finished

NAMES = ("local", "docker")


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

    def inputs(self, adapter: Adapter) -> str:
        """What of the adapter's environment, and of how its cells start, can change an outcome, in
        words (:mod:`harness.run.inputs` hashes it), without building anything: the local environment's
        fingerprint and warm start, or the image's id."""
        ...

    def run(self, cell: Cell, files: CellFiles) -> Finished:
        """Run ``cell`` into its directory within ``cell.budget_s``; kill and reap everything it started."""
        ...

    def kill_all(self) -> None:
        """Kill every cell still running (the run was interrupted). Safe to call from a signal handler."""
        ...

    def describe(self, adapters: list[Adapter]) -> dict[str, Any]:
        """Run metadata: ``backend`` and, per adapter, its runtime and package versions (and image)
        and its isolation (:meth:`isolation_of`)."""
        ...

    def isolation_of(self, adapter: Adapter) -> str:
        """How the adapter's cells run: ``worker``, ``process (why)``, ``container``."""
        ...

    def server_start(self) -> str:
        """How HTTP cells' reference servers start: ``worker`` (forked from a warm worker),
        ``process (why)``, ``container``."""
        ...

    def close(self) -> None:
        """Release what the backend holds; afterwards nothing it started is left."""
        ...


Factory = Callable[[str], Backend]
"""Makes the backend of a given name (the command line binds the layout and the docker options)."""


def create(name: str, layout: Layout, **options: Any) -> Backend:
    """The backend called ``name`` (options: the docker backend's settings)."""
    if name == "local":
        from .local import LocalBackend

        unknown = sorted(set(options) - {"isolation"})
        if unknown:
            raise ValueError(f"the local backend takes only isolation (got {', '.join(unknown)})")
        return LocalBackend(layout, **options)
    if name == "docker":
        from .docker import DockerBackend

        return DockerBackend(layout, **options)
    raise PrepareError(f"unknown backend {name!r}; known: {', '.join(NAMES)}")
