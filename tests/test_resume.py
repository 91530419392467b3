"""A run killed halfway (SIGTERM, or SIGKILL with a torn and a repeated record) and resumed records every cell once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from harness.matrix import catalog
from harness.system.process import kill_by_marker

from .conftest import REPO


def _wait_for_records(path, count: int, timeout_s: float = 120) -> None:
    """Until ``path`` holds ``count`` records; a failure (not a silent return) after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        time.sleep(0.05)
    held = len(path.read_text().splitlines()) if path.exists() else 0
    raise AssertionError(f"{path}: {held} of {count} records after {timeout_s:.0f} s")


@pytest.mark.slow
def test_kill_and_resume_records_every_cell_once(checkout):
    """The resumed run keeps the run's own selection, its protocol revision included."""
    scratch = checkout("raw-jsonrpc")
    selection = ["--family", "schema", "--transport", "stdio", "--protocol", "2026-07-28"]
    total = int(scratch.cli("list", *selection).stdout.splitlines()[-1].split()[0])
    assert total == 2 * sum(case.family == "schema" for case in catalog.CASES)
    command = scratch.argv("run", "--run-id", "r", *selection, "--jobs", "1")
    run = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    records = scratch.root / "results" / "r" / "cells.jsonl"
    _wait_for_records(records, 8)
    run.send_signal(signal.SIGTERM)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 130, stderr
    assert "--resume r" in stderr
    first = [line for line in records.read_text().splitlines() if line.strip()]
    assert 8 <= len(first) < total, "the run was stopped halfway"
    assert scratch.processes_left() == []

    resumed = scratch.harness("run", "--resume", "r", "--jobs", "2")  # keeps the run's own selection
    assert f"{len(first)} cells recorded, {total - len(first)} to run" in resumed.stderr
    keys = [record["key"] for record in scratch.records("r")]
    assert len(keys) == total and len(set(keys)) == total
    meta = (scratch.root / "results" / "r" / "meta.json").read_text()
    assert '"resumed"' in meta and '"finished": "' in meta


def _kill_orphans(scratch, timeout_s: float = 30) -> None:
    """Kill the adapters and servers a killed harness left (each in a session of its own) until none shows twice.

    An adapter the harness was starting may show no command line for a moment, while it execs.
    """
    deadline, quiet = time.monotonic() + timeout_s, 0
    while quiet < 2 and time.monotonic() < deadline:
        kill_by_marker(str(scratch.root))
        time.sleep(0.2)
        quiet = 0 if scratch.processes_left() else quiet + 1


KILLED_CASES = (
    "ok",
    "no-structured",
    "type-swap",
    "drop-required",
    "extra-field",
    "wrong-container",
    "null-structured",
    "iserror-plain",
)  # x 2 schema modes: 16 cells


def test_sigkill_then_resume_drops_the_torn_line_and_the_repeated_record(checkout):
    """A killed terminal: no handler runs, cells in flight are lost, the last append may be torn."""
    scratch = checkout("raw-jsonrpc")
    cases = [arg for case in KILLED_CASES for arg in ("--case", case)]
    command = scratch.argv(
        "run", "--run-id", "k", *cases, *["--transport", "stdio", "--protocol", "2025-11-25"], "--jobs", "2"
    )
    run = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    records = scratch.root / "results" / "k" / "cells.jsonl"
    _wait_for_records(records, 5)
    os.killpg(run.pid, signal.SIGKILL)  # the harness and its group; each adapter has a group of its own
    run.wait(timeout=30)
    _kill_orphans(scratch)
    assert scratch.processes_left() == []

    lines = records.read_text().splitlines()
    assert 5 <= len(lines) < 16, "the run was killed halfway"
    kept = {json.loads(line)["key"]: json.loads(line) for line in lines[:-1]}
    first = json.loads(lines[0])
    torn = json.loads(lines[-1])["key"]
    repeated = json.dumps({**first, "finished_at": "a later, repeated record"})
    records.write_text("\n".join([*lines[:-1], repeated, lines[-1][: len(lines[-1]) // 2]]))  # no final newline

    scratch.harness("run", "--resume", "k", "--jobs", "2")
    after = scratch.records("k")
    keys = [record["key"] for record in after]
    assert len(keys) == 16 and len(set(keys)) == 16, "every cell recorded exactly once"
    by_key = {record["key"]: record for record in after}
    assert all(by_key[key] == record for key, record in kept.items()), "recorded cells kept as first recorded"
    assert by_key[first["key"]]["finished_at"] != "a later, repeated record"
    assert torn not in kept and torn in by_key, "the cell of the torn line ran again"
    meta = json.loads((scratch.root / "results" / "k" / "meta.json").read_text())
    assert meta["resumed"] and meta["finished"]
    assert scratch.processes_left() == []
