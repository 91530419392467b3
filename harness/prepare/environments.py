"""Client environments for the local backend: a venv per Python adapter, ``npm ci`` per Node one
(on the adapter's pinned Node release, :mod:`harness.prepare.node_releases`), a build per Go, Rust or Java
one (:mod:`harness.prepare.toolchains`).

Environments are cached: a stamp file records a hash of the dependency files (a compiled adapter:
all its files) and the runtime or toolchain version, and :func:`prepare` does nothing when the stamp
still matches. Python environments are built with ``uv`` (pinned as a harness dependency, so every
nox session has it) and with ``venv`` and ``pip`` where ``uv`` is absent or ``MCPCM_INSTALLER=pip``
asks for them (the benchmark's baseline); both install the same exact pins of ``requirements.txt``.
Building one adapter's environment touches nothing of another's, so they can be built at once.
"""

from __future__ import annotations

import compileall
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

from harness.errors import PrepareError
from harness.layout import Layout
from harness.matrix import versions
from harness.matrix.manifest import Adapter
from harness.system import process

from . import jdk_releases, node_releases, toolchains

STAMP = ".mcpcm-stamp"
PYTHON_DEPS: tuple[str, ...] = ("requirements.txt",)
NODE_DEPS: tuple[str, ...] = ("package.json", "package-lock.json")


def node_executable() -> str:
    """The host's ``node`` on PATH (for node adapters that pin no release); a clear error when there is none."""
    node = shutil.which("node")
    if node is None:
        raise PrepareError("node is not on PATH: Node >= 18 is needed for the node adapters")
    return node


@functools.cache
def runtime_version(runtime: str) -> str:
    """The version of the host's runtime of this kind (asked once per process)."""
    if runtime == "python":
        return sys.version.split()[0]
    if runtime in toolchains.COMPILED:
        return toolchains.runtime_version(runtime) or f"no {runtime} toolchain"
    return subprocess.run([node_executable(), "--version"], capture_output=True, text=True, check=True).stdout.strip()


def adapter_runtime_version(adapter: Adapter) -> str:
    """The version of the runtime the adapter runs on: its pinned Node release or JDK, else the host's."""
    if adapter.runtime == "node" and adapter.node:
        return f"v{adapter.node}"
    if adapter.runtime == "java" and adapter.jdk:
        return jdk_releases.java_version(adapter.jdk)
    return runtime_version(adapter.runtime)


def java_for(layout: Layout, adapter: Adapter) -> Path | None:
    """The ``java`` a Java adapter's cells run on: its pinned JDK (installed on first use), or None
    for the host's."""
    return jdk_releases.install(layout, adapter.jdk) if adapter.jdk else None


def node_for(layout: Layout, adapter: Adapter) -> Path:
    """The ``node`` a node adapter runs on: its pinned release (installed on first use), else the host's."""
    if adapter.node:
        return node_releases.install(layout, adapter.node)
    return Path(node_executable())


RECIPE = "2: byte-compiled at install"
"""Part of every fingerprint: changing how environments are built rebuilds them."""


def _deps(adapter: Adapter) -> tuple[str, ...]:
    """The files an environment is built from (a compiled adapter's: all its files, found by the fingerprint)."""
    if adapter.runtime in toolchains.COMPILED:
        return ()
    return PYTHON_DEPS if adapter.runtime == "python" else NODE_DEPS


def fingerprint(adapter: Adapter) -> str:
    """The hash an environment is cached by: its dependency files (a compiled adapter's: all its
    sources and its shared support), the runtime or toolchain version and :data:`RECIPE`."""
    return _fingerprint(adapter, _deps(adapter))


def _fingerprint(adapter: Adapter, files: tuple[str, ...]) -> str:
    digest = hashlib.sha256(adapter_runtime_version(adapter).encode() + RECIPE.encode())
    if adapter.runtime in toolchains.COMPILED:  # every source file, its shared support, the toolchain
        digest.update(repr(sorted(toolchains.versions(adapter.runtime).items())).encode())
        support = toolchains.support_directory(adapter)
        for path in toolchains.sources(support) if support.is_dir() else ():
            digest.update(f"_support/{path.relative_to(support)}".encode() + b"\0" + path.read_bytes())
        files = tuple(str(path.relative_to(adapter.directory)) for path in toolchains.sources(adapter.directory))
    for name in files:
        path = adapter.directory / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b"<absent>"))
    return digest.hexdigest()


def env_dir(layout: Layout, adapter: Adapter) -> Path:
    """Where the adapter's environment lives (a venv or a build in ``.envs/<name>``, or the adapter's
    ``node_modules``)."""
    if adapter.runtime != "node":
        return layout.envs / adapter.name
    return adapter.directory / "node_modules"


STEP_TIMEOUT_S = 1800.0
"""The longest one build step may take (a cold Rust build of an SDK with its HTTP stack on 2 cores:
minutes); a step still running then is killed with its process group."""


def _run(who: str, command: list[str], cwd: Path, log: Path, env: dict[str, str] | None = None) -> None:
    """Run a build step in a process group of its own, its output appended to ``log``, bounded by
    :data:`STEP_TIMEOUT_S`."""
    with open(log, "ab") as out:
        out.write(f"$ {' '.join(command)}\n".encode())
        out.flush()
        code = _bounded(command, cwd, env, out, STEP_TIMEOUT_S)
    if code is None:
        raise PrepareError(f"{who}: `{' '.join(command)}` did not finish in {STEP_TIMEOUT_S:.0f} s (killed); see {log}")
    if code != 0:
        raise PrepareError(f"{who}: `{' '.join(command)}` exited {code}; see {log}")


def _bounded(command: list[str], cwd: Path, env: dict[str, str] | None, out: IO[bytes], timeout_s: float) -> int | None:
    """Run ``command`` in a process group of its own; kill the group after ``timeout_s`` (None then)."""
    child = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        return child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    finally:
        process.kill_group(child.pid)
        child.wait()


def npm_ci(who: str, directory: Path, log: Path, env: dict[str, str] | None = None) -> None:
    """``npm ci`` in ``directory`` (its lockfile exactly), the output appended to ``log``."""
    npm = shutil.which("npm")
    if npm is None:
        raise PrepareError(f"npm is not on PATH: it installs {who}")
    _run(who, [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], directory, log, env)


def uv_executable() -> str | None:
    """The ``uv`` beside the running interpreter (the harness's own environment), else on PATH;
    None where there is none or ``MCPCM_INSTALLER=pip``."""
    if os.environ.get("MCPCM_INSTALLER") == "pip":
        return None
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.is_file() else shutil.which("uv")


def _python_commands(target: Path, requirements: Path, exclude_newer: str | None = None) -> list[list[str]]:
    """How to make the venv ``target`` and install ``requirements`` into it: uv, or venv and pip.
    ``exclude_newer``: resolve as the index was then (a versioned adapter; uv only, pip cannot)."""
    uv = uv_executable()
    python = str(target / "bin" / "python")
    if uv is not None:
        cutoff = ["--exclude-newer", exclude_newer] if exclude_newer else []
        return [
            [uv, "venv", "--quiet", "--python", sys.executable, str(target)],
            # --compile-bytecode: pip writes .pyc at install, uv does not; where PYTHONDONTWRITEBYTECODE
            # is set, every adapter process would otherwise compile its SDK from source again.
            [
                uv,
                "pip",
                "install",
                *cutoff,
                "--quiet",
                "--compile-bytecode",
                "--python",
                python,
                "-r",
                str(requirements),
            ],
        ]
    return [
        [sys.executable, "-m", "venv", str(target)],
        [python, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r", str(requirements)],
    ]


_compile_lock = threading.Lock()
_compiled: set[Path] = set()


def compile_shared(layout: Layout) -> None:
    """Byte-compile the reference server and the adapters' support modules (every cell imports them;
    where ``PYTHONDONTWRITEBYTECODE`` is set nothing else would write their ``.pyc``), once per
    checkout and process, however many adapters are prepared."""
    with _compile_lock:
        if layout.root in _compiled:
            return
        for directory in (layout.server, layout.support):
            compileall.compile_dir(str(directory), maxlevels=0, quiet=1)
        _compiled.add(layout.root)


def is_ready(layout: Layout, adapter: Adapter) -> bool:
    stamp = env_dir(layout, adapter) / STAMP
    if adapter.runtime in toolchains.COMPILED and not toolchains.artifact(adapter, env_dir(layout, adapter)).is_file():
        return False
    return stamp.is_file() and stamp.read_text() == fingerprint(adapter)


def prepare(layout: Layout, adapter: Adapter) -> bool:
    """Build the adapter's environment unless the cached one matches; True when it was built."""
    compile_shared(layout)
    if adapter.runtime in toolchains.COMPILED:
        toolchains.require(adapter)
    java_for(layout, adapter)  # a Java adapter's pinned JDK, installed once
    if is_ready(layout, adapter):
        return False
    target = env_dir(layout, adapter)
    layout.envs.mkdir(parents=True, exist_ok=True)
    log = layout.envs / f"{adapter.name}.log"
    log.write_bytes(b"")
    if target.exists() and adapter.runtime not in toolchains.COMPILED:
        shutil.rmtree(target)  # a compiled adapter's build directory is the compiler's cache: kept
    if adapter.runtime == "python":
        requirements = adapter.directory / "requirements.txt"
        cutoff = versions.resolved_before(adapter) if versions.is_versioned(layout, adapter) else None
        make_venv, install = _python_commands(target, requirements, cutoff)
        _run(adapter.name, make_venv, layout.root, log)
        if requirements.exists():
            _run(adapter.name, install, adapter.directory, log)
    elif adapter.runtime in toolchains.COMPILED:
        _build(layout, adapter, target, log)
    else:
        lock = adapter.directory / "package-lock.json"
        env = process_env(layout, adapter)  # npm runs on the adapter's node, as do install scripts
        if not lock.exists() and versions.is_versioned(layout, adapter):
            npm_lock(adapter.name, adapter.directory, log, env, before=versions.resolved_before(adapter))
        if not lock.exists():
            raise PrepareError(f"{lock}: missing (pin with a lockfile)")
        npm_ci(adapter.name, adapter.directory, log, env)
    (target / STAMP).write_text(fingerprint(adapter))
    return True


def _build(layout: Layout, adapter: Adapter, target: Path, log: Path) -> None:
    """Compile a Go, Rust or Java adapter into ``target`` (:mod:`harness.prepare.toolchains`)."""
    target.mkdir(parents=True, exist_ok=True)
    (target / STAMP).unlink(missing_ok=True)
    built = toolchains.artifact(adapter, target)
    built.unlink(missing_ok=True)  # a failed build leaves nothing that looks built
    command, extra = toolchains.build_command(adapter, target)
    _run(adapter.name, command, adapter.directory, log, {**process_env(layout), **extra})
    if not built.is_file():
        raise PrepareError(f"{adapter.name}: the build left no {built.relative_to(target)}; see {log}")


def npm_lock(who: str, directory: Path, log: Path, env: dict[str, str], *, before: str) -> None:
    """``npm install --package-lock-only --before`` in ``directory``: a lockfile resolved from its
    package.json as the registry was at ``before``."""
    npm = shutil.which("npm", path=env.get("PATH"))
    if npm is None:
        raise PrepareError(f"npm is not on PATH: it installs {who}")
    options = ["--package-lock-only", f"--before={before}", "--no-audit", "--no-fund", "--loglevel=error"]
    _run(who, [npm, "install", *options], directory, log, env)


def command(layout: Layout, adapter: Adapter, cell_file: Path, observation: Path) -> list[str]:
    """The command line that runs the adapter on one cell."""
    if adapter.runtime in toolchains.COMPILED:
        start = toolchains.run_command(adapter, env_dir(layout, adapter), java=java_for(layout, adapter))
        return [*start, str(cell_file), str(observation)]
    if adapter.runtime == "python":
        interpreter = str(env_dir(layout, adapter) / "bin" / "python")
    else:
        interpreter = str(node_for(layout, adapter))
    return [interpreter, str(adapter.entry_path), str(cell_file), str(observation)]


def worker_command(layout: Layout, adapter: Adapter) -> list[str]:
    """The command line of the adapter's warm worker (a Python adapter: :mod:`harness.system.workers`)."""
    interpreter = str(env_dir(layout, adapter) / "bin" / "python")
    return [interpreter, str(layout.support / "fork_worker.py"), str(adapter.entry_path)]


def process_env(layout: Layout, adapter: Adapter | None = None) -> dict[str, str]:
    """The environment adapters run with: the harness's own, plus the support path; for a node
    adapter with a pinned release, that release's ``bin`` first on PATH (what it spawns as ``node``
    is the same Node)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(layout.support)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("VIRTUAL_ENV", None)
    if adapter is not None and adapter.runtime == "node" and adapter.node:
        env["PATH"] = os.pathsep.join([str(node_for(layout, adapter).parent), env.get("PATH", "")])
    return env


def installed_version(layout: Layout, adapter: Adapter) -> str | None:
    """The installed version of the adapter's package, read from its environment."""
    if not adapter.package:
        return None
    if adapter.runtime in toolchains.COMPILED:
        return toolchains.installed_version(adapter, env_dir(layout, adapter))
    if adapter.runtime == "python":
        python = env_dir(layout, adapter) / "bin" / "python"
        code = f"import importlib.metadata as m; print(m.version({adapter.package!r}))"
        if not python.is_file():  # not prepared (none of its cells was selected)
            return None
        done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
        if done.returncode != 0:
            return None
        return done.stdout.strip() or None
    manifest = env_dir(layout, adapter) / adapter.package / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None
