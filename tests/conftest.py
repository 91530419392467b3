"""Shared test fixtures: a scratch checkout whose clients/ holds chosen adapters.

Real adapters are linked in from the repository (their cached environments in ``.envs`` and
``node_modules`` are shared, so a test run prepares each SDK once); test doubles come from
``tests/fixtures/clients``. The reference server is the real one.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURE_CLIENTS = Path(__file__).resolve().parent / "fixtures" / "clients"


class Checkout:
    """A scratch checkout in ``tmp_path`` for running ``python -m harness`` against."""

    def __init__(self, root: Path, adapters: list[str]) -> None:
        self.root = root
        self._frames: dict[str, tuple[tuple[int, int], Any]] = {}
        (root / "clients").mkdir(parents=True)
        (root / "clients" / "_support").symlink_to(REPO / "clients" / "_support")
        (root / "servers").symlink_to(REPO / "servers")
        (REPO / ".envs").mkdir(exist_ok=True)
        (root / ".envs").symlink_to(REPO / ".envs")
        for name in adapters:
            source = REPO / "clients" / name
            if not source.exists():
                source = FIXTURE_CLIENTS / name
            (root / "clients" / name).symlink_to(source)

    def argv(self, *args: str) -> list[str]:
        """The command line ``python -m harness --root <checkout> ARGS`` (for tests that start it themselves)."""
        return [sys.executable, "-m", "harness", "--root", str(self.root), *args]

    def harness(
        self, *args: str, timeout: float = 600, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``python -m harness --root <checkout> ARGS`` (``env``: its whole environment, default ours)."""
        done = subprocess.run(
            self.argv(*args),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"harness {' '.join(args)} exited {done.returncode}:\n{done.stderr[-4000:]}")
        return done

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``harness.cli.main(["--root", <checkout>, *ARGS])`` in this process, its output captured:
        for commands that answer without running a cell (``list``, a usage error, a report), which
        need no fresh interpreter importing pandas again. A command that runs cells goes through
        :meth:`harness` (signals, process groups and exit are a process's own)."""
        from harness import cli

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(["--root", str(self.root), *args])
            except SystemExit as exc:  # argparse's usage errors and --help
                code = exc.code if isinstance(exc.code, int) else 2
        done = subprocess.CompletedProcess(["harness", *args], code, out.getvalue(), err.getvalue())
        if check and code != 0:
            raise AssertionError(f"harness {' '.join(args)} exited {code}:\n{done.stderr[-4000:]}")
        return done

    def records(self, run_id: str) -> list[dict[str, Any]]:
        path = self.root / "results" / run_id / "cells.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]

    def meta(self, run_id: str) -> dict[str, Any]:
        """The run's ``meta.json``."""
        meta: dict[str, Any] = json.loads((self.root / "results" / run_id / "meta.json").read_text())
        return meta

    def rows(
        self, run_id: str, transport: str = "stdio", protocol: str = "2025-11-25"
    ) -> dict[tuple[str, str, str], dict[str, Any]]:
        """Classified rows of one transport and protocol revision keyed by (client, case, schema),
        from the rendered CSV (rendered once for each state of the run's records)."""
        import pandas as pd

        cells = self.root / "results" / run_id / "cells.jsonl"
        state = (cells.stat().st_mtime_ns, cells.stat().st_size)
        if run_id not in self._frames or self._frames[run_id][0] != state:
            self.cli("report", "--run", run_id)
            self._frames[run_id] = (
                state,
                pd.read_csv(self.root / "reports" / "data" / "cells.csv", keep_default_na=False),
            )
        frame = self._frames[run_id][1]
        return {
            (r["client"], r["case"], r["schema"]): r
            for r in frame.to_dict("records")
            if r["transport"] == transport and r["protocol"] == protocol
        }

    def processes_left(self) -> list[str]:
        """Command lines of live processes that mention this checkout."""
        needle = str(self.root).encode()
        left = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    cmdline = (entry / "cmdline").read_bytes()
                    state = (entry / "stat").read_text().split(") ")[-1][:1]
                except OSError:
                    continue
                if needle in cmdline and state != "Z":
                    left.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
        return left


@pytest.fixture
def checkout(tmp_path: Path):
    """Factory: ``checkout("raw-jsonrpc", "hang")`` makes a scratch checkout with those adapters."""

    def make(*adapters: str) -> Checkout:
        return Checkout(tmp_path / "checkout", list(adapters))

    return make


@pytest.fixture(scope="session")
def examples() -> dict[str, list[str]]:
    """The example servers (``servers/examples``), built (cached): name -> the command line that serves stdio."""
    done = subprocess.run(
        [sys.executable, str(REPO / "servers" / "examples" / "build.py")],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    return {name: command.split() for name, command in (line.split(": ", 1) for line in done.stdout.splitlines())}
