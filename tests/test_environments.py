"""Local environments: built with uv (pip where uv is absent), cached by fingerprint, built at once."""

from __future__ import annotations

import threading
from pathlib import Path

from harness.layout import Layout
from harness.matrix.manifest import Adapter, Variant
from harness.prepare import environments
from harness.run import runs

PIN = "six==1.17.0"
"""A small pure-Python package the strands adapter also pins."""


def _adapter(root: Path, name: str, requirements: str | None = PIN) -> Adapter:
    directory = root / "clients" / name
    directory.mkdir(parents=True)
    (directory / "adapter.py").write_text("")
    if requirements is not None:
        (directory / "requirements.txt").write_text(requirements + "\n")
    return Adapter(name, name, "python", "six", "adapter.py", ("stdio",), (Variant("default", "", {}),), directory)


def test_a_python_environment_is_built_with_uv_and_then_cached(tmp_path):
    layout = Layout(tmp_path)
    adapter = _adapter(tmp_path, "uv-built")
    assert environments.uv_executable() is not None, "uv is a pinned harness dependency"
    assert environments.prepare(layout, adapter) is True
    log = (layout.envs / "uv-built.log").read_text()
    assert " venv " in log and " pip install " in log and log.startswith(f"$ {environments.uv_executable()}")
    assert environments.installed_version(layout, adapter) == "1.17.0"
    assert environments.prepare(layout, adapter) is False, "an unchanged fingerprint rebuilds nothing"


def test_pip_builds_it_where_uv_is_absent(tmp_path, monkeypatch):
    monkeypatch.setattr(environments, "uv_executable", lambda: None)
    layout = Layout(tmp_path)
    adapter = _adapter(tmp_path, "pip-built")
    assert environments.prepare(layout, adapter) is True
    log = (layout.envs / "pip-built.log").read_text()
    assert "-m venv" in log and "-m pip install" in log
    assert environments.installed_version(layout, adapter) == "1.17.0"


class _Builds:
    """A backend whose prepare records how many builds run at once; with ``together``, each build
    waits until that many are running (a barrier: it opens only if they run at once)."""

    def __init__(self, name: str, together: int = 0) -> None:
        self.name = name
        self.barrier = threading.Barrier(together, timeout=30) if together else None
        self.running = self.peak = self.built = 0
        self._lock = threading.Lock()

    def prepare(self, adapter: Adapter) -> bool:
        with self._lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        if self.barrier is not None:
            self.barrier.wait()  # BrokenBarrierError, and a failed build, when they do not meet
        with self._lock:
            self.running -= 1
            self.built += 1
        return True


def test_independent_local_environments_are_built_at_once_and_images_one_by_one(tmp_path):
    adapters = [_adapter(tmp_path, f"a{index}", None) for index in range(3)]
    local, docker = _Builds("local", together=3), _Builds("docker")
    assert runs.prepare(local, adapters, build=True, jobs=3) == {}  # type: ignore[arg-type]
    assert runs.prepare(docker, adapters, build=True, jobs=3) == {}  # type: ignore[arg-type]
    assert local.built == 3 and local.peak == 3, "the three local builds ran at once"
    assert docker.built == 3 and docker.peak == 1, "image builds do not overlap"
