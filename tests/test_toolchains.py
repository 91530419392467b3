"""Compiled adapters (Go, Rust, Java): built once by prepare, cached by a fingerprint of the adapter
directory and the toolchain, run as a process per cell; a missing toolchain is that column's harness
error naming what to install, and the rest of the matrix runs.

The plumbing is tested on a Go test double (``tests/fixtures/clients/go-crash``, no dependencies, a
build of a second); the real SDK columns are covered by the smoke test (``test_adapters_smoke``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness import cli
from harness.errors import PrepareError
from harness.matrix import manifest
from harness.prepare import toolchains

from .conftest import FIXTURE_CLIENTS, REPO

LEGACY = ("--protocol", "2025-11-25")
needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="the Go toolchain is not installed")


def _adapter(runtime: str, tmp_path: Path) -> manifest.Adapter:
    directory = tmp_path / f"x-{runtime}"
    directory.mkdir()
    entry = {"go": "main.go", "rust": "main.rs", "java": "Main.java"}[runtime]
    (directory / entry).write_text("")
    (directory / "adapter.toml").write_text(
        f'name = "x-{runtime}"\ntitle = "x"\nruntime = "{runtime}"\npackage = ""\nentry = "{entry}"\n'
        'transports = ["stdio"]\n[variants.default]\n'
    )
    return manifest.load(directory / "adapter.toml")


@pytest.mark.parametrize("runtime", toolchains.COMPILED)
def test_each_compiled_runtime_builds_into_its_environment_and_runs_what_it_built(runtime, tmp_path):
    adapter = _adapter(runtime, tmp_path)
    env = tmp_path / "env"
    command, _ = toolchains.build_command(adapter, env)
    built = toolchains.artifact(adapter, env)
    assert built.is_relative_to(env)
    assert any(str(env) in part for part in command), "the build writes into the adapter's environment"
    start = toolchains.run_command(adapter, env)
    assert str(built) in start and (start[0] == "java") == (runtime == "java")


def test_a_missing_toolchain_names_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    for runtime in toolchains.COMPILED:
        with pytest.raises(PrepareError) as raised:
            toolchains.require(_adapter(runtime, tmp_path))
        message = str(raised.value)
        assert f"x-{runtime}:" in message and "not on PATH; install" in message
        assert {"go": "Go >= ", "rust": "Rust >= ", "java": "JDK >= 17 and Maven"}[runtime] in message


def test_build_products_are_not_sources(tmp_path):
    adapter = _adapter("rust", tmp_path)
    for product in ("target/release/adapter", "build/adapter.jar", "node_modules/x.js"):
        (adapter.directory / product).parent.mkdir(parents=True, exist_ok=True)
        (adapter.directory / product).write_text("built")
    names = {path.relative_to(adapter.directory).as_posix() for path in toolchains.sources(adapter.directory)}
    assert names == {"adapter.toml", "main.rs"}


@needs_go
@pytest.mark.slow
def test_a_go_adapter_is_built_once_and_rebuilt_when_a_source_changes(checkout, tmp_path):
    scratch = checkout("raw-jsonrpc")
    copy = tmp_path / "go-crash"
    shutil.copytree(FIXTURE_CLIENTS / "go-crash", copy)
    (scratch.root / "clients" / "go-crash").symlink_to(copy)
    shutil.rmtree(REPO / ".envs" / "go-crash", ignore_errors=True)
    first = scratch.harness("prepare", "--adapter", "go-crash", timeout=600)
    assert "prepare go-crash: built" in first.stderr, first.stderr
    assert "prepare go-crash: cached" in scratch.harness("prepare", "--adapter", "go-crash").stderr
    main = copy / "main.go"
    main.write_text(main.read_text().replace("no observation", "no observation at all"))
    assert "prepare go-crash: built" in scratch.harness("prepare", "--adapter", "go-crash").stderr
    (copy / "target").mkdir()  # a build product in the directory changes nothing
    (copy / "target" / "x").write_text("x")
    assert "prepare go-crash: cached" in scratch.harness("prepare", "--adapter", "go-crash").stderr

    scratch.harness("run", "--run-id", "r", "--case", "ok", "--transport", "stdio", *LEGACY, check=False)
    rows = scratch.rows("r")
    crashed = rows[("go-crash", "ok", "advertised")]
    assert crashed["outcome"] == "crash", crashed["error_message"]
    stderr = next((scratch.root / "results" / "r" / "cells").glob("go-crash--*advertised*")) / "stderr.txt"
    assert "go test double: 2 arguments, no observation at all" in stderr.read_text()
    assert rows[("raw-jsonrpc", "ok", "advertised")]["outcome"] == "pass"
    meta = scratch.meta("r")
    assert meta["toolchains"]["go"].startswith("1.")
    assert meta["adapters"]["go-crash"]["runtime_version"] == "go" + meta["toolchains"]["go"]
    assert meta["adapters"]["go-crash"]["isolation"] == "process (a native go binary starts as a process of its own)"


@needs_go
def test_without_the_toolchain_the_column_is_a_harness_error_and_the_rest_runs(checkout):
    scratch = checkout("raw-jsonrpc", "go-crash")
    go = Path(shutil.which("go") or "").resolve().parent
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p).resolve() != go)
    env = {**os.environ, "PATH": path}
    done = scratch.harness(
        "run", "--run-id", "r", "--case", "ok", "--transport", "stdio", *LEGACY, check=False, env=env
    )
    assert done.returncode == cli.EXIT_BROKEN_COLUMNS, done.stderr
    assert "go-crash could not run" in done.stderr and "install Go >= 1.23" in done.stderr
    rows = scratch.rows("r")
    assert rows[("raw-jsonrpc", "ok", "advertised")]["outcome"] == "pass"
    failed = rows[("go-crash", "ok", "advertised")]
    assert failed["outcome"] == "harness-error" and "`go` not on PATH" in failed["error_message"]
    assert scratch.processes_left() == []
