"""A run killed halfway and resumed records every cell exactly once."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from .conftest import REPO


def test_kill_and_resume_records_every_cell_once(checkout):
    scratch = checkout("raw-jsonrpc")
    command = [sys.executable, "-m", "harness", "--root", str(scratch.root), "run", "--run-id", "r",
               "--family", "schema", "--transport", "stdio", "--jobs", "1"]
    run = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    records = scratch.root / "results" / "r" / "cells.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if records.exists() and len(records.read_text().splitlines()) >= 8:
            break
        time.sleep(0.05)
    run.send_signal(signal.SIGTERM)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 130, stderr
    assert "--resume r" in stderr
    first = [line for line in records.read_text().splitlines() if line.strip()]
    assert 8 <= len(first) < 36, "the run was stopped halfway"
    assert scratch.processes_left() == []

    resumed = scratch.harness("run", "--resume", "r", "--jobs", "2")  # keeps the run's own selection
    assert f"{len(first)} cells recorded, {36 - len(first)} to run" in resumed.stderr
    keys = [record["key"] for record in scratch.records("r")]
    assert len(keys) == 36 and len(set(keys)) == 36
    meta = (scratch.root / "results" / "r" / "meta.json").read_text()
    assert '"resumed"' in meta and '"finished": "' in meta
