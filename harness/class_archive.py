"""Class-data archives: the warm start of a Java adapter, whose cells each stay one fresh JVM.

A JVM cannot fork after start-up and has no heap snapshot in the JDK the project builds with
(OpenJDK 17), so a Java adapter's cells are fresh processes. Most of such a process's CPU time is
loading, verifying and linking the classes of the JDK, the client and its dependencies (Reactor,
Jackson, Ktor) again. Application class-data sharing (AppCDS, JEP 310) keeps the parsed classes in
an archive that each JVM maps instead. At prepare, one training cell per transport the adapter
speaks (the control case ``ok`` against the reference server, like any cell; nothing of it is
recorded) runs with ``-XX:DumpLoadedClassList``; the lists are merged (every class once, in the
order first loaded) and a JVM dumps one static archive of them (``-Xshare:dump``); every cell then
starts with ``-XX:SharedArchiveFile=adapter.jsa``. One archive trained on every transport: an
archive of one stdio run (``-XX:ArchiveClassesAtExit``, as before) left the HTTP client's classes
out, 1,153 of the Java SDK's 4,779 and 1,861 of the Kotlin SDK's 4,412, so that an HTTP cell still
loaded them from the jars (measured in docs/benchmarks.md). The archive holds class metadata only,
no heap and no state of the training runs: a cell runs the same code, only its classes load faster
(held to one process per cell without an archive by the isolation parity).

An archive is refused, and the cells start without one, when a training run fails or overruns
its bound, or the dump writes no archive, or a JVM started as a cell's would not map it; the
reason is kept and shown in the run's metadata. The JVM checks an archive against its class path
and its own build at every start and ignores one that does not match (``-Xshare:auto``), so a stale
archive costs speed, never correctness; it is built again when the jar, a dependency, their paths
(a checkout that shares its ``.envs`` runs them from its own), the JVM, the options or this recipe
change.

Files, in the adapter's environment (``.envs/<name>/class-archive/``): ``adapter.jsa``,
``state.json`` (the key, the refusal, the classes archived), each training cell's directory
(``training-<transport>/``, with its ``classes.lst``), the merged ``classes.lst``, what the dump
printed (``dump.stdout``, ``dump.stderr``) and what the check that a cell's JVM maps the archive
printed (``check.stdout``, ``check.stderr``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import catalog, cells, environments, process, toolchains
from .backends.reference import fresh_server
from .layout import CellFiles, Layout
from .manifest import Adapter
from .workers import WarmStart

RECIPE = "2"
"""Part of every archive's key: changing how archives are built rebuilds them."""
TRAINING_TIMEOUT_S = 120.0
"""A training cell's bound, and the dump's (a control case: a few seconds)."""
CLASS_LIST = "classes.lst"


def directory(layout: Layout, adapter: Adapter) -> Path:
    return environments.env_dir(layout, adapter) / "class-archive"


def recipe() -> str:
    """How class archives are made and mapped (the recipe and the JVM's options), for a cell's
    inputs (:mod:`harness.inputs`)."""
    return f"class archive {RECIPE} {' '.join(toolchains.JAVA_OPTIONS)}"


def _key(layout: Layout, adapter: Adapter) -> str:
    digest = hashlib.sha256(f"{RECIPE}\0{toolchains.JAVA_OPTIONS}\0{toolchains.versions('java')}\0".encode())
    for path in toolchains.built_files(adapter, environments.env_dir(layout, adapter)):
        digest.update(str(path.absolute()).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def ensure(layout: Layout, adapter: Adapter) -> tuple[WarmStart, bool]:
    """The adapter's archive, trained first when it is missing or stale; and whether it was built."""
    home = directory(layout, adapter)
    archive = home / "adapter.jsa"
    key = _key(layout, adapter)
    try:
        state = json.loads((home / "state.json").read_text())
    except (OSError, ValueError):
        state = {}
    if state.get("key") == key and (state.get("refused") or archive.is_file()):
        return WarmStart(None if state["refused"] else archive, state["refused"]), False
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    refused = _train(layout, adapter, home, archive)
    merged = home / CLASS_LIST
    classes = len(merged.read_text().splitlines()) if merged.is_file() and refused is None else 0
    (home / "state.json").write_text(json.dumps({"key": key, "refused": refused, "classes": classes}, indent=2) + "\n")
    return WarmStart(None if refused else archive, refused), True


def _train(layout: Layout, adapter: Adapter, home: Path, archive: Path) -> str | None:
    """Run a training cell per transport, each listing the classes it loaded, and dump the archive of
    them all; why there is no archive, or None."""
    lists: list[Path] = []
    for transport in adapter.transports:
        selection = cells.Selection(cases=("ok",), transports=(transport,), protocols=(catalog.LEGACY_PROTOCOL,))
        chosen = cells.build([adapter], selection)
        if chosen:
            files = CellFiles(home / f"training-{transport}")
            why = _train_cell(layout, chosen[0], files)
            if why is not None:
                return why
            lists.append(files.directory / CLASS_LIST)
    if not lists:
        return "no cell of the control case to train on"
    merged = home / CLASS_LIST
    merged.write_text("".join(_merged(lists)))
    said = (home / "dump.stdout", home / "dump.stderr")
    finished = process.run_bounded(
        toolchains.archive_dump_command(adapter, environments.env_dir(layout, adapter), merged, archive),
        cwd=adapter.directory,
        env=environments.process_env(layout, adapter),
        timeout_s=TRAINING_TIMEOUT_S,
        stdout=said[0],
        stderr=said[1],
        marker=str(archive),
    )
    if finished.timed_out or finished.exit_code != 0 or not archive.is_file():
        return f"the JVM wrote no archive (exit {finished.exit_code}; see {said[0]})"
    return why_unmapped(layout, adapter, archive)


def _train_cell(layout: Layout, cell: cells.Cell, files: CellFiles) -> str | None:
    """Run one training cell, its JVM listing the classes it loads; why it failed, or None."""
    files.directory.mkdir()
    env_dir = environments.env_dir(layout, cell.adapter)
    class_list = files.directory / CLASS_LIST
    try:
        with _server(layout, cell, files) as url:
            files.cell.write_text(
                json.dumps(cell.to_file(layout.server, files.directory, url, python=sys.executable), indent=2)
            )
            start = toolchains.run_command(
                cell.adapter, env_dir, jvm_options=(f"-XX:DumpLoadedClassList={class_list}",)
            )
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
    if not class_list.is_file():
        return f"the {cell.transport} training cell's JVM listed no classes (see {files.stdout})"
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


def _merged(lists: list[Path]) -> list[str]:
    """The lines of the class lists, each once, in first-seen order, without the JVM's comments."""
    lines: dict[str, None] = {}
    for path in lists:
        for line in path.read_text().splitlines(keepends=True):
            if not line.startswith("#"):
                lines.setdefault(line if line.endswith("\n") else line + "\n")
    return list(lines)


def why_unmapped(layout: Layout, adapter: Adapter, archive: Path) -> str | None:
    """Why a JVM started as a cell's would not map the archive, or None when it does. Started with
    ``-Xshare:on`` and no arguments: the JVM stops at once, exit 1, when it cannot use the archive;
    else the adapter's ``main`` runs and exits 2 with its usage line (a bad cell, in the adapter
    contract)."""
    env_dir = environments.env_dir(layout, adapter)
    said = (archive.parent / "check.stdout", archive.parent / "check.stderr")
    finished = process.run_bounded(
        toolchains.run_command(adapter, env_dir, archive=archive, jvm_options=("-Xshare:on",)),
        cwd=adapter.directory,
        env=environments.process_env(layout, adapter),
        timeout_s=TRAINING_TIMEOUT_S,
        stdout=said[0],
        stderr=said[1],
        marker=str(archive),
    )
    if finished.timed_out or finished.exit_code != 2:
        words = " ".join(" ".join(path.read_text(errors="replace").split()) for path in said).strip()
        return f"a JVM started as a cell's does not map the archive (exit {finished.exit_code}): {words[-300:]}"
    return None
