"""Run metadata: what ran, where, with which versions (``meta.json`` of every run)."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from typing import Any, cast

from harness import __version__
from harness.errors import PrepareError
from harness.layout import harness_commit
from harness.matrix.manifest import Adapter
from harness.prepare import environments, toolchains
from harness.records import AdapterMeta, RunMeta, RunSettings

from .backends import Backend


def adapter_meta(adapter: Adapter, described: dict[str, Any]) -> AdapterMeta:
    """One adapter's metadata; ``described``: its versions (and image) as the backend reports them."""
    return cast(
        AdapterMeta,
        {  # ``described`` holds the backend's version keys (records.AdapterMeta)
            "title": adapter.title,
            "kind": adapter.kind,
            "runtime": adapter.runtime,
            "package": adapter.package or None,
            "protocols": list(adapter.protocols),
            **described,
            "variants": {
                v.id: {"column": adapter.column(v), "description": v.description, "options": v.options}
                for v in adapter.variants
            },
        },
    )


def collect(backend: Backend, adapters: list[Adapter], run_id: str, settings: RunSettings) -> RunMeta:
    """The metadata of a run that is about to start on ``backend``."""
    node = None
    try:
        node = environments.runtime_version("node")
    except (PrepareError, OSError, subprocess.CalledProcessError):
        pass
    described = backend.describe([adapter for adapter in adapters if not adapter.broken])
    return {
        "run_id": run_id,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "finished": None,
        "harness_version": __version__,
        "harness_commit": harness_commit(backend.layout.root),
        "backend": described["backend"],
        "os": platform.platform(),
        "machine": {"cpus": cpu_count(), "arch": platform.machine()},
        "python": platform.python_version(),
        "node": node,
        "toolchains": toolchains.host_toolchains(),
        "settings": settings,
        "reference_server": backend.server_start(),
        "adapters": {
            adapter.name: adapter_meta(adapter, described["adapters"].get(adapter.name, {})) for adapter in adapters
        },
    }


def cpu_count() -> int:
    """The cores this process may use (``prepare``'s and ``probe``'s default ``--jobs``; ``run``'s is one more)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
