"""Startup snapshots: the warm start of a node adapter, whose cells each stay one fresh process.

A Node process cannot fork, so a node adapter's cells cannot be children of a warm worker as a
Python adapter's are (:mod:`harness.system.workers`). What they can do is start from a V8 startup
snapshot of the heap left by importing the adapter. At prepare, the adapter's entry and everything
it imports are bundled into one CommonJS script (``harness/prepare/snapshot/bundle.mjs``, esbuild pinned in
``harness/prepare/snapshot/package.json``; resolution as Node's own), which the adapter's Node release then
loads once with ``node --snapshot-blob snapshot.blob --build-snapshot bundle.cjs``. The drivers
defer the cell itself to the snapshot's main function (``observe.mjs`` ``startMain``), so building
runs nothing of a cell. Each cell is then ``node --snapshot-blob snapshot.blob ENTRY CELL OBS``:
its own process, process group, files and event loop, as with one process per cell, without
loading its modules again.

A snapshot is refused, and the adapter's cells run as plain processes, when its manifest says
``snapshot_safe = false``, bundling fails (a top-level await: CommonJS has none), a bundled module
other than the entry reads ``import.meta`` (empty in a bundle), or Node cannot build the snapshot
(not every built-in module can be in one); the reason is kept and shown in the run's metadata.
A snapshot (or a refusal) is current while every bundled file, the Node release and the bundler
are what they were: any edit of the adapter, its support modules or its ``node_modules`` makes
the next prepare build it again.

Files, in the adapter's environment (``node_modules/.mcpcm-snapshot/``): ``bundle.cjs``,
``snapshot.blob``, ``state.json`` (the key, every input's hash, the refusal, the built-ins Node warns
it has not verified in a snapshot) and each step's output (``bundle.out``/``.err``,
``build.out``/``.err``).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import signal
import threading
from pathlib import Path

from harness.errors import PrepareError
from harness.layout import Layout
from harness.matrix.manifest import Adapter
from harness.system import process
from harness.system.workers import WarmStart

from . import environments

TOOL_DIR = Path(__file__).parent / "snapshot"
BUNDLER = TOOL_DIR / "bundle.mjs"
RECIPE = "2"
"""Part of every snapshot's key: changing how snapshots are built rebuilds them."""
BUILD_TIMEOUT_S = 60.0
"""A build step's bound; the largest adapter's bundle and snapshot take about 2 s each."""


def directory(env: Path) -> Path:
    return env / ".mcpcm-snapshot"


def _tool_fingerprint() -> str:
    return hashlib.sha256((TOOL_DIR / "package-lock.json").read_bytes()).hexdigest()


_tool_lock = threading.Lock()


def install_tool(log: Path) -> None:
    """``npm ci`` the bundler unless its lockfile is unchanged since the last one."""
    stamp = TOOL_DIR / "node_modules" / environments.STAMP
    with _tool_lock:  # adapters are prepared concurrently
        if stamp.is_file() and stamp.read_text() == _tool_fingerprint():
            return
        environments.npm_ci("the snapshot bundler (harness/snapshot)", TOOL_DIR, log)
        stamp.write_text(_tool_fingerprint())


def _hash_file(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "<absent>"


def recipe() -> str:
    """How snapshots are built (the recipe, the bundler's lockfile): a part of a cell's inputs (run/inputs.py)."""
    return f"snapshot {RECIPE} {_tool_fingerprint()}"


def _key(node_version: str) -> str:
    return f"{RECIPE}\0{node_version}\0{_tool_fingerprint()}"


def current(env: Path, node_version: str, adapter: Adapter) -> WarmStart | None:
    """The adapter's snapshot (or refusal) when it is still current, else None: built by this
    recipe and Node release, from this adapter directory's files (paths resolved: an environment may
    be shared by two checkouts, and a snapshot built from a copy of the adapter holds the copy's
    code), none of them changed since."""
    state_file = directory(env) / "state.json"
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("key") != _key(node_version):
        return None
    inputs = state.get("inputs")
    if not isinstance(inputs, dict) or str((adapter.directory / "adapter.toml").resolve()) not in inputs:
        return None
    if any(_hash_file(Path(p)) != h for p, h in inputs.items()):
        return None
    refused = state.get("refused")
    if refused is not None:
        return WarmStart(None, str(refused))
    blob = directory(env) / "snapshot.blob"
    return WarmStart(blob, None) if blob.is_file() else None


UNVERIFIED = re.compile(r'not yet fully verified whether built-in module "(?:node:)?([^"]+)"')
"""Node's warning for a built-in loaded while a snapshot is built that Node has not verified in one."""
THROWN = re.compile(r"^\w*(Error|Exception)\b.*:")
"""The line of a thrown error (``TypeError: ...``), Node's best statement of why."""
ADDRESS = re.compile(r"0x[0-9a-f]{6,}")
"""A heap address in V8's output: different in every build, so not part of a reason."""
FAILURE = re.compile(r"Unknown external reference|not serialized|Fatal|error", re.IGNORECASE)


def _first_failure(output: str) -> str:
    """The line of ``node --build-snapshot``'s output that says why it failed."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    lines = [line for line in lines if "Warning:" not in line and not line.startswith(("It may", "To request", "(Use"))]
    thrown = [line for line in lines if THROWN.match(line)]
    failures = [line for line in lines if FAILURE.search(line)]
    return ADDRESS.sub("0x…", (thrown or failures or lines or ["no output"])[0])[:300]


def _exit(code: int) -> str:
    """``exited 1``, or ``was killed by SIGTRAP`` (V8 aborts a snapshot it cannot write with a trap)."""
    if code >= 0:
        return f"exited {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"


def _bounded(
    command: list[str], target: Path, name: str, cwd: Path, env: dict[str, str]
) -> tuple[int | None, str, str]:
    """Run one build step in its own process group for at most :data:`BUILD_TIMEOUT_S` (a module
    that opens a handle at import keeps ``--build-snapshot`` alive); its exit code (None: timed
    out), stdout and stderr. Everything it started is killed afterwards."""
    out, err = target / f"{name}.out", target / f"{name}.err"
    finished = process.run_bounded(
        command, cwd=cwd, env=env, timeout_s=BUILD_TIMEOUT_S, stdout=out, stderr=err, marker=str(target)
    )
    return finished.exit_code, out.read_text(errors="replace"), err.read_text(errors="replace")


def build(adapter: Adapter, env: Path, node: Path, node_version: str, process_env: dict[str, str]) -> WarmStart:
    """Bundle the adapter and build its snapshot (or record why not); the bundler must be installed."""
    target = directory(env)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    bundle = target / "bundle.cjs"
    inputs: list[str] = [str(adapter.directory / "adapter.toml")]
    unverified: list[str] = []
    refused: str | None
    if not adapter.snapshot_safe:
        refused = "snapshot_safe = false in adapter.toml"
    else:
        bundler = [str(node), str(BUNDLER), str(adapter.entry_path), str(bundle)]
        code, stdout, _ = _bounded(bundler, target, "bundle", adapter.directory, process_env)
        try:
            report = json.loads(stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise PrepareError(
                f"{adapter.name}: the snapshot bundler exited {code} without a report; see {target / 'bundle.err'}"
            ) from None
        refused = report.get("refused")
        inputs += [p for p in report.get("inputs", []) if Path(p).is_file()]
        if refused is None:
            refused = _build_blob(adapter, node, bundle, target, process_env, unverified)
    state = {
        "key": _key(node_version),
        "inputs": {str(Path(p).resolve()): _hash_file(Path(p)) for p in inputs},
        "refused": refused,
        "unverified_builtins": unverified,
    }
    (target / "state.json").write_text(json.dumps(state, indent=1))
    return WarmStart(None, refused) if refused else WarmStart(target / "snapshot.blob", None)


def _build_blob(
    adapter: Adapter, node: Path, bundle: Path, target: Path, process_env: dict[str, str], unverified: list[str]
) -> str | None:
    """Run ``--build-snapshot``; None when the blob was written, else why not. The built-ins Node
    has not verified in a snapshot (it warns about each) go into ``unverified``."""
    blob = target / "snapshot.blob"
    command = [str(node), "--snapshot-blob", str(blob), "--build-snapshot", str(bundle)]
    code, stdout, stderr = _bounded(command, target, "build", adapter.directory, process_env)
    output = stdout + stderr
    unverified.extend(sorted(set(UNVERIFIED.findall(output))))
    if code is None:
        blob.unlink(missing_ok=True)
        return f"node --build-snapshot did not finish in {BUILD_TIMEOUT_S:.0f} s (a handle opened at import?)"
    if code != 0 or not blob.is_file():
        blob.unlink(missing_ok=True)
        return f"node --build-snapshot {_exit(code)}: {_first_failure(output)}"
    return None


def command(node: Path, blob: Path, entry: Path) -> list[str]:
    """The start of a cell's command line from the snapshot ``blob`` (the cell and observation files
    follow): ``entry`` is only ``process.argv[1]``, as when the entry itself is run."""
    return [str(node), "--snapshot-blob", str(blob), str(entry)]


def ensure(layout: Layout, adapter: Adapter) -> tuple[WarmStart, bool]:
    """The node adapter's current snapshot (its environment prepared), built unless it is current;
    and whether it was built."""
    env = environments.env_dir(layout, adapter)
    node_version = environments.adapter_runtime_version(adapter)
    found = current(env, node_version, adapter)
    if found is not None:
        return found, False
    install_tool(layout.envs / "snapshot-tool.log")
    node = environments.node_for(layout, adapter)
    return build(adapter, env, node, node_version, environments.process_env(layout, adapter)), True
