"""Run metadata: what ran, where, with which versions (``meta.json`` of every run)."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from . import __version__, environments, toolchains
from .backends import Backend, PrepareError
from .manifest import Adapter
from .records import AdapterMeta, RunMeta, RunSettings


def harness_commit(root: Path) -> str:
    """The checkout's commit, with ``-dirty`` when the work tree has changes; ``unknown`` outside git."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    if not commit:
        return "unknown"
    return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


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
