"""Startup snapshots (harness/prepare/snapshots.py): a node adapter's cell starts from the heap its imports
left, as a fresh process with its own argv, environment and clock; a snapshot is rebuilt when a
bundled file changes and refused, with the reason, where it would not be faithful."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from harness.layout import Layout
from harness.matrix import manifest
from harness.prepare import node_releases, snapshots
from harness.system.workers import WarmStart

from .conftest import REPO

LAYOUT = Layout(REPO)
RELEASE = "24.22.3"

MANIFEST = """\
name = "snap"
title = "Snapshot test adapter"
runtime = "node"
node = "{release}"
package = ""
entry = "adapter.mjs"
transports = ["stdio"]
{extra}
[variants.default]
description = "the only one"
"""

ENTRY = """\
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';

import { startMain } from '../_support/observe.mjs';
import { LOADED_BY, VERSION } from './lib.mjs';

startMain(() => {
  const [, entry, cell, observation] = process.argv;
  fs.writeFileSync(observation, JSON.stringify({
    loadedBy: LOADED_BY, pid: process.pid, entry, cell, version: VERSION,
    env: process.env.SNAPSHOT_TEST_VALUE ?? null, sinceStartMs: performance.now(),
  }));
});
"""


def _adapter(root: Path, *, lib: str = "export const VERSION = 1;\n", extra: str = "", entry: str = ENTRY):
    clients = root / "clients"
    clients.mkdir(parents=True, exist_ok=True)
    if not (clients / "_support").exists():
        (clients / "_support").symlink_to(REPO / "clients" / "_support")
    directory = clients / "snap"
    (directory / "node_modules").mkdir(parents=True, exist_ok=True)
    (directory / "adapter.toml").write_text(MANIFEST.format(release=RELEASE, extra=extra))
    (directory / "adapter.mjs").write_text(textwrap.dedent(entry))
    (directory / "lib.mjs").write_text("export const LOADED_BY = process.pid;\n" + lib)
    return manifest.load(directory / "adapter.toml")


def _ensure(adapter: manifest.Adapter) -> tuple[WarmStart, bool]:
    return snapshots.ensure(LAYOUT, adapter)


def _start(adapter: manifest.Adapter, snapshot: WarmStart, tmp_path: Path) -> dict:
    assert snapshot.file is not None, snapshot.refused
    node = node_releases.install(LAYOUT, RELEASE)
    observation = tmp_path / "observation.json"
    observation.unlink(missing_ok=True)
    command = [*snapshots.command(node, snapshot.file, adapter.entry_path), "the-cell.json", str(observation)]
    env = dict(os.environ, SNAPSHOT_TEST_VALUE="at run time")
    subprocess.run(command, cwd=adapter.directory, env=env, check=True, timeout=60, capture_output=True)
    return json.loads(observation.read_text())


def test_a_cell_starts_from_the_imports_of_the_build_with_its_own_argv_env_and_clock(tmp_path):
    adapter = _adapter(tmp_path)
    snapshot, built = _ensure(adapter)
    assert built and snapshot.refused is None
    seen = _start(adapter, snapshot, tmp_path)
    assert seen["loadedBy"] != seen["pid"]  # lib.mjs was evaluated by the build, not by this process
    assert (seen["entry"], seen["cell"]) == (str(adapter.entry_path), "the-cell.json")
    assert seen["env"] == "at run time"
    assert seen["sinceStartMs"] < 5000  # the clock starts with the process, not with the build
    again = _start(adapter, snapshot, tmp_path)
    assert again["pid"] != seen["pid"] and again["loadedBy"] == seen["loadedBy"]


def test_a_snapshot_is_cached_and_rebuilt_when_a_bundled_file_changes(tmp_path):
    adapter = _adapter(tmp_path)
    first, built = _ensure(adapter)
    assert built
    cached, built = _ensure(adapter)
    assert not built and cached == first
    (adapter.directory / "lib.mjs").write_text("export const LOADED_BY = process.pid;\nexport const VERSION = 2;\n")
    rebuilt, built = _ensure(adapter)
    assert built
    assert _start(adapter, rebuilt, tmp_path)["version"] == 2


def test_a_snapshot_built_from_a_copy_of_the_adapter_is_not_the_original_s(tmp_path):
    """Two checkouts may share one environment: a snapshot holds the code of the directory it was
    built from, so the other directory's adapter rebuilds it; a link to the same files does not."""
    original = _adapter(tmp_path / "a")
    _, built = _ensure(original)
    assert built
    copy_root = tmp_path / "b" / "clients" / "snap"
    copy_root.mkdir(parents=True)
    (tmp_path / "b" / "clients" / "_support").symlink_to(REPO / "clients" / "_support")
    for name in ("adapter.toml", "adapter.mjs"):
        (copy_root / name).write_text((original.directory / name).read_text())
    (copy_root / "lib.mjs").write_text("export const LOADED_BY = process.pid;\nexport const VERSION = 2;\n")
    (copy_root / "node_modules").symlink_to(original.directory / "node_modules")  # the shared environment
    copy = manifest.load(copy_root / "adapter.toml")
    rebuilt, built = _ensure(copy)
    assert built and _start(copy, rebuilt, tmp_path)["version"] == 2
    _, built = _ensure(original)
    assert built, "the copy's snapshot holds the copy's code"
    linked_root = tmp_path / "c" / "clients"
    linked_root.mkdir(parents=True)
    (linked_root / "snap").symlink_to(original.directory)
    _, built = _ensure(manifest.load(linked_root / "snap" / "adapter.toml"))
    assert not built, "a linked directory is the same files"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"extra": "snapshot_safe = false\n"}, "snapshot_safe = false in adapter.toml"),
        ({"lib": "export const VERSION = await Promise.resolve(1);\n"}, "Top-level await"),
        ({"lib": "export const VERSION = 1;\nexport const HERE = import.meta.url;\n"}, "reads import.meta"),
        ({"lib": "export const VERSION = 1;\nthrow new Error('broken at import');\n"}, "Error: broken at import"),
    ],
    ids=["manifest", "top-level-await", "import-meta", "throws-at-import"],
)
def test_a_snapshot_that_would_not_be_faithful_is_refused_with_the_reason(tmp_path, change, reason):
    adapter = _adapter(tmp_path, **change)
    snapshot, built = _ensure(adapter)
    assert built and snapshot.file is None
    assert snapshot.refused is not None and reason in snapshot.refused
    again, built = _ensure(adapter)  # a refusal is cached like a snapshot
    assert not built and again.refused == snapshot.refused


def test_a_build_that_never_ends_is_bounded_and_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshots, "BUILD_TIMEOUT_S", 3.0)
    adapter = _adapter(
        tmp_path,
        lib="import http from 'node:http';\nexport const VERSION = 1;\nhttp.createServer().listen(0, '127.0.0.1');\n",
    )
    snapshot, built = _ensure(adapter)
    assert built and snapshot.refused is not None and "did not finish in 3 s" in snapshot.refused
    needle = str(snapshots.directory(adapter.directory / "node_modules")).encode()
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and needle in _cmdline(p)]
    assert left == []


def _cmdline(entry: Path) -> bytes:
    try:
        return (entry / "cmdline").read_bytes()
    except OSError:
        return b""


def test_a_node_column_starts_from_its_snapshot_and_sees_what_a_process_sees(checkout):
    scratch = checkout("ts-sdk")
    selection = (
        "--adapter",
        "ts-sdk/call-only",
        "--case",
        "drop-required",
        "--case",
        "diverge",
        "--transport",
        "stdio",
    )
    isolations = {}
    for isolation in ("worker", "process"):
        scratch.harness("run", "--run-id", isolation, "--isolation", isolation, *selection, timeout=600)
        meta = json.loads((scratch.root / "results" / isolation / "meta.json").read_text())
        isolations[isolation] = meta["adapters"]["ts-sdk"]["isolation"]
    assert isolations == {"worker": "snapshot", "process": "process (--isolation process)"}
    diff = scratch.cli("diff", "--require-same-cells", "worker", "process")
    assert "4 cells in both runs; 0 differ" in diff.stdout + diff.stderr
    assert scratch.processes_left() == []
