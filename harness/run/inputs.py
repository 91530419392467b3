"""A cell's inputs: a digest of everything that can change its outcome, computed without running anything.

:class:`Digests` hashes, per cell, named *parts* (``docs/architecture.md``, *Reuse*, says why each
is there):

- ``cell``: the cell file the adapter receives (coordinates, options, calls, budgets, the follow-up,
  the contract version), with its run-specific paths replaced by placeholders;
- ``case``: the case's catalog entry (every field: family, clause, schema modes, budget, calls,
  waits, a recorded case's tool call and case file);
- ``adapter``: the adapter directory's sources (manifest, entry, lockfiles; build outputs left out);
- ``support``: its runtime's support library under ``clients/_support/`` (an agent host's: with
  the scripted model, ``servers/model/``);
- ``environment``: what the backend says of the adapter's environment and how its cells start
  (:meth:`harness.run.backends.Backend.inputs`: the environment's fingerprint, the isolation, the
  snapshot's or ahead-of-time cache's recipe; the image id on the docker backend);
- ``server``: the reference server's sources;
- ``harness``: the harness modules that shape how a cell is run and what its record holds
  (:data:`RUN_MODULES`, and those of the adapter's runtime, kind and backend), and the backend;
- ``platform``: the operating system, the machine's architecture and the Python that runs the
  reference server.

The digest is the hash of the parts; two cells with the same digest have the same inputs, and a
part that differs says why a cell ran again. A live cell (``--server-cmd``, ``--server-url``) talks
to a server the harness cannot see into, so it has no digest and is never reused.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import platform
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness.layout import MODEL_DIRECTORY, Layout
from harness.matrix.cells import Cell, Live, Replayed
from harness.matrix.manifest import Adapter
from harness.prepare.toolchains import COMPILED, sources
from harness.records import CellFile, CellInputs

RECIPE = "1"
"""Part of every digest: changing what a digest covers makes every earlier cell a stranger."""
SHORT = 16
"""Hex digits kept of each part's hash (64 bits: a collision among a run's parts is not a concern)."""
HARNESS = Path(__file__).resolve().parent.parent
RUN_MODULES = (
    "run/runner.py",
    "system/process.py",
    "run/observation.py",
    "records.py",
    "layout.py",
    "prepare/environments.py",
    "run/backends/__init__.py",
    "system/reference_server.py",
    "run/backends/warm_server.py",
)
"""The harness's files that decide how any adapter is run and what its record keeps: the record and
its observation's validation and elision, the process bounds, the environment's command line, an
HTTP cell's reference server. The cell file's format and budgets are in the ``cell`` part itself;
the classification and the report are not inputs (a stored cell is classified again with today's
rules)."""
RUNTIME_MODULES = {
    "python": ("system/workers.py",),
    "node": ("prepare/node_releases.py", "prepare/snapshots.py", "prepare/snapshot"),
    "go": ("prepare/toolchains.py",),
    "rust": ("prepare/toolchains.py",),
    "java": ("prepare/toolchains.py", "prepare/jdk_releases.py", "prepare/aot_cache.py"),
}
"""The harness's files that decide how the adapters of one runtime start: a Python adapter's warm
worker, a Node adapter's release and snapshot, a compiled adapter's build and command line, a Java
adapter's JDK and ahead-of-time cache."""
KIND_MODULES = {"host": ("system/loopback.py",)}
"""An agent host's cell runs in a network namespace of its own."""
BACKEND_MODULES = {
    "local": ("run/backends/local.py",),
    "docker": ("run/backends/docker.py", "prepare/images.py", "prepare/dockerfiles"),
}
SUPPORT_FILES = {"python": ("*.py",), "node": ("*.mjs",)}
"""A runtime's support library: the files of ``clients/_support/`` its adapters import (a compiled
runtime's: ``clients/_support/<runtime>/``)."""
PLACEHOLDER_SERVER = Path("<servers>/reference")
PLACEHOLDER_CELL = Path("<cell>")
PLACEHOLDER_URL = "<url>"
PLACEHOLDER_PYTHON = "<python>"


def combine(parts: dict[str, str]) -> CellInputs:
    """Inputs of named parts, with their digest."""
    return {"digest": hash_of(RECIPE.encode(), _json(parts)), "parts": parts}


def hash_of(*chunks: bytes) -> str:
    """A short hash of ``chunks`` (each length-prefixed, so that no two sequences run together)."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(len(chunk).to_bytes(8, "big") + chunk)
    return digest.hexdigest()[:SHORT]


def _files(root: Path, paths: Iterable[Path]) -> str:
    """The hash of files' paths under ``root`` and their bytes (an absent file counts as such)."""
    chunks: list[bytes] = []
    for path in paths:
        chunks.append(str(path.relative_to(root)).encode())
        chunks.append(path.read_bytes() if path.is_file() else b"<absent>")
    return hash_of(*chunks)


def _tree(directory: Path, patterns: tuple[str, ...] = ("*",)) -> list[Path]:
    """The files under ``directory`` (``patterns``: globs at its top level instead), build outputs
    and byte code left out, in a stable order."""
    if not directory.is_dir():
        return []
    if patterns == ("*",):
        return list(sources(directory))
    return sorted(path for pattern in patterns for path in directory.glob(pattern) if path.is_file())


def case_entry(cell: Cell) -> dict[str, Any]:
    """The case's catalog entry, every field, with a recorded case's case file and tool call (a live
    cell is never reused)."""
    entry = {f.name: getattr(cell.case, f.name) for f in dataclasses.fields(cell.case)}
    if isinstance(cell.source, Replayed):
        entry["replay"], entry["tool_call"] = cell.source.case_file, cell.source.tool_call
    return entry


def cell_file(cell: Cell) -> CellFile:
    """The cell file as the adapter would receive it, its run-specific paths as placeholders."""
    url = PLACEHOLDER_URL if cell.is_http and not cell.starts_server else None
    return cell.to_file(PLACEHOLDER_SERVER, PLACEHOLDER_CELL, url, python=PLACEHOLDER_PYTHON)


def _json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr).encode()


@functools.cache
def platform_facts() -> str:
    """The OS (its release, not the kernel's build), the architecture, the C library and the Python
    that runs the reference server."""
    try:
        system = platform.freedesktop_os_release().get("PRETTY_NAME", platform.system())
    except OSError:
        system = platform.system()
    libc = "-".join(platform.libc_ver())
    return f"{system}; {platform.machine()}; {libc}; python {sys.version.split()[0]}"


class Digests:
    """Each cell's inputs, with the parts shared by many cells (an adapter's, the server's) hashed once.

    ``environment``: the backend's account of an adapter's environment
    (:meth:`harness.run.backends.Backend.inputs`).
    """

    def __init__(self, layout: Layout, backend: str, environment: Callable[[Adapter], str]) -> None:
        self.layout = layout
        self.backend = backend
        self._environment = environment
        self._adapters: dict[str, dict[str, str]] = {}
        self._harnesses: dict[tuple[str, ...], str] = {}

    @functools.cached_property
    def _shared(self) -> dict[str, str]:
        return {
            "server": _files(self.layout.server, _tree(self.layout.server)),
            "platform": hash_of(platform_facts().encode()),
        }

    def _harness(self, adapter: Adapter) -> str:
        """The harness's files that shape how this adapter's cells run (:data:`RUN_MODULES` and
        those of its runtime, kind and backend), and the backend."""
        names = (
            *RUN_MODULES,
            *RUNTIME_MODULES.get(adapter.runtime, ()),
            *KIND_MODULES.get(adapter.kind, ()),
            *BACKEND_MODULES.get(self.backend, ()),
        )
        if names not in self._harnesses:  # adapters of one runtime and kind share it
            paths = [path for name in names for path in (_tree(HARNESS / name) or [HARNESS / name])]
            self._harnesses[names] = hash_of(self.backend.encode(), _files(HARNESS, paths).encode())
        return self._harnesses[names]

    def _adapter_parts(self, adapter: Adapter) -> dict[str, str]:
        key = f"{adapter.name}\0{adapter.directory}"
        if key not in self._adapters:
            support = self.layout.support
            if adapter.runtime in COMPILED:
                library = _tree(support / adapter.runtime)
            else:
                library = _tree(support, SUPPORT_FILES.get(adapter.runtime, ()))
            shared = _files(support, library)
            if adapter.kind == "host":
                model = self.layout.server.parent / MODEL_DIRECTORY
                shared = hash_of(shared.encode(), _files(model, _tree(model)).encode())
            self._adapters[key] = {
                "adapter": _files(adapter.directory, _tree(adapter.directory)),
                "support": shared,
                "environment": hash_of(self._environment(adapter).encode()),
                "harness": self._harness(adapter),
            }
        return self._adapters[key]

    def of(self, cell: Cell) -> CellInputs | None:
        """The cell's inputs (its digest and parts); None for a live cell, which is never reused."""
        if isinstance(cell.source, Live):
            return None
        parts = {
            "cell": hash_of(_json(cell_file(cell))),
            "case": hash_of(_json(case_entry(cell))),
            **self._adapter_parts(cell.adapter),
            **self._shared,
        }
        return combine(parts)


def changed(before: CellInputs, now: CellInputs) -> list[str]:
    """The parts whose hashes differ between two of a cell's inputs, in the order of ``now``'s parts."""
    return [name for name, value in now["parts"].items() if before["parts"].get(name) != value]
