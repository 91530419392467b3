"""Run metadata: what ran, where, with which versions (``meta.json`` of every run)."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import environments
from .environments import Layout
from .manifest import Adapter

HARNESS_VERSION = "0.1.0"


def harness_commit(root: Path) -> str:
    """The checkout's commit, with ``-dirty`` when the work tree has changes; ``unknown`` outside git."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    if not commit:
        return "unknown"
    return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def adapter_meta(layout: Layout, adapter: Adapter) -> dict[str, Any]:
    return {
        "title": adapter.title,
        "runtime": adapter.runtime,
        "runtime_version": environments.runtime_version(adapter.runtime),
        "package": adapter.package or None,
        "package_version": environments.installed_version(layout, adapter),
        "variants": {v.id: {"column": adapter.column(v), "description": v.description,
                            "options": v.options} for v in adapter.variants},
    }


def collect(layout: Layout, adapters: list[Adapter], run_id: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The metadata of a run that is about to start."""
    node = None
    try:
        node = environments.runtime_version("node")
    except (environments.PrepareError, OSError, subprocess.CalledProcessError):
        pass
    return {
        "run_id": run_id,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "finished": None,
        "harness_version": HARNESS_VERSION,
        "harness_commit": harness_commit(layout.root),
        "backend": "local",
        "os": platform.platform(),
        "machine": {"cpus": cpu_count(), "arch": platform.machine()},
        "python": platform.python_version(),
        "node": node,
        "settings": settings,
        "adapters": {adapter.name: adapter_meta(layout, adapter) for adapter in adapters},
    }


def cpu_count() -> int:
    """The cores this process may use (the default number of parallel cells)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
