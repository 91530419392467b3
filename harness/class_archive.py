"""Class-data archives: the warm start of a Java adapter, whose cells each stay one fresh JVM.

A JVM cannot fork after start-up and has no heap snapshot in the JDK the project builds with
(OpenJDK 17), so a Java adapter's cells are fresh processes. Most of such a process's CPU time is
loading, verifying and linking the classes of the client and its dependencies (Reactor, Jackson)
again. Application class-data sharing (AppCDS, JEP 350) keeps the parsed classes in an archive that
each JVM maps instead: at prepare, one training cell (the control case ``ok`` on stdio, against the
reference server, like any cell; nothing of it is recorded) runs with
``-XX:ArchiveClassesAtExit=adapter.jsa``, and every cell then starts with
``-XX:SharedArchiveFile=adapter.jsa``. The archive holds class metadata only, no heap and no state
of the training run: a cell runs the same code, only its classes load faster (measured in
docs/benchmarks.md, and held to one process per cell without an archive by the isolation parity).

An archive is refused, and the cells start without one, when the training run fails or overruns
its bound, or leaves no archive, or a JVM started as a cell's would not map it; the reason is kept
and shown in the run's metadata. The JVM checks an archive against its class path and its own
build at every start and ignores one that does not match (``-Xshare:auto``), so a stale archive
costs speed, never correctness; it is built again when the jar, a dependency, their paths (a
checkout that shares its ``.envs`` runs them from its own), the JVM or the options change.

Files, in the adapter's environment (``.envs/<name>/class-archive/``): ``adapter.jsa``,
``state.json`` (the key, the refusal), the training cell's directory and what the check that a cell's
JVM maps the archive printed (``check.stdout``, ``check.stderr``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

from . import catalog, cells, environments, process, toolchains
from .layout import CellFiles, Layout
from .manifest import Adapter
from .workers import WarmStart

RECIPE = "1"
"""Part of every archive's key: changing how archives are built rebuilds them."""
TRAINING_TIMEOUT_S = 120.0
"""The training cell's bound (a control case: a few seconds)."""


def directory(layout: Layout, adapter: Adapter) -> Path:
    return environments.env_dir(layout, adapter) / "class-archive"


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
    (home / "state.json").write_text(json.dumps({"key": key, "refused": refused}, indent=2) + "\n")
    return WarmStart(None if refused else archive, refused), True


def _train(layout: Layout, adapter: Adapter, home: Path, archive: Path) -> str | None:
    """Run the training cell with the archive written at its exit; why there is no archive, or None."""
    selection = cells.Selection(cases=("ok",), transports=("stdio",), protocols=(catalog.LEGACY_PROTOCOL,))
    chosen = cells.build([adapter], selection)
    if not chosen:
        return "no stdio cell of the control case to train on"
    cell = chosen[0]
    files = CellFiles(home / "training")
    files.directory.mkdir()
    files.cell.write_text(json.dumps(cell.to_file(layout.server, files.directory, python=sys.executable), indent=2))
    start = toolchains.run_command(adapter, environments.env_dir(layout, adapter), archive_at_exit=archive)
    finished = process.run_bounded(
        [*start, str(files.cell), str(files.raw_observation)],
        cwd=adapter.directory,
        env=environments.process_env(layout, adapter),
        timeout_s=TRAINING_TIMEOUT_S,
        stdout=files.stdout,
        stderr=files.stderr,
        marker=str(files.directory),
    )
    if finished.timed_out:
        return f"the training cell did not finish in {TRAINING_TIMEOUT_S:.0f} s"
    if finished.exit_code != 0:
        return f"the training cell exited {finished.exit_code} (see {files.stderr})"
    if not archive.is_file():
        return f"the JVM wrote no archive (see {files.stdout})"
    return why_unmapped(layout, adapter, archive)


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
