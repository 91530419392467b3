"""HTTP cells' reference server forked from a warm worker (harness/run/backends/warm_server.py): the
server a fresh process would be, stopped and reaped the same way, and a fresh process again where
the worker is not there."""

from __future__ import annotations

import os
import sys

import pytest

from harness.layout import CellFiles, Layout
from harness.matrix import cells, manifest
from harness.run.backends import warm_server
from harness.run.backends.local import LocalBackend
from harness.system import workers
from harness.system.process import ServiceError

from .conftest import REPO, Checkout

CASES = ("ok", "type-swap", "latency", "text-10mib")
"""A pass, a result the client may reject, a late answer and a large one."""


def _shape(journal: list[dict]) -> list[tuple]:
    """A journal without what differs between any two runs (times, pids, ports, session ids)."""
    return [(e["event"], e.get("method"), e.get("kind"), e.get("reason"), e.get("detail")) for e in journal]


@pytest.fixture(scope="module")
def both_isolations(tmp_path_factory) -> tuple[Checkout, dict[str, dict]]:
    scratch = Checkout(tmp_path_factory.mktemp("warm-server") / "checkout", ["raw-jsonrpc"])
    selection = ["--protocol", "2025-11-25", "--transport", "http-json", "--transport", "http-sse"]
    for case in CASES:
        selection += ["--case", case]
    runs = {}
    for isolation in ("worker", "process"):
        scratch.harness("run", "--run-id", isolation, "--isolation", isolation, *selection)
        runs[isolation] = {(r["case"], r["schema"], r["transport"]): r for r in scratch.records(isolation)}
    return scratch, runs


def test_a_forked_server_serves_as_a_fresh_one_does(both_isolations):
    scratch, runs = both_isolations
    assert scratch.meta("worker")["reference_server"] == "worker"
    assert scratch.meta("process")["reference_server"] == "process (--isolation process)"
    assert set(runs["worker"]) == set(runs["process"])
    assert {case for case, _, _ in runs["worker"]} == set(CASES)
    for key, warm in runs["worker"].items():
        fresh = runs["process"][key]
        assert _shape(warm["journal"]) == _shape(fresh["journal"]), key
        start = warm["journal"][0]
        assert start["event"] == "start" and start["transport"] == key[2], key
        assert warm["journal"][-1] == {**warm["journal"][-1], "event": "exit", "reason": "signal", "detail": "SIGTERM"}
    cells_dir = scratch.root / "results" / "worker" / "cells"
    assert not list(cells_dir.glob(f"*/{warm_server.STDOUT_FIFO}")), "the FIFO goes with its server"
    assert scratch.processes_left() == [], "the servers and their worker are gone"


def _backend_with_broken_worker(monkeypatch: pytest.MonkeyPatch) -> LocalBackend:
    monkeypatch.setattr(warm_server, "worker_command", lambda layout: [sys.executable, "-c", "raise SystemExit(1)"])
    return LocalBackend(Layout(REPO))


def _http_cell(case: str = "ok") -> cells.Cell:
    adapters = [a for a in manifest.discover(REPO / "clients") if a.name == "raw-jsonrpc"]
    selection = cells.Selection(cases=(case,), transports=("http-json",), protocols=("2025-11-25",))
    (cell,) = [c for c in cells.build(adapters, selection) if c.schema == "advertised"]
    return cell


def test_without_its_worker_the_server_starts_as_a_process(tmp_path, monkeypatch):
    backend = _backend_with_broken_worker(monkeypatch)
    cell = _http_cell()
    files = CellFiles(tmp_path / "cell")
    files.directory.mkdir()
    try:
        backend.prepare(cell.adapter)
        finished = backend.run(cell, files)
    finally:
        backend.close()
    assert finished.exit_code == 0 and not finished.timed_out
    assert backend.server_start().startswith("process (worker refused: ")
    journal = files.journal.read_text()
    assert '"event": "start"' in journal and '"reason": "signal"' in journal


def test_a_server_that_ends_without_its_ready_line_is_reported_at_once(tmp_path):
    layout = Layout(REPO)
    (tmp_path / "cell").mkdir()
    files = CellFiles(tmp_path / "cell")
    worker = workers.Worker(warm_server.worker_command(layout), cwd=REPO, env=dict(os.environ), log=tmp_path / "log")
    try:
        options = ["--case", "no-such-case", "--transport", "http-json"]
        # its exit ends the wait, not the ready timeout: the error has the exit code of a server that is gone
        with (
            pytest.raises(ServiceError, match=r"printed nothing .*\(exit code [0-9]+\)"),
            warm_server.serve(worker, options, files, layout),
        ):
            pass
        assert "unknown case 'no-such-case'" in files.server_stderr.read_text()
        assert not (files.directory / warm_server.STDOUT_FIFO).exists()
    finally:
        worker.close()
